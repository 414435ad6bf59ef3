// Makes each task's reader: columnar batches, or rows drawn from them.
package jsstore.spark;

import java.io.IOException;
import java.util.Iterator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.vectorized.ColumnarBatch;

final class BlockReaderFactory implements PartitionReaderFactory {
    private final ScanFilter scan;
    private final String[] columns;
    private final int batchRows;
    private final boolean columnar;
    private final String blockIndexDir;
    private final boolean failOnDataLoss;

    BlockReaderFactory(ScanFilter scan, String[] columns, int batchRows, boolean columnar,
                       String blockIndexDir, boolean failOnDataLoss) {
        this.failOnDataLoss = failOnDataLoss;
        this.scan = scan;
        this.columns = columns;
        this.batchRows = batchRows;
        this.columnar = columnar;
        this.blockIndexDir = blockIndexDir;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return columnar;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        return new BlockPartitionReader((BlockPartition) partition, scan, columns, batchRows, blockIndexDir,
                failOnDataLoss);
    }

    /** Rows, for a plan that asks for them: the columnar batches walked row by row. */
    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        BlockPartitionReader batches = new BlockPartitionReader((BlockPartition) partition, scan, columns, batchRows, blockIndexDir,
                failOnDataLoss);
        return new PartitionReader<InternalRow>() {
            private Iterator<InternalRow> rows;
            private InternalRow current;

            @Override
            public boolean next() throws IOException {
                while (rows == null || !rows.hasNext()) {
                    if (!batches.next()) {
                        return false;
                    }
                    rows = batches.get().rowIterator();
                }
                current = rows.next();
                return true;
            }

            @Override
            public InternalRow get() {
                return current;
            }

            @Override
            public CustomTaskMetric[] currentMetricsValues() {
                return batches.currentMetricsValues();
            }

            @Override
            public void close() {
                batches.close();
            }
        };
    }
}
