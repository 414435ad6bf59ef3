/*
 * The check of a message record's hash (the JVM side of the core's record_hash_ok): the
 * last 8 bytes of a record are HighwayHash-64, keyed with SHA-256 of "<stream>-<block
 * index>", of the raw sequence and timestamp (record bytes 4..20), the subject, and the
 * header block and payload (the bytes after the 4-byte header length up to the hash).
 * Those parts are not contiguous in the record: they are copied into a scratch buffer that
 * one reader reuses.
 */
package jsstore.spark;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

final class RecordHash {
    private final byte[] key;
    private byte[] scratch = new byte[1024];

    RecordHash(byte[] key) {
        if (key == null || key.length != 32) {
            throw new IllegalArgumentException("a record hash key is 32 bytes");
        }
        this.key = key;
    }

    /** The key of block `index` of `stream`: SHA-256 of "<stream>-<index>". */
    static byte[] blockKey(String stream, long index) {
        try {
            return MessageDigest.getInstance("SHA-256")
                    .digest((stream + "-" + index).getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException missing) {
            throw new IllegalStateException("no SHA-256 in this JVM", missing);
        }
    }

    /** Whether the record at b[rec, rec + length) (its lengths already checked) carries the
     *  hash of its parts. */
    boolean ok(byte[] b, int rec, int length) {
        int subjLen = BlockColumns.subjectLength(b, rec);
        int after = rec + BlockColumns.OFF_SUBJ + subjLen;
        if (b[rec + 3] < 0) {                 // bit 31 of the length: a header block
            after += 4;
        }
        int tail = rec + length - BlockColumns.HASH_SIZE - after;
        int total = 16 + subjLen + tail;
        if (scratch.length < total) {
            scratch = new byte[Math.max(total, scratch.length * 2)];
        }
        System.arraycopy(b, rec + BlockColumns.OFF_SEQ, scratch, 0, 16);
        System.arraycopy(b, rec + BlockColumns.OFF_SUBJ, scratch, 16, subjLen);
        System.arraycopy(b, after, scratch, 16 + subjLen, tail);
        long stored = HighwayHash.le64(b, rec + length - BlockColumns.HASH_SIZE);
        return HighwayHash.hash64(key, scratch, 0, total) == stored;
    }
}
