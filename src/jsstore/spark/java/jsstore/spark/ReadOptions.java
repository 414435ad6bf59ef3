// The options of format("jsstore-jvm"), parsed and checked (the same names and meanings as
// the Python source's, jsstore.spark.options): every name is checked, and one this reader
// does not take (a typo, a streaming option, one only the Python source takes) fails the
// query naming it and listing the valid ones.
package jsstore.spark;

import java.io.Serializable;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
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
    final boolean failOnDataLoss;                   // a damaged or missing block fails the read

    /** The options this reader takes (Spark hands them over lowercased). */
    static final List<String> NAMES = Arrays.asList("path", "stream", "account", "subject_filter",
            "partition_bytes", "batch_rows", "columnar", "block_index", "block_index_dir",
            "fail_on_data_loss");
    private static final List<String> PYTHON_ONLY = Arrays.asList("url", "user", "password",
            "token", "kv", "kv_history", "nats_partition_messages", "nats_batch", "pushdown");
    private static final List<String> STREAMING_ONLY = Arrays.asList("startingoffsets",
            "maxmessagespertrigger");

    private ReadOptions(Map<String, String> options) {
        for (String name : options.keySet()) {
            checkName(name);
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
        subjectFilter = subjectFilters(options.get("subject_filter"));
        partitionBytes = parseLong(options, "partition_bytes", DEFAULT_PARTITION_BYTES, 1, Long.MAX_VALUE);
        batchRows = (int) parseLong(options, "batch_rows", DEFAULT_BATCH_ROWS, 1, MAX_BATCH_ROWS);
        columnar = parseBool(options, "columnar", true);
        blockIndexDir = parseBool(options, "block_index", true) ? indexDir(options) : null;
        failOnDataLoss = parseBool(options, "fail_on_data_loss", true);
    }

    private static void checkName(String name) {
        String key = name.toLowerCase(Locale.ROOT);
        if (NAMES.contains(key)) {
            return;
        }
        String reason;
        if (PYTHON_ONLY.contains(key)) {
            reason = "is taken by format(\"jsstore\") only (KV tables, reads over NATS; this "
                    + "reader reads streams of store directories)";
        } else if (STREAMING_ONLY.contains(key)) {
            reason = "is a streaming option: format(\"jsstore-jvm\") reads in batch only "
                    + "(spark.readStream.format(\"jsstore\") tails a stream)";
        } else {
            reason = "is not an option of format(\"jsstore-jvm\")";
        }
        throw new IllegalArgumentException("option '" + name + "' " + reason
                + "; the options are: " + String.join(", ", NAMES));
    }

    /** The subject_filter option: NATS filters, comma separated, each one nats-server would
     *  take as a filter (tokens separated by '.', none empty, '*' and '>' whole tokens, '>'
     *  only last, no white space). */
    static List<String> subjectFilters(String value) {
        List<String> out = new ArrayList<>();
        if (value == null || value.isEmpty()) {
            return out;
        }
        for (String part : value.split(",", -1)) {
            String filter = part.strip();
            if (!validFilter(filter)) {
                throw new IllegalArgumentException("option 'subject_filter': '" + filter
                        + "' is not a valid NATS subject filter (tokens separated by '.', none "
                        + "empty, '*' a whole token, '>' only as the last token)");
            }
            out.add(filter);
        }
        return out;
    }

    static boolean validFilter(String filter) {
        if (filter.isEmpty()) {
            return false;
        }
        String[] tokens = filter.split("\\.", -1);
        for (int i = 0; i < tokens.length; i++) {
            String token = tokens[i];
            if (token.isEmpty()) {
                return false;
            }
            for (int c = 0; c < token.length(); c++) {
                if (Character.isWhitespace(token.charAt(c))) {
                    return false;
                }
            }
            if (token.equals(">") && i != tokens.length - 1) {
                return false;
            }
        }
        return true;
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
