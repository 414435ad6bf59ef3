// One stream of a store directory as a readable table.
package jsstore.spark;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

final class StreamTable implements SupportsRead {
    private final ReadOptions options;
    private final StructType schema;

    StreamTable(ReadOptions options, StructType schema) {
        this.options = options;
        this.schema = schema;
    }

    @Override
    public String name() {
        return "jsstore stream " + options.stream;
    }

    @Override
    public StructType schema() {
        return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap ignored) {
        return new StreamScanBuilder(options, schema);
    }
}
