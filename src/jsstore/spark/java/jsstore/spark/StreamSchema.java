// The table shape of a stream: seq BIGINT, subject STRING, time TIMESTAMP, time_ns BIGINT,
// headers MAP<STRING, ARRAY<STRING>>, data BINARY (as jsstore.spark.arrow documents: time
// in microseconds, time_ns exact, headers null without a header block, a repeated key keeps
// every value in order).
package jsstore.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

final class StreamSchema {
    static final DataType HEADERS = DataTypes.createMapType(DataTypes.StringType,
            DataTypes.createArrayType(DataTypes.StringType, true), true);
    static final StructType TABLE = new StructType()
            .add("seq", DataTypes.LongType, true)
            .add("subject", DataTypes.StringType, true)
            .add("time", DataTypes.TimestampType, true)
            .add("time_ns", DataTypes.LongType, true)
            .add("headers", HEADERS, true)
            .add("data", DataTypes.BinaryType, true);

    private StreamSchema() {}

    /** A user schema must name columns of the table with their types. */
    static StructType checked(StructType schema) {
        if (schema == null) {
            return TABLE;
        }
        List<String> bad = new ArrayList<>();
        for (StructField field : schema.fields()) {
            List<String> names = List.of(TABLE.fieldNames());
            if (!names.contains(field.name())
                    || !TABLE.apply(field.name()).dataType().sameType(field.dataType())) {
                bad.add(field.name() + " " + field.dataType().simpleString());
            }
        }
        if (!bad.isEmpty()) {
            throw new IllegalArgumentException("unknown column(s) " + bad + "; the table has "
                    + TABLE.toDDL());
        }
        return schema;
    }
}
