// The scan of one stream: planned once (on first use, on the driver) into partitions of
// block slices; each task reads its slices as columnar batches.
package jsstore.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
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
            List<List<BlockSlice>> groups = Planner.group(Planner.slices(stream, scan), options.partitionBytes);
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

    @Override
    public InputPartition[] planInputPartitions() {
        plan();
        return planned;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new BlockReaderFactory(scan, schema.fieldNames(), options.batchRows, options.columnar,
                options.subjectIndexDir);
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
