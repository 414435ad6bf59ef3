// The floor of the JVM reader in Spark, for bench/spark.py: format("jsstore.spark.FloorSource")
// takes format("jsstore-jvm")'s options, pushdown and column pruning and plans the very same
// partitions, but a task reads its partition once per JVM and from then on hands Spark the
// batches it kept. What such a query costs is Spark's part of the read alone (the query, the
// stage of tasks, rows made from the batches and consumed): no reader of these partitions
// can go below it.
package jsstore.spark;

import java.io.IOException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.sql.vectorized.ColumnarBatch;

public final class FloorSource implements TableProvider {
    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return StreamSchema.TABLE;
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        ReadOptions options = ReadOptions.parse(new CaseInsensitiveStringMap(properties));
        StructType checked = StreamSchema.checked(schema);
        return new SupportsRead() {
            @Override
            public String name() {
                return "jsstore floor " + options.stream;
            }

            @Override
            public StructType schema() {
                return checked;
            }

            @Override
            public Set<TableCapability> capabilities() {
                return EnumSet.of(TableCapability.BATCH_READ);
            }

            @Override
            public ScanBuilder newScanBuilder(CaseInsensitiveStringMap ignored) {
                return new Builder(new StreamScanBuilder(options, checked), options.batchRows);
            }
        };
    }

    /** The reader's own builder, whose scan plans the partitions. */
    private static final class Builder implements SupportsPushDownFilters, SupportsPushDownRequiredColumns {
        private final StreamScanBuilder real;
        private final int batchRows;

        Builder(StreamScanBuilder real, int batchRows) {
            this.real = real;
            this.batchRows = batchRows;
        }

        @Override
        public Filter[] pushFilters(Filter[] filters) {
            return real.pushFilters(filters);
        }

        @Override
        public Filter[] pushedFilters() {
            return real.pushedFilters();
        }

        @Override
        public void pruneColumns(StructType requiredSchema) {
            real.pruneColumns(requiredSchema);
        }

        @Override
        public Scan build() {
            Scan scan = real.build();
            Kept kept = new Kept(real.filter(), real.required().fieldNames(), batchRows);
            return new Scan() {
                @Override
                public StructType readSchema() {
                    return scan.readSchema();
                }

                @Override
                public String description() {
                    return "floor of " + scan.description();
                }

                @Override
                public Batch toBatch() {
                    Batch batch = scan.toBatch();
                    return new Batch() {
                        @Override
                        public InputPartition[] planInputPartitions() {
                            return batch.planInputPartitions();
                        }

                        @Override
                        public PartitionReaderFactory createReaderFactory() {
                            return kept;
                        }
                    };
                }
            };
        }
    }

    /** Each partition's batches, read once per JVM (by the core's walk, every block whole)
     *  and handed out again to every later task of the same partition and columns. */
    private static final class Kept implements PartitionReaderFactory {
        private static final Map<String, List<ColumnarBatch>> BUILT = new ConcurrentHashMap<>();
        private final ScanFilter scan;
        private final String[] columns;
        private final int batchRows;

        Kept(ScanFilter scan, String[] columns, int batchRows) {
            this.scan = scan;
            this.columns = columns;
            this.batchRows = batchRows;
        }

        @Override
        public boolean supportColumnarReads(InputPartition partition) {
            return true;
        }

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            throw new UnsupportedOperationException("the floor source reads columnar batches only");
        }

        @Override
        public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
            BlockPartition blocks = (BlockPartition) partition;
            StringBuilder key = new StringBuilder(String.join(",", columns)).append('|').append(scan)
                    .append('|').append(batchRows);
            for (BlockSlice s : blocks.slices()) {
                key.append('|').append(s.path()).append(':').append(s.seqLow()).append('-').append(s.seqHigh());
            }
            List<ColumnarBatch> batches = BUILT.computeIfAbsent(key.toString(), k -> read(blocks));
            return new PartitionReader<ColumnarBatch>() {
                private int next = -1;

                @Override
                public boolean next() {
                    return ++next < batches.size();
                }

                @Override
                public ColumnarBatch get() {
                    return batches.get(next);
                }

                @Override
                public void close() {}
            };
        }

        private List<ColumnarBatch> read(BlockPartition blocks) {
            List<ColumnarBatch> out = new ArrayList<>();
            try {
                for (BlockSlice s : blocks.slices()) {
                    BlockColumns walk = new BlockColumns(BlockBytes.readPlain(Paths.get(s.path())), columns,
                            s.seqLow(), s.seqHigh(), scan.timeLow, scan.timeHigh, s.deleted(), scan.match());
                    while (true) {
                        WritableColumnVector[] vectors = new WritableColumnVector[columns.length];
                        for (int i = 0; i < columns.length; i++) {
                            vectors[i] = new OnHeapColumnVector(batchRows,
                                    StreamSchema.TABLE.apply(columns[i]).dataType());
                        }
                        int rows = walk.nextBatch(vectors, batchRows);
                        if (rows < 0) {
                            break;
                        }
                        out.add(new ColumnarBatch(vectors, rows));
                    }
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            return out;
        }
    }
}
