// Part of one block file to read: sequences [seqLow, seqHigh] minus `deleted` (sorted).
// `sealed`: not the last block file at planning, so no longer appended to.
package jsstore.spark;

import java.io.Serializable;

record BlockSlice(String path, long index, long size, long seqLow, long seqHigh, long[] deleted,
                  boolean sealed)
        implements Serializable {}
