/*
 * A test and measurement driver for BlockColumns, BlockSummary and SubjectMatch (not used by
 * the data source).  Reads commands from stdin, one JSON object a line, and writes one JSON
 * line per command:
 *   {"op": "read", "path", "columns", "seq_low", "seq_high", "time_low", "time_high",
 *    "deleted", "exact" (list or null), "prefixes", "wildcards", "batch"}
 *       -> {"rows": [{column: value}], "batches": [row counts], "walked", "emitted"}; bytes
 *          (subject, data, header keys and values) as hex, headers as an object of lists
 *          or null.  The rows are read back from the Spark column vectors.
 *   {"op": "summary", "path"} -> the BlockSummary fields
 *   {"op": "match", "exact", "prefixes", "wildcards", "subjects"} -> {"accepts": [bool]}
 *   {"op": "bench", "path", "columns", "reps", "batch", filters as in "read"} -> rows and
 *       records walked a pass, the median rows/s of the timed passes (wall and thread CPU),
 *       after untimed warm-up passes
 *   {"op": "scratch"} -> what ReadScratch does in one thread (taken while another reader
 *       holds it, given back, vectors for other columns, vectors grown past its limit)
 * The block files must be plain (uncompressed).
 */
package jsstore.spark;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;

final class ColumnsInspect {
    // non-ASCII escaped: a subject's lone surrogates (BlockSummary.decode) survive the trip
    private static final ObjectMapper JSON = JsonMapper.builder()
        .enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();
    private static final HexFormat HEX = HexFormat.of();

    private ColumnsInspect() {
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode cmd = JSON.readTree(line);
            String op = cmd.path("op").asText();
            ObjectNode answer;
            switch (op) {
                case "read": answer = read(cmd); break;
                case "summary": answer = summary(cmd); break;
                case "match": answer = match(cmd); break;
                case "bench": answer = bench(cmd); break;
                case "scratch": answer = scratch(); break;
                default: throw new IllegalArgumentException("unknown op: " + op);
            }
            out.println(JSON.writeValueAsString(answer));
            out.flush();
        }
    }

    static DataType typeOf(String column) {
        switch (column) {
            case "seq":
            case "time_ns":
                return DataTypes.LongType;
            case "time": return DataTypes.TimestampType;
            case "subject": return DataTypes.StringType;
            case "data": return DataTypes.BinaryType;
            case "headers":
                return DataTypes.createMapType(DataTypes.StringType,
                    DataTypes.createArrayType(DataTypes.StringType, true), true);
            default: throw new IllegalArgumentException("not a stream column: " + column);
        }
    }

    private static String[] strings(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        String[] out = new String[node.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = node.get(i).asText();
        }
        return out;
    }

    private static List<String> list(JsonNode node) {
        String[] items = strings(node);
        return items == null ? null : Arrays.asList(items);
    }

    private static SubjectMatch matchOf(JsonNode cmd) {
        return new SubjectMatch(list(cmd.get("exact")), list(cmd.get("prefixes")),
                                list(cmd.get("wildcards")));
    }

    private static long longOr(JsonNode cmd, String name, long fallback) {
        JsonNode v = cmd.get(name);
        return v == null || v.isNull() ? fallback : v.asLong();
    }

    private static WritableColumnVector[] vectors(String[] columns, int capacity) {
        WritableColumnVector[] out = new WritableColumnVector[columns.length];
        for (int i = 0; i < columns.length; i++) {
            out[i] = new OnHeapColumnVector(capacity, typeOf(columns[i]));
        }
        return out;
    }

    private static BlockColumns walker(byte[] plain, String[] columns, JsonNode cmd) {
        JsonNode del = cmd.get("deleted");
        long[] deleted = new long[del == null ? 0 : del.size()];
        for (int i = 0; i < deleted.length; i++) {
            deleted[i] = del.get(i).asLong();
        }
        return new BlockColumns(plain, columns, longOr(cmd, "seq_low", 0),
                                longOr(cmd, "seq_high", BlockColumns.SEQ_MASK),
                                longOr(cmd, "time_low", Long.MIN_VALUE),
                                longOr(cmd, "time_high", Long.MAX_VALUE), deleted, matchOf(cmd));
    }

    private static ObjectNode read(JsonNode cmd) throws IOException {
        byte[] plain = Files.readAllBytes(Paths.get(cmd.get("path").asText()));
        String[] columns = strings(cmd.get("columns"));
        int batch = (int) longOr(cmd, "batch", 4096);
        BlockColumns walker = walker(plain, columns, cmd);
        WritableColumnVector[] vecs = vectors(columns, Math.max(batch, 1));
        ObjectNode answer = JSON.createObjectNode();
        ArrayNode rows = answer.putArray("rows");
        ArrayNode batches = answer.putArray("batches");
        int n;
        while ((n = walker.nextBatch(vecs, batch)) >= 0) {
            batches.add(n);
            for (int r = 0; r < n; r++) {
                ObjectNode row = rows.addObject();
                for (int c = 0; c < columns.length; c++) {
                    putValue(row, columns[c], vecs[c], r);
                }
            }
            if (n == 0) {
                break;                       // batch 0: the walk cannot advance
            }
        }
        answer.put("walked", walker.recordsWalked());
        answer.put("emitted", walker.rowsEmitted());
        return answer;
    }

    private static void putValue(ObjectNode row, String column, WritableColumnVector v, int r) {
        switch (column) {
            case "seq":
            case "time":
            case "time_ns":
                row.put(column, v.getLong(r));
                break;
            case "subject":
                row.put(column, HEX.formatHex(v.getUTF8String(r).getBytes()));
                break;
            case "data":
                row.put(column, HEX.formatHex(v.getBinary(r)));
                break;
            default:
                if (v.isNullAt(r)) {
                    row.putNull(column);
                    break;
                }
                ObjectNode map = row.putObject(column);
                ColumnarMap m = v.getMap(r);
                for (int i = 0; i < m.numElements(); i++) {
                    ArrayNode vals = map.putArray(HEX.formatHex(m.keyArray().getUTF8String(i).getBytes()));
                    ColumnarArray list = m.valueArray().getArray(i);
                    for (int j = 0; j < list.numElements(); j++) {
                        vals.add(HEX.formatHex(list.getUTF8String(j).getBytes()));
                    }
                }
                break;
        }
    }

    private static ObjectNode scratch() {
        String[] columns = {"seq", "data"};
        ObjectNode out = JSON.createObjectNode();
        ReadScratch first = ReadScratch.take();
        ReadScratch second = ReadScratch.take();            // while the first is held
        out.put("another_while_held", second != first);
        WritableColumnVector[] vectors = first.vectors(columns, 16);
        byte[] buffer = first.buffer(100);
        first.giveBack(0);
        ReadScratch again = ReadScratch.take();
        out.put("the_same_after_give_back", again == first);
        out.put("its_vectors_kept", again.vectors(columns, 16) == vectors);
        out.put("its_buffer_kept", again.buffer(50) == buffer);
        out.put("a_buffer_grows", again.buffer(1000).length >= 1000);
        WritableColumnVector[] seqOnly = again.vectors(new String[] {"seq"}, 16);
        out.put("new_vectors_for_other_columns", seqOnly != vectors && seqOnly.length == 1);
        again.giveBack(ReadScratch.RETAIN_BYTES + 1);        // its batches grew past the limit
        ReadScratch third = ReadScratch.take();
        out.put("large_vectors_dropped", third == again && third.vectors(new String[] {"seq"}, 16) != seqOnly);
        second.giveBack(0);                                  // the thread has none: kept
        out.put("the_other_kept_when_free", ReadScratch.take() == second);
        return out;
    }

    private static ObjectNode summary(JsonNode cmd) throws IOException {
        BlockSummary s = BlockSummary.of(Files.readAllBytes(Paths.get(cmd.get("path").asText())));
        ObjectNode answer = JSON.createObjectNode();
        answer.put("msgs", s.msgs);
        answer.put("first_seq", s.firstSeq);
        answer.put("last_seq", s.lastSeq);
        answer.put("first_ts", s.firstTs);
        answer.put("last_ts", s.lastTs);
        answer.put("max_seq", s.maxSeq);
        ArrayNode tombs = answer.putArray("tombstones");
        for (long t : s.tombstones) {
            tombs.add(t);
        }
        ArrayNode subjects = answer.putArray("subjects");
        for (String subject : s.subjects) {
            subjects.add(subject);
        }
        answer.put("walked_bytes", s.walkedBytes);
        ArrayNode holes = answer.putArray("holes");
        for (long[] hole : s.holes) {
            ArrayNode one = holes.addArray();
            for (long value : hole) {
                one.add(value);
            }
        }
        return answer;
    }

    private static ObjectNode match(JsonNode cmd) {
        SubjectMatch m = matchOf(cmd);
        ObjectNode answer = JSON.createObjectNode();
        ArrayNode accepts = answer.putArray("accepts");
        for (JsonNode subject : cmd.get("subjects")) {
            accepts.add(m.accepts(subject.asText()));
        }
        return answer;
    }

    private static ObjectNode bench(JsonNode cmd) throws IOException {
        byte[] plain = Files.readAllBytes(Paths.get(cmd.get("path").asText()));
        String[] columns = strings(cmd.get("columns"));
        int batch = (int) longOr(cmd, "batch", 4096);
        int reps = (int) longOr(cmd, "reps", 20);
        WritableColumnVector[] vecs = vectors(columns, batch);
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long[] perPass = null;                                      // rows, records walked
        for (int i = 0; i < Math.max(3, reps / 2); i++) {          // warm-up: JIT
            perPass = pass(plain, columns, cmd, vecs, batch);
        }
        long rowsPerPass = perPass[0];
        List<Double> wall = new ArrayList<>();
        List<Double> cpu = new ArrayList<>();
        for (int i = 0; i < reps; i++) {
            long c0 = threads.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            pass(plain, columns, cmd, vecs, batch);
            long t1 = System.nanoTime();
            long c1 = threads.getCurrentThreadCpuTime();
            wall.add(rowsPerPass * 1e9 / Math.max(1, t1 - t0));
            cpu.add(rowsPerPass * 1e9 / Math.max(1, c1 - c0));
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.put("rows", rowsPerPass);
        answer.put("walked", perPass[1]);
        answer.put("bytes", plain.length);
        answer.put("reps", reps);
        answer.put("wall_rows_per_s", median(wall));
        answer.put("cpu_rows_per_s", median(cpu));
        return answer;
    }

    private static long[] pass(byte[] plain, String[] columns, JsonNode cmd,
                               WritableColumnVector[] vecs, int batch) {
        BlockColumns walker = walker(plain, columns, cmd);
        long rows = 0;
        int n;
        while ((n = walker.nextBatch(vecs, batch)) > 0) {
            rows += n;
        }
        return new long[] {rows, walker.recordsWalked()};
    }

    private static double median(List<Double> xs) {
        List<Double> sorted = new ArrayList<>(xs);
        sorted.sort(null);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
