/*
 * What a planner needs of a block that index.db does not describe, from one walk over its
 * record headers (the JVM twin of the core's summarize_block):
 *   msgs                 live message records (neither tombstone nor erased / skip)
 *   firstSeq, lastSeq    lowest and highest sequence of those (0 when none)
 *   firstTs, lastTs      lowest and highest timestamp of those, Unix ns (0 when none)
 *   maxSeq               highest sequence of any record but a tombstone, skips included
 *   tombstones           the sequences tombstones remove, in walk order
 *   subjects             the distinct subjects of the live messages (empty ones left out),
 *                        decoded as Python decodes them: UTF-8, each byte that is not part
 *                        of a valid sequence as the lone surrogate U+DC00 + byte
 *                        ("surrogateescape"), so a subject's bytes are never lost
 *   walkedBytes          where the walk stopped: the end, or zero-filled space
 *   holes                {offset, first, last} of every damaged stretch, as BlockColumns notes
 *                        them (bytes that are not a record; with a RecordHash, a record whose
 *                        hash is wrong too; the walk goes on at the next intact record when
 *                        hashes are checked)
 */
package jsstore.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

final class BlockSummary {
    public final long msgs;
    public final long firstSeq;
    public final long lastSeq;
    public final long maxSeq;
    public final long firstTs;
    public final long lastTs;
    public final Set<String> subjects;
    public final long[] tombstones;
    public final long walkedBytes;
    public final List<long[]> holes;

    private BlockSummary(long msgs, long firstSeq, long lastSeq, long maxSeq, long firstTs,
                         long lastTs, Set<String> subjects, long[] tombstones, long walkedBytes,
                         List<long[]> holes) {
        this.holes = holes;
        this.msgs = msgs;
        this.firstSeq = firstSeq;
        this.lastSeq = lastSeq;
        this.maxSeq = maxSeq;
        this.firstTs = firstTs;
        this.lastTs = lastTs;
        this.subjects = subjects;
        this.tombstones = tombstones;
        this.walkedBytes = walkedBytes;
    }

    static BlockSummary of(byte[] plain) {
        return of(plain, null);
    }

    /** A block that does not decompress: one damaged stretch, nothing known in it. */
    static BlockSummary unreadable() {
        List<long[]> holes = new ArrayList<>();
        holes.add(new long[] {0, 1, 0});
        return new BlockSummary(0, 0, 0, 0, 0, 0, Collections.emptySet(), new long[0], 0, holes);
    }

    static BlockSummary of(byte[] plain, RecordHash hash) {
        List<long[]> holes = new ArrayList<>();
        long[] openHole = null;
        long msgs = 0;
        long firstSeq = 0;
        long lastSeq = 0;
        long maxSeq = 0;
        long firstTs = 0;
        long lastTs = 0;
        long[] tombstones = new long[8];
        int tombCount = 0;
        Set<String> subjects = new LinkedHashSet<>();
        SubjectMatch.BytesTable seen = new SubjectMatch.BytesTable(64);
        int size = plain.length;
        int pos = 0;
        while (pos < size) {
            int length = BlockColumns.recordLength(plain, pos, size - pos);
            if (length >= 0 && hash != null && !hash.ok(plain, pos, length)) {
                length = -1;
            }
            if (length < 0) {
                if (BlockColumns.allZero(plain, pos, size)) {
                    break;
                }
                if (openHole == null) {
                    openHole = new long[] {pos, maxSeq + 1, 0};
                    holes.add(openHole);
                }
                pos = hash == null ? size : BlockColumns.resync(plain, size, pos + 1, hash, maxSeq);
                continue;
            }
            long rawSeq = BlockColumns.rawSeq(plain, pos);
            long seq = rawSeq & BlockColumns.SEQ_MASK;
            if ((rawSeq & BlockColumns.SEQ_TOMB_BIT) == 0 && openHole != null) {
                openHole[2] = seq - 1;
                openHole = null;
            }
            if ((rawSeq & BlockColumns.SEQ_TOMB_BIT) != 0) {
                if (tombCount == tombstones.length) {
                    tombstones = Arrays.copyOf(tombstones, tombCount * 2);
                }
                tombstones[tombCount++] = seq;
            } else {
                if (seq > maxSeq) {
                    maxSeq = seq;
                }
                if ((rawSeq & BlockColumns.SEQ_ERASE_BIT) == 0) {
                    long ts = BlockColumns.ts(plain, pos);
                    if (msgs == 0 || seq < firstSeq) {
                        firstSeq = seq;
                    }
                    if (seq > lastSeq) {
                        lastSeq = seq;
                    }
                    if (msgs == 0 || ts < firstTs) {
                        firstTs = ts;
                    }
                    if (msgs == 0 || ts > lastTs) {
                        lastTs = ts;
                    }
                    msgs++;
                    int subjLen = BlockColumns.subjectLength(plain, pos);
                    int subj = pos + BlockColumns.OFF_SUBJ;
                    if (subjLen > 0 && seen.get(plain, subj, subjLen) == 0) {
                        seen.put(plain, subj, subjLen, 1);     // decoded once per subject
                        subjects.add(decode(plain, subj, subjLen));
                    }
                }
            }
            pos += length;
        }
        return new BlockSummary(msgs, firstSeq, lastSeq, maxSeq, firstTs, lastTs,
                                Collections.unmodifiableSet(subjects),
                                Arrays.copyOf(tombstones, tombCount), pos, holes);
    }

    /** UTF-8 with Python's "surrogateescape": a byte that does not start a valid, complete
     *  sequence (shortest form, no surrogate code points, at most U+10FFFF) becomes the
     *  char U+DC00 + byte. */
    static String decode(byte[] b, int off, int len) {
        StringBuilder out = new StringBuilder(len);
        int end = off + len;
        int i = off;
        while (i < end) {
            int c = b[i] & 0xFF;
            int n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
            int cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
            boolean ok = n > 0 && i + n <= end;
            for (int k = 1; ok && k < n; k++) {
                int d = b[i + k] & 0xFF;
                if (k == 1) {                 // the second byte's range rules out overlong
                    int lo = 0x80;            // forms, surrogates and code points past 10FFFF
                    int hi = 0xBF;
                    if (c == 0xE0) {
                        lo = 0xA0;
                    } else if (c == 0xED) {
                        hi = 0x9F;
                    } else if (c == 0xF0) {
                        lo = 0x90;
                    } else if (c == 0xF4) {
                        hi = 0x8F;
                    }
                    ok = d >= lo && d <= hi;
                } else {
                    ok = d >= 0x80 && d <= 0xBF;
                }
                cp = (cp << 6) | (d & 0x3F);
            }
            if (ok) {
                out.appendCodePoint(cp);
                i += n;
            } else {
                out.append((char) (0xDC00 + c));
                i++;
            }
        }
        return out.toString();
    }
}
