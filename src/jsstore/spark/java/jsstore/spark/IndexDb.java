/*
 * Decoder of a stream's msgs/index.db, the state nats-server writes on a clean stop (versions
 * 1-4), with the same facts as jsstore.store.indexdb.decode_index:
 *
 *   [11][version 1..4]
 *   uvarint msgs, uvarint bytes, uvarint first_seq, varint first_ts, uvarint last_seq,
 *   varint last_ts
 *   uvarint subjects; each: uvarint len, subject, uvarint total, uvarint fblk, uvarint lblk
 *                           (before v4, lblk only when total > 1, else lblk = fblk)
 *   uvarint blocks; each: uvarint index, uvarint bytes, uvarint first_seq,
 *                         varint first_ts - first_ts(state), uvarint last_seq,
 *                         varint last_ts - first_ts(state), uvarint num_deleted,
 *                         [v>=2] uvarint ttls, [v>=3] uvarint schedules,
 *                         [num_deleted > 0] the deleted set (avl.SequenceSet, see below)
 *   uvarint last block index, 8 bytes: hash of the last record of the last block
 *   8 bytes: HighwayHash-64 keyed by SHA-256(stream name) over everything above
 *
 * Unsigned values (msgs, bytes, sequences, block indexes) are held in longs as their 64 bits;
 * a varint that runs past the checksum or over 64 bits is corruption. Subjects are decoded as
 * UTF-8. Any corruption, truncation or checksum mismatch gives an IOException.
 */
package jsstore.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

final class IndexDb {
    static final int MAGIC = 11;
    static final int MAX_VERSION = 4;
    static final int MIN_LEN = 32;

    /** A subject with messages: how many, and the first and last block holding it. */
    record Subject(String subject, long total, long firstBlock, long lastBlock) {
    }

    /** A block's summary; deleted is sorted ascending (unsigned), empty when none. */
    record Block(long index, long bytes, long firstSeq, long firstTs, long lastSeq, long lastTs,
                 long[] deleted) {
    }

    public final long msgs;
    public final long bytes;
    public final long firstSeq;
    public final long firstTs;
    public final long lastSeq;
    public final long lastTs;
    public final long lastIndex;
    public final byte[] lchk;
    public final List<Subject> subjects;
    public final List<Block> blocks;

    private IndexDb(long[] head, long lastIndex, byte[] lchk, List<Subject> subjects,
                    List<Block> blocks) {
        this.msgs = head[0];
        this.bytes = head[1];
        this.firstSeq = head[2];
        this.firstTs = head[3];
        this.lastSeq = head[4];
        this.lastTs = head[5];
        this.lastIndex = lastIndex;
        this.lchk = lchk;
        this.subjects = Collections.unmodifiableList(subjects);
        this.blocks = Collections.unmodifiableList(blocks);
    }

    /** The index.db key of a stream: SHA-256 of its name (UTF-8). */
    static byte[] metaHashKey(String streamName) {
        try {
            return MessageDigest.getInstance("SHA-256")
                .digest(streamName.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException exc) {
            throw new IllegalStateException("the JDK has no SHA-256", exc);
        }
    }

    /** Decode index.db bytes of the stream streamName. */
    static IndexDb decode(String streamName, byte[] buf) throws IOException {
        if (buf.length < MIN_LEN || buf[0] != MAGIC || buf[1] < 1 || buf[1] > MAX_VERSION) {
            throw new IOException("index.db: bad header");
        }
        int end = buf.length - 8;
        byte[] digest = HighwayHash.digest64(metaHashKey(streamName), buf, 0, end);
        for (int i = 0; i < 8; i++) {
            if (digest[i] != buf[end + i]) {
                throw new IOException("index.db: checksum mismatch");
            }
        }
        int version = buf[1];
        Reader r = new Reader(buf, 2, end);
        long[] head = {r.uvarint(), r.uvarint(), r.uvarint(), r.varint(), r.uvarint(), r.varint()};
        long base = head[3];
        long subjectCount = r.uvarint();
        List<Subject> subjects = new ArrayList<>();
        for (long i = 0; Long.compareUnsigned(i, subjectCount) < 0; i++) {
            long len = r.uvarint();
            String subject = new String(buf, r.take(len), (int) len, StandardCharsets.UTF_8);
            long total = r.uvarint();
            long fblk = r.uvarint();
            long lblk = version >= 4 || Long.compareUnsigned(total, 1) > 0 ? r.uvarint() : fblk;
            subjects.add(new Subject(subject, total, fblk, lblk));
        }
        long blockCount = r.uvarint();
        List<Block> blocks = new ArrayList<>();
        for (long i = 0; Long.compareUnsigned(i, blockCount) < 0; i++) {
            long index = r.uvarint();
            long bytes = r.uvarint();
            long first = r.uvarint();
            long firstTs = r.varint() + base;
            long last = r.uvarint();
            long lastTs = r.varint() + base;
            long numDeleted = r.uvarint();
            if (version >= 2) {
                r.uvarint();        // ttls
            }
            if (version >= 3) {
                r.uvarint();        // schedules
            }
            long[] deleted = new long[0];
            if (numDeleted != 0) {
                int[] used = new int[1];
                deleted = decodeSequenceSet(buf, r.pos, end, used);
                r.pos += used[0];
            }
            blocks.add(new Block(index, bytes, first, firstTs, last, lastTs, deleted));
        }
        long lastIndex = r.uvarint();
        int at = r.take(8);
        byte[] lchk = Arrays.copyOfRange(buf, at, at + 8);
        return new IndexDb(head, lastIndex, lchk, subjects, blocks);
    }

    // nats-server's avl.SequenceSet encoding (jsstore._core.storage.seqcodec), little-endian:
    //   v2: u8 magic 22, u8 version 2, u32 node_count, u32 size,
    //       node_count x {u64 base, 32 x u64 words, u16 height}
    //   v1: the same with 64 words a node.
    // Bit b of word w of a node is the sequence base + 64 w + b. Members are the union over
    // all nodes; the header's size must equal their number (mod 2**32), and no member may
    // pass 2**64 - 1. Returns the members sorted (unsigned) and sets used[0] to the bytes read.
    static long[] decodeSequenceSet(byte[] buf, int start, int end, int[] used)
            throws IOException {
        final int headerLen = 10;
        int length = end - start;
        if (length < headerLen) {
            throw seqError(length + " bytes is shorter than the " + headerLen + "-byte header");
        }
        if (buf[start] != 22) {
            throw seqError("bad magic " + (buf[start] & 0xff) + " at offset 0 (expected 22)");
        }
        int version = buf[start + 1] & 0xff;
        int words;
        if (version == 2) {
            words = 32;
        } else if (version == 1) {
            words = 64;
        } else {
            throw seqError("unsupported version " + version + " at offset 1");
        }
        int nodeLen = 8 + 8 * words + 2;
        long nodeCount = le32(buf, start + 2);
        long declaredSize = le32(buf, start + 6);
        if (nodeCount > (length - headerLen) / nodeLen) {
            throw seqError("header at offset 2 declares " + nodeCount + " nodes of " + nodeLen
                           + " bytes but only " + (length - headerLen) + " bytes follow");
        }
        long[] members = new long[64];
        int n = 0;
        for (int node = 0; node < nodeCount; node++) {
            int record = start + headerLen + node * nodeLen;
            long nodeBase = HighwayHash.le64(buf, record);
            long room = -1L - nodeBase;     // largest offset that stays <= 2**64 - 1
            for (int w = 0; w < words; w++) {
                long bits = HighwayHash.le64(buf, record + 8 + 8 * w);
                while (bits != 0) {
                    long offset = 64L * w + Long.numberOfTrailingZeros(bits);
                    if (Long.compareUnsigned(offset, room) > 0) {
                        throw seqError("node at offset " + (headerLen + node * nodeLen)
                                       + " holds sequences beyond 2**64-1");
                    }
                    if (n == members.length) {
                        members = Arrays.copyOf(members, n * 2);
                    }
                    members[n++] = nodeBase + offset;
                    bits &= bits - 1;
                }
            }
        }
        // unsigned order: flip the sign bit around a signed sort; then drop duplicates
        for (int i = 0; i < n; i++) {
            members[i] ^= Long.MIN_VALUE;
        }
        Arrays.sort(members, 0, n);
        int kept = 0;
        for (int i = 0; i < n; i++) {
            if (kept == 0 || members[i] != members[kept - 1]) {
                members[kept++] = members[i];
            }
        }
        for (int i = 0; i < kept; i++) {
            members[i] ^= Long.MIN_VALUE;
        }
        if ((kept & 0xffffffffL) != declaredSize) {
            throw seqError("header at offset 6 declares " + declaredSize
                           + " members, the nodes hold " + kept);
        }
        used[0] = headerLen + (int) nodeCount * nodeLen;
        return Arrays.copyOf(members, kept);
    }

    private static long le32(byte[] b, int p) {
        return (b[p] & 0xffL) | (b[p + 1] & 0xffL) << 8 | (b[p + 2] & 0xffL) << 16
            | (b[p + 3] & 0xffL) << 24;
    }

    private static IOException seqError(String detail) {
        return new IOException("index.db: sequence set: " + detail);
    }

    // Go varints over buf[pos, end).
    private static final class Reader {
        final byte[] buf;
        final int end;
        int pos;

        Reader(byte[] buf, int pos, int end) {
            this.buf = buf;
            this.pos = pos;
            this.end = end;
        }

        long uvarint() throws IOException {
            long value = 0;
            for (int k = 0, shift = 0; k < 10; k++, shift += 7) {
                if (pos >= end) {
                    throw new IOException("index.db: truncated varint");
                }
                int b = buf[pos++] & 0xff;
                if (b < 0x80) {
                    if (k == 9 && b > 1) {
                        throw new IOException("index.db: varint over 64 bits");
                    }
                    return value | ((long) b << shift);
                }
                value |= (long) (b & 0x7f) << shift;
            }
            throw new IOException("index.db: varint over 64 bits");
        }

        long varint() throws IOException {
            long u = uvarint();
            return (u >>> 1) ^ -(u & 1);
        }

        /** Skip n bytes; returns where they start. */
        int take(long n) throws IOException {
            if (n < 0 || n > end - pos) {
                throw new IOException("index.db: truncated");
            }
            int at = pos;
            pos += (int) n;
            return at;
        }
    }
}
