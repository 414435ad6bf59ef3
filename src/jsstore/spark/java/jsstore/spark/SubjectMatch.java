/*
 * The subject clauses of a scan, ANDed together (the JVM twin of the core's
 * SubjectPredicate): the subject must be one of `exact` (when an exact set is given), start
 * with every one of `prefixes`, and match at least one of `wildcards` (NATS filters) when any
 * is given.  Subjects are compared as their UTF-8 bytes.
 *
 * accepts(byte[], off, len) is the per-record hot path: it allocates nothing for a subject
 * already seen; each distinct subject's decision is kept in a small open-addressing table
 * keyed by its bytes, so the prefix and wildcard clauses run once per subject.
 *
 * Wildcard matching follows the project's subject_matches (csrc/subject.c) to the byte: "*"
 * takes exactly one non-empty token, ">" one or more trailing tokens none of them empty, any
 * other token compares as bytes ("*" or ">" inside a subject is an ordinary token); an empty
 * subject or an empty filter never matches.
 */
package jsstore.spark;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;

final class SubjectMatch {
    private static final VarHandle I32 =
        MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle I64 =
        MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final int ACCEPT = 1;
    private static final int REJECT = 2;

    private final BytesTable exact;          // null: no exact clause
    private final byte[][] prefixes;
    private final byte[][] wildcards;
    private final boolean matchAll;
    private final BytesTable decided;        // ACCEPT / REJECT per subject seen

    SubjectMatch(Collection<String> exact, List<String> prefixes, List<String> wildcards) {
        if (exact != null) {
            this.exact = new BytesTable(Math.max(16, exact.size() * 2));
            for (String subject : exact) {
                byte[] raw = subject.getBytes(StandardCharsets.UTF_8);
                if (raw.length > 0) {
                    this.exact.put(raw, 0, raw.length, ACCEPT);
                }
            }
        } else {
            this.exact = null;
        }
        this.prefixes = utf8All(prefixes);
        this.wildcards = utf8All(wildcards);
        this.matchAll = exact == null && this.prefixes.length == 0 && this.wildcards.length == 0;
        this.decided = new BytesTable(64);
    }

    /** No clause at all: every subject passes. */
    boolean matchAll() {
        return matchAll;
    }

    boolean accepts(String subject) {
        byte[] raw = subject.getBytes(StandardCharsets.UTF_8);
        return accepts(raw, 0, raw.length);
    }

    /** Whether the subject held in buf[off, off + len) passes every clause. */
    boolean accepts(byte[] buf, int off, int len) {
        if (matchAll) {
            return true;
        }
        if (exact != null) {
            if (len == 0 || exact.get(buf, off, len) == 0) {
                return false;
            }
            if (prefixes.length == 0 && wildcards.length == 0) {
                return true;
            }
        }
        if (len > 0) {
            int known = decided.get(buf, off, len);
            if (known != 0) {
                return known == ACCEPT;
            }
        }
        boolean ok = decide(buf, off, len);
        if (len > 0) {
            decided.put(buf, off, len, ok ? ACCEPT : REJECT);
        }
        return ok;
    }

    private boolean decide(byte[] buf, int off, int len) {
        for (byte[] prefix : prefixes) {
            if (prefix.length > len || !regionEquals(buf, off, prefix, 0, prefix.length)) {
                return false;
            }
        }
        if (wildcards.length == 0) {
            return true;
        }
        for (byte[] filter : wildcards) {
            if (subjectMatches(buf, off, len, filter)) {
                return true;
            }
        }
        return false;
    }

    // -- NATS filter matching ----------------------------------------------------------------

    static boolean subjectMatches(byte[] s, int off, int sn, byte[] f) {
        int fn = f.length;
        if (sn == 0 || fn == 0) {
            return false;
        }
        int si = 0;
        int fi = 0;
        while (true) {
            int se = tokenEnd(s, off, sn, si);
            int fe = tokenEnd(f, 0, fn, fi);
            if (fe - fi == 1 && f[fi] == '>') {
                return se > si && !hasEmptyToken(s, off + si, sn - si);
            }
            if (fe - fi == 1 && f[fi] == '*') {
                if (se == si) {
                    return false;
                }
            } else if (fe - fi != se - si || !regionEquals(s, off + si, f, fi, se - si)) {
                return false;
            }
            boolean subjectDone = se == sn;
            boolean filterDone = fe == fn;
            if (subjectDone || filterDone) {
                return subjectDone && filterDone;
            }
            si = se + 1;
            fi = fe + 1;
        }
    }

    /** End (exclusive, relative to off) of the token starting at start: the next '.' or n. */
    private static int tokenEnd(byte[] s, int off, int n, int start) {
        int i = start;
        while (i < n && s[off + i] != '.') {
            i++;
        }
        return i;
    }

    /** s[off, off + n) (not empty) has a leading or trailing '.' or two in a row. */
    private static boolean hasEmptyToken(byte[] s, int off, int n) {
        if (s[off] == '.' || s[off + n - 1] == '.') {
            return true;
        }
        for (int i = off; i < off + n - 1; i++) {
            if (s[i] == '.' && s[i + 1] == '.') {
                return true;
            }
        }
        return false;
    }

    private static boolean regionEquals(byte[] a, int aOff, byte[] b, int bOff, int n) {
        return Arrays.equals(a, aOff, aOff + n, b, bOff, bOff + n);
    }

    private static byte[][] utf8All(List<String> items) {
        if (items == null) {
            return new byte[0][];
        }
        byte[][] out = new byte[items.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = items.get(i).getBytes(StandardCharsets.UTF_8);
        }
        return out;
    }

    /** Byte strings to small int values (never 0: 0 means absent); open addressing, linear
     *  probing, the keys packed in one growing arena.  BlockSummary uses it too. */
    static final class BytesTable {
        private int[] slots;                 // entry index + 1, 0 = empty
        private int[] hashes;
        private int[] keyOff;
        private int[] keyLen;
        private byte[] values;
        private byte[] arena = new byte[1024];
        private int arenaUsed;
        private int count;

        BytesTable(int expected) {
            int size = 16;
            while (size < expected * 2) {
                size <<= 1;
            }
            slots = new int[size];
            hashes = new int[size / 2];
            keyOff = new int[size / 2];
            keyLen = new int[size / 2];
            values = new byte[size / 2];
        }

        private static long mix(long h) {
            h *= 0x9E3779B97F4A7C15L;
            return h ^ (h >>> 32);
        }

        /** Over 8-byte words (the last one overlapping the one before it), not byte by
         *  byte: most subjects take two steps. */
        static int hash(byte[] buf, int off, int len) {
            long h = 0x6A09E667F3BCC909L ^ len;
            if (len >= 8) {
                h = mix(h ^ (long) I64.get(buf, off));
                for (int i = 8; i < len - 8; i += 8) {
                    h = mix(h ^ (long) I64.get(buf, off + i));
                }
                h = mix(h ^ (long) I64.get(buf, off + len - 8));
            } else if (len >= 4) {
                h = mix(h ^ ((int) I32.get(buf, off) & 0xFFFFFFFFL)
                        ^ ((long) (int) I32.get(buf, off + len - 4) << 32));
            } else if (len > 0) {
                h = mix(h ^ (buf[off] & 0xFF) ^ (buf[off + len / 2] & 0xFF) << 8
                        ^ (buf[off + len - 1] & 0xFF) << 16);
            }
            return (int) (h ^ (h >>> 29));
        }

        int get(byte[] buf, int off, int len) {
            int h = hash(buf, off, len);
            int mask = slots.length - 1;
            for (int i = h & mask; ; i = (i + 1) & mask) {
                int e = slots[i] - 1;
                if (e < 0) {
                    return 0;
                }
                if (hashes[e] == h && keyLen[e] == len
                        && regionEquals(arena, keyOff[e], buf, off, len)) {
                    return values[e];
                }
            }
        }

        void put(byte[] buf, int off, int len, int value) {
            int h = hash(buf, off, len);
            int mask = slots.length - 1;
            int i = h & mask;
            for (; ; i = (i + 1) & mask) {
                int e = slots[i] - 1;
                if (e < 0) {
                    break;
                }
                if (hashes[e] == h && keyLen[e] == len
                        && regionEquals(arena, keyOff[e], buf, off, len)) {
                    values[e] = (byte) value;
                    return;
                }
            }
            if (arenaUsed + len > arena.length) {
                arena = Arrays.copyOf(arena, Math.max(arena.length * 2, arenaUsed + len));
            }
            System.arraycopy(buf, off, arena, arenaUsed, len);
            int e = count++;
            hashes[e] = h;
            keyOff[e] = arenaUsed;
            keyLen[e] = len;
            values[e] = (byte) value;
            arenaUsed += len;
            slots[i] = e + 1;
            if (count * 2 >= slots.length) {
                grow();
            }
        }

        private void grow() {
            int size = slots.length * 2;
            slots = new int[size];
            hashes = Arrays.copyOf(hashes, size / 2);
            keyOff = Arrays.copyOf(keyOff, size / 2);
            keyLen = Arrays.copyOf(keyLen, size / 2);
            values = Arrays.copyOf(values, size / 2);
            int mask = size - 1;
            for (int e = 0; e < count; e++) {
                int i = hashes[e] & mask;
                while (slots[i] != 0) {
                    i = (i + 1) & mask;
                }
                slots[i] = e + 1;
            }
        }
    }
}
