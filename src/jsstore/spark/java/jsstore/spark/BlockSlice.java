// Part of one block file to read: sequences [seqLow, seqHigh] minus `deleted` (sorted).
// `sealed`: not the last block file at planning, so no longer appended to. `complete`: every
// one of those sequences must be there (a current index.db says so). `hashKey`: the block's
// record key, every record's hash is checked.
package jsstore.spark;

import java.io.Serializable;

record BlockSlice(String path, long index, long size, long seqLow, long seqHigh, long[] deleted,
                  boolean sealed, boolean complete, byte[] hashKey)
        implements Serializable {}
