// Pushdown of filters and of the columns a query needs, then the scan.
package jsstore.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;

final class StreamScanBuilder implements SupportsPushDownFilters, SupportsPushDownRequiredColumns {
    private final ReadOptions options;
    private final ScanFilter scan = new ScanFilter();
    private final List<Filter> pushed = new ArrayList<>();
    private StructType required;

    StreamScanBuilder(ReadOptions options, StructType schema) {
        this.options = options;
        this.required = schema;
        scan.wildcards.addAll(options.subjectFilter);
    }

    @Override
    public Filter[] pushFilters(Filter[] filters) {
        return new FilterPush(scan).push(filters, pushed);
    }

    @Override
    public Filter[] pushedFilters() {
        return pushed.toArray(new Filter[0]);
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
        required = requiredSchema;
    }

    /** What was pushed so far (read by the bench's floor source, which reads as the scan
     *  would, once). */
    ScanFilter filter() {
        return scan;
    }

    StructType required() {
        return required;
    }

    @Override
    public Scan build() {
        return new StreamScan(options, scan, required);
    }
}
