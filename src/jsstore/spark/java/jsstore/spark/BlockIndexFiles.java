// Where the per-block indexes (SubjectIndex, BlockPositions) live and how they are tied to
// the block file they describe. They are kept in a directory of their own beside (never
// inside) a store, each named after its block file's absolute path, written atomically, and
// used only while the block's size, mtime and last 8 bytes are those it was built from.
package jsstore.spark;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;

final class BlockIndexFiles {
    static final int STAMP_BYTES = 8 + 8 + 8;

    private BlockIndexFiles() {}

    /** What identifies the block file an index was built from. */
    record BlockStamp(long size, long mtimeNs, byte[] tail) {
        static BlockStamp of(Path block) throws IOException {
            BasicFileAttributes attrs = Files.readAttributes(block, BasicFileAttributes.class);
            byte[] tail = new byte[8];
            if (attrs.size() >= 8) {
                try (FileChannel ch = FileChannel.open(block, StandardOpenOption.READ)) {
                    readFully(ch, ByteBuffer.wrap(tail), attrs.size() - 8);
                }
            }
            return new BlockStamp(attrs.size(), attrs.lastModifiedTime().to(TimeUnit.NANOSECONDS), tail);
        }

        /** The stamp as written in an index: u64 size, u64 mtime ns, the 8 tail bytes. */
        static BlockStamp read(ByteBuffer in) {
            long size = in.getLong();
            long mtime = in.getLong();
            byte[] tail = new byte[8];
            in.get(tail);
            return new BlockStamp(size, mtime, tail);
        }

        void write(ByteBuffer out) {
            out.putLong(size).putLong(mtimeNs).put(tail);
        }

        boolean same(BlockStamp other) {
            return size == other.size && mtimeNs == other.mtimeNs && Arrays.equals(tail, other.tail);
        }
    }

    /** The index file of one kind (its suffix) for a block file. */
    static Path location(Path dir, Path block, String suffix) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            byte[] digest = sha.digest(block.toAbsolutePath().toString().getBytes(StandardCharsets.UTF_8));
            return dir.resolve(HexFormat.of().formatHex(digest, 0, 16) + suffix);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("no SHA-256 in this JVM", e);
        }
    }

    /** Replace `file` with `bytes` at once: a reader sees the old index or the new one. */
    static void writeAtomically(Path file, byte[] bytes) throws IOException {
        Files.createDirectories(file.getParent());
        Path partial = Files.createTempFile(file.getParent(), "partial-", ".tmp");
        try {
            Files.write(partial, bytes);
            Files.move(partial, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(partial);
        }
    }

    static void readFully(FileChannel ch, ByteBuffer into, long position) throws IOException {
        if (readAt(ch, into, position) < 0) {
            throw new IOException("unexpected end of file");
        }
    }

    /** Fill `into` from `position` on; -1 when the file ends first (what it holds is read). */
    static int readAt(FileChannel ch, ByteBuffer into, long position) throws IOException {
        long at = position;
        while (into.hasRemaining()) {
            int n = ch.read(into, at);
            if (n < 0) {
                return -1;
            }
            at += n;
        }
        return 0;
    }
}
