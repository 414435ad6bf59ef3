// Part of one block file to read: sequences [seqLow, seqHigh] minus `deleted` (sorted).
package jsstore.spark;

import java.io.Serializable;

record BlockSlice(String path, long index, long size, long seqLow, long seqHigh, long[] deleted)
        implements Serializable {}
