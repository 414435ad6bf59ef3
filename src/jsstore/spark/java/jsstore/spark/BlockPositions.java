// A per-block position index (kept as BlockIndexFiles says): for one sealed, uncompressed
// block file, the offset, sequence and timestamp of one message record about every STRIDE
// bytes, and whether the block's message timestamps never go down. A read of a sequence or
// time range then reads only the part of the block from the last sampled record that every
// wanted record follows to the first one that follows every wanted record, instead of the
// whole block; without an index it reads the block and writes one for the next query.
//
// Why the part holds every row: message records are in ascending sequence order, so every
// record before a sample whose sequence is at most seqLow is below seqLow, and every record
// from a sample above seqHigh on is above seqHigh. Times only bound the part when they never
// go down in the block (then records before a sample older than timeLow are older, and
// records from a sample newer than timeHigh on are newer). Records of the part are walked by
// BlockColumns with the slice's filters, as in a whole-block read.
//
// File (little-endian):
//   "JSBP" u32 version=1, the block's stamp (u64 size, u64 mtime ns, its last 8 bytes),
//   u32 flags (1: timestamps never go down), u32 samples,
//   samples: u32 offset in the block, u64 sequence, i64 timestamp (ascending offsets),
//   u32 CRC-32C of everything before it (the whole file is read, so all of it is checked).
// Samples are message records (tombstones and erased records are never rows): the first one,
// then the first at or past each STRIDE bytes after the last sample.
package jsstore.spark;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.zip.CRC32C;
import jsstore.spark.BlockIndexFiles.BlockStamp;

final class BlockPositions {
    private static final int MAGIC = 0x5042534a;        // "JSBP" as a little-endian u32
    private static final int VERSION = 1;
    private static final int HEADER = 4 + 4 + BlockIndexFiles.STAMP_BYTES + 4 + 4;
    private static final int SAMPLE = 4 + 8 + 8;
    private static final int CHECKSUM = 4;
    private static final int TIMES_NEVER_DOWN = 1;
    static final int STRIDE = 16 * 1024;
    static final String SUFFIX = ".jsbp";

    private BlockPositions() {}

    /** Block bytes [start, end) hold every record a range can want; indexBytes were read to
     *  know it. */
    record Part(int start, int end, long indexBytes) {}

    static Path location(Path dir, Path block) {
        return BlockIndexFiles.location(dir, block, SUFFIX);
    }

    /** Write the index of a plain block (the file's bytes as they are on disk, plain[0, size))
     *  atomically. */
    static void write(Path indexFile, byte[] plain, int size, BlockStamp stamp) throws IOException {
        Samples samples = new Samples(plain);
        BlockColumns.forEachMessage(plain, size, samples);
        ByteBuffer out = ByteBuffer.allocate(HEADER + SAMPLE * samples.count + CHECKSUM).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(MAGIC).putInt(VERSION);
        stamp.write(out);
        out.putInt(samples.neverDown ? TIMES_NEVER_DOWN : 0).putInt(samples.count);
        out.put(samples.bytes.flip());
        out.putInt(crc(out.array(), out.position()));
        BlockIndexFiles.writeAtomically(indexFile, out.array());
    }

    /** The samples of one block's message records, and whether their times never go down. */
    private static final class Samples implements BlockColumns.MessageVisitor {
        private final byte[] plain;
        ByteBuffer bytes = ByteBuffer.allocate(SAMPLE * 64).order(ByteOrder.LITTLE_ENDIAN);
        int count;
        boolean neverDown = true;
        private long lastTs = Long.MIN_VALUE;
        private long nextMark;

        Samples(byte[] plain) {
            this.plain = plain;
        }

        @Override
        public void message(int rec, int length, long seq) {
            long ts = BlockColumns.ts(plain, rec);
            neverDown &= ts >= lastTs;
            lastTs = ts;
            if (rec < nextMark) {
                return;
            }
            if (bytes.remaining() < SAMPLE) {
                bytes = ByteBuffer.allocate(bytes.capacity() * 2).order(ByteOrder.LITTLE_ENDIAN).put(bytes.flip());
            }
            bytes.putInt(rec).putLong(seq).putLong(ts);
            count++;
            nextMark = (long) rec + STRIDE;
        }
    }

    /** The part of `block` that holds every record with a sequence in [seqLow, seqHigh] and
     *  a timestamp in [timeLow, timeHigh], by its index; null when there is no index for
     *  the block as it is now (missing, damaged, or built from another version of it). */
    static Part part(Path indexFile, Path block, long seqLow, long seqHigh, long timeLow, long timeHigh)
            throws IOException {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(indexFile);
        } catch (NoSuchFileException missing) {
            return null;
        }
        if (bytes.length < HEADER + CHECKSUM) {
            return null;
        }
        ByteBuffer in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (in.getInt(bytes.length - CHECKSUM) != crc(bytes, bytes.length - CHECKSUM)
                || in.getInt() != MAGIC || in.getInt() != VERSION) {
            return null;
        }
        BlockStamp stamp = BlockStamp.read(in);
        int flags = in.getInt();
        int count = in.getInt();
        if (count < 0 || (long) HEADER + (long) SAMPLE * count + CHECKSUM != bytes.length
                || stamp.size() > Integer.MAX_VALUE || !stamp.same(BlockStamp.of(block))) {
            return null;
        }
        boolean byTime = (flags & TIMES_NEVER_DOWN) != 0;
        int start = 0;
        int end = (int) stamp.size();
        long previousOffset = -1;
        boolean endFound = false;
        for (int i = 0; i < count; i++) {
            int at = HEADER + SAMPLE * i;
            long offset = in.getInt(at) & 0xFFFFFFFFL;
            long seq = in.getLong(at + 4);
            long ts = in.getLong(at + 12);
            if (offset <= previousOffset || offset >= stamp.size()) {
                return null;                        // not an index this code wrote
            }
            previousOffset = offset;
            if (seq <= seqLow || (byTime && ts < timeLow)) {
                start = (int) offset;               // every record before it is unwanted
            }
            if (!endFound && (seq > seqHigh || (byTime && ts > timeHigh))) {
                end = (int) offset;                 // it and every record after it too
                endFound = true;
            }
        }
        return new Part(start, Math.max(start, end), bytes.length);
    }

    private static int crc(byte[] bytes, int length) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, length);
        return (int) crc.getValue();
    }
}
