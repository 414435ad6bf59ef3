// One task's read: its block slices in order, each file read whole (decompressed when it is
// s2 or LZ4 compressed) and walked by BlockColumns into reused on-heap column vectors. A
// block removed since planning (limits, compaction) reads as empty: the store no longer
// holds those messages.
//
// A query for exact subjects reads a sealed, uncompressed block through its subject index
// (SubjectIndex) when there is a current one: only those subjects' records; otherwise it
// reads the whole block and writes the index for the next query (a cache that cannot be
// written is done without).
package jsstore.spark;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
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
    private final Path indexDir;                    // null: no subject indexes
    private final List<String> subjects;           // the exact subjects asked for, or null
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
                         String subjectIndexDir) {
        this.partition = partition;
        this.scan = scan;
        this.columns = columns;
        this.batchRows = batchRows;
        this.match = scan.match();
        this.subjects = scan.exact != null ? scan.reducedExact() : null;
        this.indexDir = subjectIndexDir != null && subjects != null ? Paths.get(subjectIndexDir) : null;
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
            retire();
        }
    }

    private boolean open() throws IOException {
        while (next < partition.slices().size()) {
            BlockSlice piece = partition.slices().get(next++);
            Path block = Paths.get(piece.path());
            Path indexFile = indexDir != null && piece.sealed() ? SubjectIndex.location(indexDir, block) : null;
            byte[] records;
            int size;
            try {
                SubjectIndex.Found found = indexFile == null ? null : indexed(indexFile, block);
                if (found != null) {
                    records = found.records();
                    size = records.length;
                    bytesRead += found.bytesRead();
                } else {
                    SubjectIndex.BlockStamp stamp = indexFile == null ? null : SubjectIndex.BlockStamp.of(block);
                    records = readBlock(block);
                    size = fileSize;
                    bytesRead += fileSize;
                    if (records != scratch.buffer(0)) {      // compressed: decompressed whole
                        size = records.length;
                    } else if (stamp != null && stamp.size() == fileSize) {
                        writeIndex(indexFile, records, size, stamp);
                    }
                }
            } catch (NoSuchFileException gone) {
                continue;
            }
            walker = new BlockColumns(records, size, columns, piece.seqLow(), piece.seqHigh(), scan.timeLow,
                    scan.timeHigh, piece.deleted(), match);
            return true;
        }
        return false;
    }

    /** A block file's bytes in this reader's buffer (its first fileSize bytes), or,
     *  for a file that may be compressed, its plain bytes in an array of their own. */
    private byte[] readBlock(Path block) throws IOException {
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
                return plainBytes(block, Arrays.copyOf(buf, fileSize));
            }
            return buf;
        }
    }

    /** The records by a current subject index, or null (none, or one that does not read). */
    private SubjectIndex.Found indexed(Path indexFile, Path block) throws NoSuchFileException {
        try {
            return SubjectIndex.read(indexFile, block, subjects);
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

    private static void writeIndex(Path indexFile, byte[] plain, int size, SubjectIndex.BlockStamp stamp) {
        try {
            SubjectIndex.write(indexFile, plain, size, stamp);
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

    private void retire() {
        recordsWalked += walker.recordsWalked();
        largestBatchBytes = Math.max(largestBatchBytes, walker.largestBatchBytes());
        walker = null;
    }
}
