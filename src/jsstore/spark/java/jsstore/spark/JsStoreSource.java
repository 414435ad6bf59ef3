// format("jsstore-jvm"): the JVM reader of streams in jsstore / nats-server store
// directories. It gives the same rows as the Python source format("jsstore"), planned and
// read in the JVM (no Python worker), with filter pushdown and column pruning.
package jsstore.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

public final class JsStoreSource implements TableProvider, DataSourceRegister {
    public static final String SHORT_NAME = "jsstore-jvm";

    @Override
    public String shortName() {
        return SHORT_NAME;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return StreamSchema.TABLE;
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true;                                // a user schema naming a subset of columns
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        ReadOptions options = ReadOptions.parse(new CaseInsensitiveStringMap(properties));
        return new StreamTable(options, StreamSchema.checked(schema));
    }
}
