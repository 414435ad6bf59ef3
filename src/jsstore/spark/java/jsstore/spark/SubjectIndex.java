// A per-block subject index (kept as BlockIndexFiles says): for one sealed, uncompressed
// block file, where each subject's records are. A query for a few subjects of a block that
// has one reads the index's directory, the wanted subjects' entry lists and those records
// alone, instead of the whole block; without one it reads the block and writes the index
// for the next query.
//
// File (little-endian):
//   "JSSI" u32 version=1, the block's stamp (u64 size, u64 mtime ns, its last 8 bytes),
//   u32 subjects, u32 directory bytes,
//   directory: per subject u16 length, subject, u32 records, u64 file offset of its list,
//   lists: per record u32 offset in the block, u32 record length (ascending offsets).
// Every record an index leads to is walked by BlockColumns with the slice's filters, so a
// record can never become a row it would not have been in a whole-block read.
package jsstore.spark;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import jsstore.spark.BlockIndexFiles.BlockStamp;

final class SubjectIndex {
    private static final int MAGIC = 0x4953534a;        // "JSSI" as a little-endian u32
    private static final int VERSION = 1;
    private static final int HEADER = 4 + 4 + BlockIndexFiles.STAMP_BYTES + 4 + 4;
    static final String SUFFIX = ".jssi";

    private SubjectIndex() {}

    /** The records of some subjects of a block, concatenated in block order. */
    record Found(byte[] records, long bytesRead) {}

    static Path location(Path dir, Path block) {
        return BlockIndexFiles.location(dir, block, SUFFIX);
    }

    // -- building ----------------------------------------------------------------------------

    /** Write the index of a plain block (the file's bytes as they are on disk, plain[0, size))
     *  atomically. */
    static void write(Path indexFile, byte[] plain, int size, BlockStamp stamp) throws IOException {
        Map<Subject, int[]> lists = new HashMap<>();     // subject -> [count, offsets/lengths...]
        List<Subject> order = new ArrayList<>();
        BlockColumns.forEachMessage(plain, size, (rec, length, seq) -> {
            Subject key = new Subject(plain, rec + BlockColumns.OFF_SUBJ, BlockColumns.subjectLength(plain, rec));
            int[] list = lists.get(key);
            if (list == null) {
                list = new int[9];
                lists.put(key.copy(), list);
                order.add(key.copy());
            } else if (2 * list[0] + 3 > list.length) {
                list = Arrays.copyOf(list, list.length * 2);
                lists.put(key, list);
            }
            list[1 + 2 * list[0]] = rec;
            list[2 + 2 * list[0]] = length;
            list[0]++;
        });
        int directory = 0;
        long entries = 0;
        for (Subject s : order) {
            directory += 2 + s.length + 4 + 8;
            entries += lists.get(s)[0];
        }
        ByteBuffer out = ByteBuffer.allocate(Math.toIntExact(HEADER + directory + 8 * entries))
                .order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(MAGIC).putInt(VERSION);
        stamp.write(out);
        out.putInt(order.size()).putInt(directory);
        long listAt = HEADER + directory;
        for (Subject s : order) {
            int count = lists.get(s)[0];
            out.putShort((short) s.length).put(s.bytes, s.offset, s.length).putInt(count).putLong(listAt);
            listAt += 8L * count;
        }
        for (Subject s : order) {
            int[] list = lists.get(s);
            for (int i = 0; i < list[0]; i++) {
                out.putInt(list[1 + 2 * i]).putInt(list[2 + 2 * i]);
            }
        }
        BlockIndexFiles.writeAtomically(indexFile, out.array());
    }

    // -- reading -----------------------------------------------------------------------------

    /** The records of `subjects` in `block` by its index, or null when there is no index for
     *  the block as it is now (missing, damaged, or built from another version of it). */
    static Found read(Path indexFile, Path block, List<String> subjects) throws IOException {
        FileChannel index;
        try {
            index = FileChannel.open(indexFile, StandardOpenOption.READ);
        } catch (NoSuchFileException missing) {
            return null;
        }
        try (index) {
            long indexSize = index.size();
            if (indexSize < HEADER) {
                return null;
            }
            ByteBuffer head = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
            BlockIndexFiles.readFully(index, head, 0);
            head.flip();
            if (head.getInt() != MAGIC || head.getInt() != VERSION) {
                return null;
            }
            BlockStamp stamp = BlockStamp.read(head);
            long size = stamp.size();
            int count = head.getInt();
            int directoryBytes = head.getInt();
            if (count < 0 || directoryBytes < 0 || HEADER + (long) directoryBytes > indexSize
                    || !stamp.same(BlockStamp.of(block))) {
                return null;
            }
            ByteBuffer dir = ByteBuffer.allocate(directoryBytes).order(ByteOrder.LITTLE_ENDIAN);
            BlockIndexFiles.readFully(index, dir, HEADER);
            dir.flip();
            Map<String, long[]> where = new HashMap<>();
            for (int i = 0; i < count; i++) {
                if (dir.remaining() < 2) {
                    return null;
                }
                int length = dir.getShort() & 0xFFFF;
                if (dir.remaining() < length + 12) {
                    return null;
                }
                byte[] subject = new byte[length];
                dir.get(subject);
                // keyed by the raw bytes (one char a byte): subjects that are not valid UTF-8
                // stay apart
                where.put(new String(subject, StandardCharsets.ISO_8859_1),
                          new long[] {dir.getInt() & 0xFFFFFFFFL, dir.getLong()});
            }
            long bytesRead = HEADER + directoryBytes;
            List<long[]> wanted = new ArrayList<>();        // {offset, length} in the block
            for (String subject : subjects) {
                long[] entry = where.get(new String(subject.getBytes(StandardCharsets.UTF_8),
                                                    StandardCharsets.ISO_8859_1));
                if (entry == null) {
                    continue;
                }
                long listBytes = 8 * entry[0];
                if (entry[1] < HEADER + directoryBytes || entry[1] + listBytes > indexSize || listBytes > Integer.MAX_VALUE) {
                    return null;
                }
                ByteBuffer list = ByteBuffer.allocate((int) listBytes).order(ByteOrder.LITTLE_ENDIAN);
                BlockIndexFiles.readFully(index, list, entry[1]);
                list.flip();
                bytesRead += listBytes;
                for (long i = 0; i < entry[0]; i++) {
                    wanted.add(new long[] {list.getInt() & 0xFFFFFFFFL, list.getInt() & 0xFFFFFFFFL});
                }
            }
            wanted.sort((a, b) -> Long.compare(a[0], b[0]));
            long total = 0;
            for (long[] w : wanted) {
                if (w[0] + w[1] > size) {
                    return null;
                }
                total += w[1];
            }
            byte[] records = new byte[Math.toIntExact(total)];
            try (FileChannel ch = FileChannel.open(block, StandardOpenOption.READ)) {
                int at = 0;
                for (long[] w : wanted) {
                    BlockIndexFiles.readFully(ch, ByteBuffer.wrap(records, at, (int) w[1]), w[0]);
                    at += (int) w[1];
                }
            }
            return new Found(records, bytesRead + total);
        }
    }

    /** Subject bytes as a hash key (a view while probing, copied when kept). */
    private static final class Subject {
        final byte[] bytes;
        final int offset;
        final int length;
        private final int hash;

        Subject(byte[] bytes, int offset, int length) {
            this.bytes = bytes;
            this.offset = offset;
            this.length = length;
            int h = 1;
            for (int i = offset; i < offset + length; i++) {
                h = 31 * h + bytes[i];
            }
            this.hash = h;
        }

        Subject copy() {
            return new Subject(Arrays.copyOfRange(bytes, offset, offset + length), 0, length);
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Subject s && Arrays.equals(bytes, offset, offset + length, s.bytes, s.offset, s.offset + s.length);
        }
    }
}
