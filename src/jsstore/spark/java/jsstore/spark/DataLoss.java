/*
 * Messages the store holds that a read cannot give (a damaged or missing block file): the
 * error a read fails with unless fail_on_data_loss=false, worded as the Python source words
 * it (jsstore.spark.planning.Loss), naming the file, what is wrong and the sequences.
 */
package jsstore.spark;

import java.util.ArrayList;
import java.util.List;

final class DataLoss extends RuntimeException {
    static final String RETRY_HINT = "option fail_on_data_loss=false reads what is readable";
    private static final int RANGES_SHOWN = 20;

    /** A loss found while planning (a block file a stale index.db lists, gone). */
    record Loss(String path, String problem, long[] seqs) {}

    DataLoss(String path, String problem, long[] seqs) {
        super("data loss: " + path + ": " + problem + ": " + seqs.length + " message(s) missing, "
                + "sequences " + rangesText(seqs) + " (" + RETRY_HINT + ")");
    }

    /** Sorted sequences as "1-5, 9" (at most 20 runs shown). */
    static String rangesText(long[] sorted) {
        List<String> shown = new ArrayList<>();
        int runs = 0;
        int i = 0;
        while (i < sorted.length) {
            int j = i;
            while (j + 1 < sorted.length && sorted[j + 1] == sorted[j] + 1) {
                j++;
            }
            if (runs++ < RANGES_SHOWN) {
                shown.add(i == j ? Long.toString(sorted[i]) : sorted[i] + "-" + sorted[j]);
            }
            i = j + 1;
        }
        if (runs > RANGES_SHOWN) {
            shown.add("... (" + (runs - RANGES_SHOWN) + " more ranges)");
        }
        return String.join(", ", shown);
    }
}
