/*
 * The block files whose every record's hash this JVM has checked, each with the stamp (size,
 * modification time, last 8 bytes: BlockIndexFiles.BlockStamp) the file had when it was
 * read. A whole read of a block whose stamp is unchanged walks its records without hashing
 * them again: lengths and sequences are still checked, so a cut or overwritten block is
 * still found, but bytes changed in place under an unchanged size and modification time
 * (the stamp the block indexes trust too) would be found only by another JVM, or by `jsstore
 * verify`. A walk that found any damage remembers nothing, so damage is named on every read.
 */
package jsstore.spark;

import java.util.concurrent.ConcurrentHashMap;

final class VerifiedBlocks {
    private static final int LIMIT = 200_000;       // files remembered before starting over
    private static final ConcurrentHashMap<String, BlockIndexFiles.BlockStamp> VERIFIED =
        new ConcurrentHashMap<>();

    private VerifiedBlocks() {}

    /** Whether the file at `path`, as `stamp` describes it now, was checked whole. */
    static boolean verified(String path, BlockIndexFiles.BlockStamp stamp) {
        BlockIndexFiles.BlockStamp known = VERIFIED.get(path);
        return known != null && known.same(stamp);
    }

    /** Every record of the file at `path`, as `stamp` describes it, had its hash checked. */
    static void remember(String path, BlockIndexFiles.BlockStamp stamp) {
        if (VERIFIED.size() >= LIMIT) {
            VERIFIED.clear();
        }
        VERIFIED.put(path, stamp);
    }

    /** Forget every file (tests). */
    static void forget() {
        VERIFIED.clear();
    }
}
