// The read's own metrics, shown in Spark's UI and query plans: block bytes read by the
// tasks (file sizes, compressed size for compressed blocks), records walked, and the
// bytes the planner kept after pruning.
package jsstore.spark;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

public final class ReadMetrics {
    static final String BYTES_READ = "blockBytesRead";
    static final String RECORDS_WALKED = "recordsWalked";
    static final String PLANNED_BYTES = "plannedBlockBytes";

    private ReadMetrics() {}

    public static final class BytesRead extends CustomSumMetric {
        @Override public String name() { return BYTES_READ; }
        @Override public String description() { return "block bytes read"; }
    }

    public static final class RecordsWalked extends CustomSumMetric {
        @Override public String name() { return RECORDS_WALKED; }
        @Override public String description() { return "records walked"; }
    }

    public static final class PlannedBytes extends CustomSumMetric {
        @Override public String name() { return PLANNED_BYTES; }
        @Override public String description() { return "block bytes planned"; }
    }

    static CustomMetric[] supported() {
        return new CustomMetric[] {new BytesRead(), new RecordsWalked(), new PlannedBytes()};
    }

    static CustomTaskMetric task(String name, long value) {
        return new CustomTaskMetric() {
            @Override public String name() { return name; }
            @Override public long value() { return value; }
        };
    }
}
