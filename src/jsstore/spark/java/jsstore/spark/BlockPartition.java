// The block slices one Spark task reads, in sequence order.
package jsstore.spark;

import java.util.List;
import org.apache.spark.sql.connector.read.InputPartition;

record BlockPartition(List<BlockSlice> slices) implements InputPartition {
    long bytes() {
        long total = 0;
        for (BlockSlice s : slices) {
            total += s.size();
        }
        return total;
    }
}
