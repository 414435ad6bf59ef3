// One task's read: its block slices in order, each file read whole (decompressed when it is
// s2 or LZ4 compressed) and walked by BlockColumns into reused on-heap column vectors. A
// block removed since planning (limits, compaction) reads as empty: the store no longer
// holds those messages.
package jsstore.spark;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Paths;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

final class BlockPartitionReader implements PartitionReader<ColumnarBatch> {
    private final BlockPartition partition;
    private final ScanFilter scan;
    private final String[] columns;
    private final int batchRows;
    private final SubjectMatch match;
    private final WritableColumnVector[] vectors;
    private final ColumnarBatch batch;
    private int next;                               // the next slice to open
    private BlockColumns walker;
    private long bytesRead;
    private long recordsWalked;

    BlockPartitionReader(BlockPartition partition, ScanFilter scan, String[] columns, int batchRows) {
        this.partition = partition;
        this.scan = scan;
        this.columns = columns;
        this.batchRows = batchRows;
        this.match = scan.match();
        this.vectors = new WritableColumnVector[columns.length];
        for (int i = 0; i < columns.length; i++) {
            vectors[i] = new OnHeapColumnVector(batchRows, StreamSchema.TABLE.apply(columns[i]).dataType());
        }
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
            recordsWalked += walker.recordsWalked();
            walker = null;
        }
    }

    private boolean open() throws IOException {
        while (next < partition.slices().size()) {
            BlockSlice piece = partition.slices().get(next++);
            byte[] plain;
            try {
                plain = BlockBytes.readPlain(Paths.get(piece.path()));
            } catch (NoSuchFileException gone) {
                continue;
            }
            bytesRead += piece.size();
            walker = new BlockColumns(plain, columns, piece.seqLow(), piece.seqHigh(), scan.timeLow,
                    scan.timeHigh, piece.deleted(), match);
            return true;
        }
        return false;
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
        walker = null;
        for (ColumnVector v : vectors) {
            v.close();
        }
    }
}
