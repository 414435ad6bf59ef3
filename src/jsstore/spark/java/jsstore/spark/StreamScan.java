// The scan of one stream: planned once (on first use, on the driver) into partitions of
// block slices; each task reads its slices as columnar batches.
package jsstore.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

final class StreamScan implements Scan, Batch {
    private final ReadOptions options;
    private final ScanFilter scan;
    private final StructType schema;
    private InputPartition[] planned;
    private long plannedBytes;
    private String source = "";

    StreamScan(ReadOptions options, ScanFilter scan, StructType schema) {
        this.options = options;
        this.scan = scan;
        this.schema = schema;
    }

    @Override
    public StructType readSchema() {
        return schema;
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public String description() {
        plan();
        return "jsstore-jvm stream=" + options.stream + " filter=[" + scan + "] partitions="
                + planned.length + " plannedBytes=" + plannedBytes + " from=" + source;
    }

    private synchronized void plan() {
        if (planned != null) {
            return;
        }
        try {
            Planner.StreamBlocks stream = Planner.load(options.streamDirectory(), options.stream);
            if (options.failOnDataLoss) {
                stream.checkLosses(scan);
            }
            List<BlockSlice> slices = Planner.slices(stream, scan);
            List<List<BlockSlice>> groups = Planner.group(slices,
                    Planner.splitBytes(slices, options.partitionBytes, parallelism()), options.partitionBytes);
            planned = new InputPartition[groups.size()];
            for (int i = 0; i < planned.length; i++) {
                BlockPartition p = new BlockPartition(groups.get(i));
                plannedBytes += p.bytes();
                planned[i] = p;
            }
            source = stream.source();
        } catch (IOException e) {
            throw new UncheckedIOException("planning a read of stream '" + options.stream + "': " + e.getMessage(), e);
        }
    }

    /** The cores a job of this session gets (1 when there is no active session). */
    private static int parallelism() {
        scala.Option<SparkSession> session = SparkSession.getActiveSession();
        if (session.isEmpty()) {
            session = SparkSession.getDefaultSession();
        }
        return session.isEmpty() ? 1 : session.get().sparkContext().defaultParallelism();
    }

    @Override
    public InputPartition[] planInputPartitions() {
        plan();
        return planned;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new BlockReaderFactory(scan, schema.fieldNames(), options.batchRows, options.columnar,
                options.blockIndexDir, options.failOnDataLoss);
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return ReadMetrics.supported();
    }

    @Override
    public CustomTaskMetric[] reportDriverMetrics() {
        plan();
        return new CustomTaskMetric[] {ReadMetrics.task(ReadMetrics.PLANNED_BYTES, plannedBytes)};
    }
}
