// The options of format("jsstore-jvm"), parsed and checked (the same names and meanings as
// the Python source's, jsstore.spark.options; what only the Python source does is refused
// with a message naming it).
package jsstore.spark;

import java.io.Serializable;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

final class ReadOptions implements Serializable {
    static final String DEFAULT_ACCOUNT = "$G";
    static final long DEFAULT_PARTITION_BYTES = 128L * 1024 * 1024;
    static final int DEFAULT_BATCH_ROWS = 4096;     // Spark's own columnar readers' batch size
    static final int MAX_BATCH_ROWS = 1 << 20;

    final String path;
    final String stream;
    final String account;
    final List<String> subjectFilter;
    final long partitionBytes;
    final int batchRows;
    final boolean columnar;                         // false: rows (Spark's row-based plan)
    final String blockIndexDir;                     // null: no per-block indexes

    private ReadOptions(Map<String, String> options) {
        for (String only : new String[] {"url", "kv", "kv_history", "user", "password", "token"}) {
            if (present(options, only)) {
                throw new IllegalArgumentException("option '" + only + "' is not supported by "
                        + "format(\"jsstore-jvm\"), which reads streams of store directories: "
                        + "use format(\"jsstore\") for KV tables and reads over NATS");
            }
        }
        path = get(options, "path");
        stream = get(options, "stream");
        if (path == null) {
            throw new IllegalArgumentException("option 'path' (a store directory) is required");
        }
        if (stream == null) {
            throw new IllegalArgumentException("option 'stream' is required");
        }
        String acc = get(options, "account");
        account = acc == null ? DEFAULT_ACCOUNT : acc;
        subjectFilter = splitList(get(options, "subject_filter"));
        partitionBytes = parseLong(options, "partition_bytes", DEFAULT_PARTITION_BYTES, 1, Long.MAX_VALUE);
        batchRows = (int) parseLong(options, "batch_rows", DEFAULT_BATCH_ROWS, 1, MAX_BATCH_ROWS);
        columnar = parseBool(options, "columnar", true);
        blockIndexDir = parseBool(options, "block_index", true) ? indexDir(options) : null;
    }

    static ReadOptions parse(Map<String, String> options) {
        return new ReadOptions(options);
    }

    Path streamDirectory() {
        return Paths.get(path, "jetstream", account, "streams", stream);
    }

    /** Where per-block indexes (subjects, positions) are kept: option block_index_dir, else
     *  $JSSTORE_BLOCK_INDEX_DIR, else ~/.cache/jsstore/block-index. */
    private static String indexDir(Map<String, String> options) {
        String explicit = get(options, "block_index_dir");
        if (explicit != null) {
            return explicit;
        }
        String env = System.getenv("JSSTORE_BLOCK_INDEX_DIR");
        if (env != null && !env.isEmpty()) {
            return env;
        }
        return Paths.get(System.getProperty("user.home"), ".cache", "jsstore", "block-index").toString();
    }

    private static String get(Map<String, String> options, String name) {
        String value = options.get(name);
        return value == null || value.isEmpty() ? null : value;
    }

    private static boolean present(Map<String, String> options, String name) {
        return get(options, name) != null;
    }

    static List<String> splitList(String value) {
        List<String> out = new ArrayList<>();
        if (value != null) {
            for (String part : value.split(",")) {
                if (!part.strip().isEmpty()) {
                    out.add(part.strip());
                }
            }
        }
        return out;
    }

    private static boolean parseBool(Map<String, String> options, String name, boolean fallback) {
        String value = get(options, name);
        if (value == null) {
            return fallback;
        }
        switch (value.strip().toLowerCase(java.util.Locale.ROOT)) {
            case "true": case "1": case "yes": case "on":
                return true;
            case "false": case "0": case "no": case "off":
                return false;
            default:
                throw new IllegalArgumentException("option '" + name + "': '" + value + "' is not true or false");
        }
    }

    private static long parseLong(Map<String, String> options, String name, long fallback, long min, long max) {
        String value = get(options, name);
        if (value == null) {
            return fallback;
        }
        long number;
        try {
            number = Long.parseLong(value.strip());
        } catch (NumberFormatException bad) {
            throw new IllegalArgumentException("option '" + name + "': '" + value + "' is not an integer");
        }
        if (number < min || number > max) {
            throw new IllegalArgumentException("option '" + name + "': " + number + " is outside "
                    + min + ".." + max);
        }
        return number;
    }
}
