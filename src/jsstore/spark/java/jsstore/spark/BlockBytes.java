/*
 * A block file's plain bytes: the file as it is, or decompressed when it carries nats-server's
 * compression metadata (see src/jsstore/_core/storage/compress.pxd):
 *
 *   "cmp", alg byte (1 = S2, 0x4C = LZ4, 0 = none), uvarint original size of the plain file,
 *   the plain file minus its last 8 bytes compressed (S2 framed stream, or one LZ4 frame with
 *   a content checksum, see Lz4Frame), then those 8 bytes (the last record's hash) uncompressed.
 *
 * Same classification and checks as jsstore._core.storage.compress (block_alg,
 * decompress_block) and
 * jsstore.spark.planning.read_plain_block: "cmp" + 0x00/0x01/0x80/0x81 can also be the length
 * of a 7 or 23 MiB record, so when the file could hold such a record the prefix only means
 * "compressed" if it is an S2 header followed by a stream identifier chunk. A file whose alg
 * is 0 is returned as it is. A corrupt compressed file gives an IOException.
 */
package jsstore.spark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

final class BlockBytes {
    static final int ALG_NONE = 0;
    static final int ALG_S2 = 1;
    static final int ALG_LZ4 = 0x4C;
    static final int CHECKSUM_SIZE = 8;
    static final long ORIGINAL_SIZE_LIMIT = 1L << 30;
    private static final long RECORD_LEN_MASK = 0x7FFFFFFFL;
    private static final long RECORD_MAX_LEN = 32L * 1024 * 1024;

    private BlockBytes() {
    }

    /** What a block file's first bytes say: alg, plain size, bytes of metadata (0 = plain). */
    record Header(int alg, long originalSize, int headerLen) {
    }

    /** The plain bytes of the block file at path. */
    static byte[] readPlain(Path path) throws IOException {
        byte[] data = Files.readAllBytes(path);
        try {
            return plain(data);
        } catch (IOException exc) {
            throw new IOException(path + ": " + exc.getMessage(), exc);
        }
    }

    /** The plain bytes of a block file's bytes (data itself when it is not compressed). */
    static byte[] plain(byte[] data) throws IOException {
        Header header = header(data);
        if (header.alg() == ALG_NONE) {
            return data;
        }
        byte[] out = new byte[validate(data, header)];
        decodeValidated(data, header, out);
        return out;
    }

    /**
     * The length of the plain block (data.length when it is not compressed), after checking a
     * compressed file's header and, for S2, its framing: a buffer can be sized before decoding.
     */
    static int plainSize(byte[] data) throws IOException {
        Header header = header(data);
        return header.alg() == ALG_NONE ? data.length : validate(data, header);
    }

    /**
     * Write the plain block into dst[0, plainSize(data)) and return that length; dst may be
     * longer (a buffer reused from block to block), the bytes after the length are left as
     * they are.
     */
    static int plainInto(byte[] data, byte[] dst) throws IOException {
        Header header = header(data);
        int size = header.alg() == ALG_NONE ? data.length : validate(data, header);
        if (dst.length < size) {
            throw new IllegalArgumentException("a " + dst.length + "-byte buffer for a " + size
                                               + "-byte block");
        }
        if (header.alg() == ALG_NONE) {
            System.arraycopy(data, 0, dst, 0, size);
        } else {
            decodeValidated(data, header, dst);
        }
        return size;
    }

    /** Classify a block file (IOException for a "cmp" header that is neither plain nor valid). */
    static Header header(byte[] data) throws IOException {
        int size = data.length;
        Header plain = new Header(ALG_NONE, size, 0);
        if (size < 5 || data[0] != 'c' || data[1] != 'm' || data[2] != 'p') {
            return plain;
        }
        int alg = data[3] & 0xff;
        int[] after = new int[1];
        long originalSize = S2.uvarint(data, 4, size, after);
        boolean hasSize = after[0] != 0;
        int pos = hasSize ? after[0] : 4;
        long recordLen = ((data[0] & 0xffL) | (data[1] & 0xffL) << 8 | (data[2] & 0xffL) << 16
                          | (data[3] & 0xffL) << 24) & RECORD_LEN_MASK;
        if (recordLen <= RECORD_MAX_LEN && recordLen <= size) {
            if (alg != ALG_S2 || !hasSize || !S2.startsWithIdentifier(data, pos, size - pos)) {
                return plain;
            }
        } else if (alg != ALG_NONE && alg != ALG_S2 && alg != ALG_LZ4) {
            throw new IOException(String.format(
                "compressed block: unknown compression algorithm 0x%02x at offset 3", alg));
        } else if (!hasSize) {
            throw new IOException(
                "compressed block: truncated or invalid original-size uvarint at offset 4");
        }
        return new Header(alg, originalSize, pos);
    }

    private static String name(Header header) {
        return header.alg() == ALG_S2 ? "S2 block file" : "LZ4 block file";
    }

    // A compressed file's sizes, and an S2 file's framing, checked before anything is
    // allocated for its contents; returns the plain size.
    private static int validate(byte[] data, Header header) throws IOException {
        int size = data.length;
        String name = name(header);
        int headerLen = header.headerLen();
        long originalSize = header.originalSize();
        if (size - headerLen < CHECKSUM_SIZE) {
            throw new IOException(name + ": " + size + " bytes end before the " + CHECKSUM_SIZE
                                  + "-byte checksum that follows the " + headerLen
                                  + "-byte header");
        }
        // the uvarint is unsigned: a value of 2**63 or more reads as negative here
        if (originalSize < CHECKSUM_SIZE || originalSize > ORIGINAL_SIZE_LIMIT) {
            throw new IOException(name + ": implausible original size "
                                  + Long.toUnsignedString(originalSize) + " in the header");
        }
        if (header.alg() == ALG_S2) {
            long bodyLen = originalSize - CHECKSUM_SIZE;
            long total = S2.streamDecodedLen(data, headerLen, size - headerLen - CHECKSUM_SIZE,
                                             name);
            if (total != bodyLen) {
                throw new IOException(name + ": stream decodes to " + total + " bytes, header says "
                                      + bodyLen + " (+ " + CHECKSUM_SIZE + " checksum bytes)");
            }
        }
        return (int) originalSize;
    }

    // Decode a validated compressed file into dst[0, originalSize).
    private static void decodeValidated(byte[] data, Header header, byte[] dst)
            throws IOException {
        int size = data.length;
        int headerLen = header.headerLen();
        int bodyLen = (int) header.originalSize() - CHECKSUM_SIZE;
        int streamLen = size - headerLen - CHECKSUM_SIZE;
        if (header.alg() == ALG_S2) {
            S2.decodeStream(data, headerLen, streamLen, dst, bodyLen, name(header));
        } else {
            Lz4Frame.decode(data, headerLen, streamLen, dst, bodyLen);
        }
        System.arraycopy(data, size - CHECKSUM_SIZE, dst, bodyLen, CHECKSUM_SIZE);
    }
}
