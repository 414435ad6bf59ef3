// One task's read: its block slices in order, each file read whole (decompressed when it is
// s2 or LZ4 compressed) and walked by BlockColumns into reused on-heap column vectors. A
// block removed since planning (limits, compaction) reads as empty: the store no longer
// holds those messages.
//
// A sealed, uncompressed block is read through its block indexes when there are current
// ones: by a query for exact subjects through its SubjectIndex (only those subjects'
// records), by a query with a sequence or time range through its BlockPositions (only the
// part of the block the range can be in). Without one such a query reads the whole block and
// writes the index for the next query (a cache that cannot be written is done without).
//
// Every record's hash is checked. When a slice's walk is done the reader accounts for it (as
// jsstore.spark.directory does): the sequences of its damaged stretches, those after the
// block's early end, and, for a slice index.db describes, any it lists that the block does
// not hold, fail the task with DataLoss naming them (a second walk names them exactly)
// unless fail_on_data_loss=false; a block that does not decompress loses its range. A read
// through a block index is held to its damaged stretches only (it reads part of a block).
package jsstore.spark;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import jsstore.spark.BlockIndexFiles.BlockStamp;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

final class BlockPartitionReader implements PartitionReader<ColumnarBatch> {
    private final BlockPartition partition;
    private final ScanFilter scan;
    private final String[] columns;
    private final int batchRows;
    private final SubjectMatch match;
    private final Path indexDir;                    // null: no block indexes
    private final List<String> subjects;           // the exact subjects asked for, or null
    private final boolean ranged;                   // a sequence or time range is asked for
    private final boolean failOnDataLoss;
    private BlockSlice walking;                     // the slice the walker reads
    private byte[] walkingBytes;                    // its bytes [0, walkingSize)
    private int walkingSize;
    private boolean walkingWhole;                   // the whole block (no block index)
    private BlockStamp walkingStamp;                // the file's stamp, for a whole read
    private boolean walkingHashed;                  // its records' hashes are checked
    private final ReadScratch scratch;              // the buffer and vectors, while open
    private final WritableColumnVector[] vectors;
    private final ColumnarBatch batch;
    private int next;                               // the next slice to open
    private BlockColumns walker;
    private long bytesRead;
    private long recordsWalked;
    private int fileSize;                           // bytes of the last block file read
    private long largestBatchBytes;
    private boolean closed;

    BlockPartitionReader(BlockPartition partition, ScanFilter scan, String[] columns, int batchRows,
                         String blockIndexDir, boolean failOnDataLoss) {
        this.failOnDataLoss = failOnDataLoss;
        this.partition = partition;
        this.scan = scan;
        this.columns = columns;
        this.batchRows = batchRows;
        this.match = scan.match();
        this.subjects = scan.exact != null ? scan.reducedExact() : null;
        this.ranged = scan.ranged();
        this.indexDir = blockIndexDir != null && (subjects != null || ranged) ? Paths.get(blockIndexDir) : null;
        this.scratch = ReadScratch.take();
        this.vectors = scratch.vectors(columns, batchRows);
        this.batch = new ColumnarBatch(vectors);
    }

    @Override
    public boolean next() throws IOException {
        while (true) {
            if (walker == null && !open()) {
                return false;
            }
            int rows = walker.nextBatch(vectors, batchRows);
            if (rows > 0) {
                batch.setNumRows(rows);
                return true;
            }
            account();
            retire();
        }
    }

    private boolean open() throws IOException {
        while (next < partition.slices().size()) {
            BlockSlice piece = partition.slices().get(next++);
            Path block = Paths.get(piece.path());
            boolean indexed = indexDir != null && piece.sealed();
            Path bySubject = indexed && subjects != null ? SubjectIndex.location(indexDir, block) : null;
            Path byPosition = indexed && ranged ? BlockPositions.location(indexDir, block) : null;
            byte[] records;
            int size;
            boolean whole = false;
            BlockStamp stamp = null;
            try {
                SubjectIndex.Found found = bySubject == null ? null : subjectRecords(bySubject, block);
                BlockPositions.Part part = found != null || byPosition == null ? null
                        : rangePart(byPosition, block, piece);
                if (found != null) {
                    records = found.records();
                    size = records.length;
                    bytesRead += found.bytesRead();
                } else if (part != null) {
                    stamp = BlockStamp.of(block);
                    records = readPart(block, part);
                    size = fileSize;
                    bytesRead += part.indexBytes() + fileSize;
                } else {
                    whole = true;
                    stamp = BlockStamp.of(block);
                    records = readBlock(block, piece);
                    if (records == null) {
                        continue;                            // does not decompress: lost
                    }
                    size = fileSize;
                    bytesRead += fileSize;
                    if (records != scratch.buffer(0)) {      // compressed: decompressed whole
                        size = records.length;
                    } else if (stamp.size() == fileSize) {
                        byte[] plain = records;
                        int plainSize = size;
                        BlockStamp read = stamp;
                        if (bySubject != null) {
                            writeIndex(() -> SubjectIndex.write(bySubject, plain, plainSize, read));
                        }
                        if (byPosition != null) {
                            writeIndex(() -> BlockPositions.write(byPosition, plain, plainSize, read));
                        }
                    }
                }
            } catch (NoSuchFileException gone) {
                continue;
            }
            // a block this JVM checked whole, record by record, unchanged since: not hashed
            // again, read whole or in the part a position index gives
            BlockStamp checked = whole && stamp.size() == fileSize ? stamp : null;
            boolean trusted = whole ? checked != null && VerifiedBlocks.verified(piece.path(), checked)
                    : stamp != null && VerifiedBlocks.verified(piece.path(), stamp);
            walker = new BlockColumns(records, size, columns, piece.seqLow(), piece.seqHigh(), scan.timeLow,
                    scan.timeHigh, piece.deleted(), match, trusted ? null : new RecordHash(piece.hashKey()));
            walking = piece;
            walkingBytes = records;
            walkingSize = size;
            walkingWhole = whole;
            walkingStamp = checked;
            walkingHashed = !trusted;
            return true;
        }
        return false;
    }

    /** Block bytes [part.start, part.end) in this reader's buffer (its first fileSize bytes;
     *  fewer when the file is shorter now). */
    private byte[] readPart(Path block, BlockPositions.Part part) throws IOException {
        int length = part.end() - part.start();
        byte[] buf = scratch.buffer(length);
        try (FileChannel ch = FileChannel.open(block, StandardOpenOption.READ)) {
            ByteBuffer into = ByteBuffer.wrap(buf, 0, length);
            BlockIndexFiles.readAt(ch, into, part.start());
            fileSize = into.position();
        }
        return buf;
    }

    /** A block file's bytes in this reader's buffer (its first fileSize bytes), or,
     *  for a file that may be compressed, its plain bytes in an array of their own. */
    private byte[] readBlock(Path block, BlockSlice piece) throws IOException {
        try (FileChannel ch = FileChannel.open(block, StandardOpenOption.READ)) {
            long length = ch.size();
            if (length > Integer.MAX_VALUE - 8) {
                throw new IOException(block + ": a " + length + "-byte block file");
            }
            byte[] buf = scratch.buffer(length);
            ByteBuffer into = ByteBuffer.wrap(buf, 0, (int) length);
            while (into.hasRemaining()) {
                if (ch.read(into) < 0) {
                    break;                                  // cut short while read: what is there
                }
            }
            fileSize = into.position();
            if (fileSize >= 3 && buf[0] == 'c' && buf[1] == 'm' && buf[2] == 'p') {
                try {
                    return plainBytes(block, Arrays.copyOf(buf, fileSize));
                } catch (IOException | RuntimeException undecodable) {
                    lost(piece.path(), "the block does not decompress (" + undecodable.getMessage() + ")",
                            between(piece.seqLow(), piece.seqHigh(), deletedSet(piece)));
                    return null;
                }
            }
            return buf;
        }
    }

    /** The records by a current subject index, or null (none, or one that does not read). */
    private SubjectIndex.Found subjectRecords(Path indexFile, Path block) throws NoSuchFileException {
        try {
            return SubjectIndex.read(indexFile, block, subjects);
        } catch (NoSuchFileException blockGone) {
            throw blockGone;
        } catch (IOException | RuntimeException unusable) {
            return null;
        }
    }

    /** The part of the block a slice's range can be in, by a current position index, or null
     *  (none, or one that does not read). */
    private BlockPositions.Part rangePart(Path indexFile, Path block, BlockSlice piece) throws NoSuchFileException {
        try {
            return BlockPositions.part(indexFile, block, piece.seqLow(), piece.seqHigh(), scan.timeLow, scan.timeHigh);
        } catch (NoSuchFileException blockGone) {
            throw blockGone;
        } catch (IOException | RuntimeException unusable) {
            return null;
        }
    }

    private static byte[] plainBytes(Path block, byte[] raw) throws IOException {
        try {
            return BlockBytes.plain(raw);
        } catch (IOException corrupt) {
            throw new IOException(block + ": " + corrupt.getMessage(), corrupt);
        }
    }

    private interface IndexWrite {
        void run() throws IOException;
    }

    private static void writeIndex(IndexWrite write) {
        try {
            write.run();
        } catch (IOException | RuntimeException unwritable) {
            // a read-only or full cache directory: this query and the next read whole blocks
        }
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        long walked = recordsWalked + (walker != null ? walker.recordsWalked() : 0);
        return new CustomTaskMetric[] {
            ReadMetrics.task(ReadMetrics.BYTES_READ, bytesRead),
            ReadMetrics.task(ReadMetrics.RECORDS_WALKED, walked),
        };
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (walker != null) {
            retire();
        }
        scratch.giveBack(largestBatchBytes);
    }

    private void lost(String path, String problem, long[] missing) {
        if (failOnDataLoss && missing.length > 0) {
            throw new DataLoss(path, problem, missing);
        }
    }

    /** What the finished walk of a slice could not give (see the top). */
    private void account() {
        BlockSlice piece = walking;
        BlockColumns walk = walker;
        boolean shortEnd = walkingWhole && !walk.passedHigh() && walk.lastSeq() < piece.seqHigh();
        long expected = piece.seqHigh() - piece.seqLow() + 1 - piece.deleted().length;
        boolean incomplete = walkingWhole && piece.complete() && walk.accounted() < expected;
        if (walk.holes().isEmpty() && !shortEnd && !incomplete) {
            if (walkingStamp != null && walkingHashed && walk.position() >= walkingSize) {
                VerifiedBlocks.remember(piece.path(), walkingStamp);   // every record checked
            }
            return;
        }
        Set<Long> deleted = deletedSet(piece);
        Set<Long> present = present(piece);
        TreeSet<Long> wanted = new TreeSet<>();
        for (long[] hole : walk.holes()) {
            long last = hole[2] == 0 ? piece.seqHigh() : Math.min(hole[2], piece.seqHigh());
            for (long seq = Math.max(hole[1], piece.seqLow()); seq <= last; seq++) {
                wanted.add(seq);
            }
        }
        if (shortEnd) {
            for (long seq = Math.max(walk.lastSeq() + 1, piece.seqLow()); seq <= piece.seqHigh(); seq++) {
                wanted.add(seq);
            }
        }
        if (incomplete) {
            for (long seq = piece.seqLow(); seq <= piece.seqHigh(); seq++) {
                wanted.add(seq);
            }
        }
        long[] missing = wanted.stream().filter(seq -> !deleted.contains(seq) && !present.contains(seq))
                .mapToLong(Long::longValue).toArray();
        if (missing.length == 0) {
            return;
        }
        String problem;
        if (!walk.holes().isEmpty()) {
            problem = "damaged at byte offset " + walk.holes().get(0)[0] + " of " + walkingSize
                    + " (not a record, or a record whose checksum is wrong)";
        } else if (shortEnd) {
            problem = "the block ends after sequence " + walk.lastSeq() + " (byte " + walk.position()
                    + " of " + walkingSize + ") where its known range goes to " + piece.seqHigh();
        } else {
            problem = "index.db lists sequences this block does not hold";
        }
        lost(piece.path(), problem, missing);
    }

    /** The sequences of the intact message records of the slice's bytes (a second walk). */
    private Set<Long> present(BlockSlice piece) {
        Set<Long> out = new java.util.HashSet<>();
        RecordHash hash = new RecordHash(piece.hashKey());
        byte[] b = walkingBytes;
        int pos = 0;
        long after = 0;
        while (pos < walkingSize) {
            int length = BlockColumns.recordLength(b, pos, walkingSize - pos);
            if (length < 0 || !hash.ok(b, pos, length)) {
                pos = BlockColumns.resync(b, walkingSize, pos + 1, hash, after);
                continue;
            }
            long raw = BlockColumns.rawSeq(b, pos);
            if ((raw & (BlockColumns.SEQ_TOMB_BIT | BlockColumns.SEQ_ERASE_BIT)) == 0) {
                long seq = raw & BlockColumns.SEQ_MASK;
                out.add(seq);
                after = Math.max(after, seq);
            }
            pos += length;
        }
        return out;
    }

    private static Set<Long> deletedSet(BlockSlice piece) {
        Set<Long> out = new java.util.HashSet<>();
        for (long seq : piece.deleted()) {
            out.add(seq);
        }
        return out;
    }

    private static long[] between(long low, long high, Set<Long> deleted) {
        return java.util.stream.LongStream.rangeClosed(low, high)
                .filter(seq -> !deleted.contains(seq)).toArray();
    }

    private void retire() {
        recordsWalked += walker.recordsWalked();
        largestBatchBytes = Math.max(largestBatchBytes, walker.largestBatchBytes());
        walker = null;
    }
}
