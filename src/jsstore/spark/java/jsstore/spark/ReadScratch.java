// A task thread's working memory for block reads, reused from task to task: the buffer block
// files are read into and the column vectors batches are built in. Without it every task
// makes an 8 MiB array a block and vectors grown to a batch's payloads, garbage the collector
// must reclaim between the queries of a session. A reader takes its thread's scratch while it
// is open and gives it back on close, so two readers open in one thread (a cartesian product)
// never share one; vectors that grew past RETAIN_BYTES are not kept.
package jsstore.spark;

import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;

final class ReadScratch {
    static final long RETAIN_BYTES = 64L << 20;
    private static final ThreadLocal<ReadScratch> FREE = new ThreadLocal<>();

    private byte[] buffer = new byte[0];
    private String vectorsKey;                      // batch rows and column names
    private WritableColumnVector[] vectors;

    private ReadScratch() {}

    /** The thread's scratch, or a new one when a reader of this thread holds it. */
    static ReadScratch take() {
        ReadScratch s = FREE.get();
        if (s == null) {
            return new ReadScratch();
        }
        FREE.remove();
        return s;
    }

    /** Back to the thread (kept unless another reader's scratch got there first); batches
     *  of more than RETAIN_BYTES bytes leave their vectors behind. */
    void giveBack(long largestBatchBytes) {
        if (largestBatchBytes > RETAIN_BYTES) {
            dropVectors();
        }
        if (FREE.get() == null) {
            FREE.set(this);
        } else {
            dropVectors();
        }
    }

    /** A buffer of at least `length` bytes (grown by doubling, never shrunk). */
    byte[] buffer(long length) {
        if (buffer.length < length) {
            buffer = new byte[(int) Math.max(length, Math.min(2L * buffer.length, Integer.MAX_VALUE - 8))];
        }
        return buffer;
    }

    /** Vectors for these columns, as large as they grew for earlier batches. */
    WritableColumnVector[] vectors(String[] columns, int batchRows) {
        String key = batchRows + ":" + String.join(",", columns);
        if (!key.equals(vectorsKey)) {
            dropVectors();
            vectors = new WritableColumnVector[columns.length];
            for (int i = 0; i < columns.length; i++) {
                vectors[i] = new OnHeapColumnVector(batchRows, StreamSchema.TABLE.apply(columns[i]).dataType());
            }
            vectorsKey = key;
        }
        return vectors;
    }

    private void dropVectors() {
        if (vectors != null) {
            for (WritableColumnVector v : vectors) {
                v.close();
            }
        }
        vectors = null;
        vectorsKey = null;
    }
}
