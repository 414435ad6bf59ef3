/*
 * Rows of one plain (decompressed) block file written straight into Spark column vectors:
 * the JVM twin of the core's BlockColumns (src/jsstore/_core/columns/arrowblock.pxd), with the same
 * row choice and the same values, so format("jsstore-jvm") reads exactly what the Python
 * source reads.
 *
 * Which records become rows:
 *   - tombstones and erased / skip records never do;
 *   - only sequences in [seqLow, seqHigh] (the walk stops past seqHigh: a block's message
 *     records are in ascending sequence order);
 *   - not the sequences listed in `deleted` (ascending: the block's interior deletes);
 *   - only timestamps in [timeLow, timeHigh] (Unix ns, inclusive);
 *   - only subjects the SubjectMatch accepts.
 * With a RecordHash, every record's hash is checked. Bytes that are not a record (lengths
 * that do not hold together) or a record whose hash is wrong are a damaged stretch: noted in
 * holes() and, when hashes are checked, walked past to the next intact record; zero-filled
 * space (past a mapped block's end) ends the walk. The walk also accounts for what it saw
 * (lastSeq, accounted, passedHigh) so that its reader can tell what it could not give.
 *
 * Columns (vector i of nextBatch holds columns[i]; each named at most once):
 *   seq      LongType        the stream sequence
 *   subject  StringType      the subject bytes as stored
 *   time     TimestampType   microseconds, floor of ns / 1000 (also below the epoch)
 *   time_ns  LongType        nanoseconds, exact
 *   headers  MapType(StringType, ArrayType(StringType, true), true): null for a message
 *            without a header block; else one entry per distinct key in order of first
 *            appearance with every value in order.  The version / status line is skipped,
 *            lines split on \n (a trailing \r dropped), key = the bytes before the first ':'
 *            (not empty), value trimmed of spaces and tabs; at most 256 lines a message.
 *   data     BinaryType      the payload
 *
 * Speed (this is the reader's hot loop; nothing is allocated per row): the long columns
 * are staged in arrays and copied in once a batch; subjects are staged in 8-byte words and
 * copied in once a batch; a run of rows without headers is set null in one call; the
 * payloads of adjacent rows are copied as one run of block bytes (up to 4 KiB, while still
 * in cache), each row's offset pointing at its payload inside it, so the data vector's byte
 * child also holds the framing between those payloads (bytes of the same batch's rows only:
 * a record that is not a row ends the run).  The walk exists in two copies, with and
 * without subject clauses, so that the JIT's profile of one kind of scan does not slow down
 * the other.
 *
 * Record layout (little-endian): u32 len (bit 31 = has headers), u64 seq (bit 63 erased,
 * bit 62 tombstone), i64 ts, u16 subject length, subject, [u32 header length, headers],
 * payload, u64 hash.  The static helpers below read it for BlockSummary too.
 */
package jsstore.spark;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

import org.apache.spark.sql.execution.vectorized.WritableColumnVector;

final class BlockColumns {
    static final int OFF_SEQ = 4;
    static final int OFF_TS = 12;
    static final int OFF_SUBJ_LEN = 20;
    static final int OFF_SUBJ = 22;
    static final int HASH_SIZE = 8;
    static final int EMPTY_LEN = 30;
    static final int MAX_LEN = 32 * 1024 * 1024;
    static final long SEQ_ERASE_BIT = 0x8000000000000000L;
    static final long SEQ_TOMB_BIT = 0x4000000000000000L;
    static final long SEQ_MASK = 0x3FFFFFFFFFFFFFFFL;
    static final int HEADER_LINES_MAX = 256;
    static final int RUN_FLUSH = 4 * 1024;  // a run of payloads is copied once this long

    private static final VarHandle I16 =
        MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle I32 =
        MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle I64 =
        MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private static final int SEQ = 0;
    private static final int SUBJECT = 1;
    private static final int TIME = 2;
    private static final int TIME_NS = 3;
    private static final int HEADERS = 4;
    private static final int DATA = 5;

    private static final int ROW = 0;          // verdict(): the record is a row,
    private static final int SKIP = 1;         // is not,
    private static final int STOP = 2;         // or ends the walk (past seqHigh)

    private final byte[] buf;
    private final int size;
    private final int[] kinds;               // column kind of each output vector
    private final long seqLow;
    private final long seqHigh;
    private final long timeLow;
    private final long timeHigh;
    private final long[] deleted;
    private final SubjectMatch match;
    private int pos;
    private int deletedPos;
    private boolean finished;
    private long recordsWalked;
    private long rowsEmitted;
    private final RecordHash hash;           // null: hashes not checked
    // what the walk accounted for (read once nextBatch has returned -1):
    private final java.util.List<long[]> holes = new java.util.ArrayList<>();  // {offset, first, last}:
    private long[] openHole;                 // sequences first..last may have been there (last
                                             // 0: no message record after it, up to seqHigh)
    private boolean passedHigh;              // stopped at a record above seqHigh
    private long lastSeq;                    // highest message sequence <= seqHigh walked
    private long accounted;                  // live messages in [seqLow, seqHigh] not deleted

    // the vectors of the batch being built (null: column not asked for)
    private WritableColumnVector seqVec;
    private WritableColumnVector subjectVec;
    private WritableColumnVector timeVec;
    private WritableColumnVector timeNsVec;
    private WritableColumnVector headersVec;
    private WritableColumnVector keysVec;
    private WritableColumnVector listsVec;
    private WritableColumnVector valuesVec;
    private WritableColumnVector dataVec;
    private WritableColumnVector subjectBytes;   // the byte children of subject and data
    private WritableColumnVector dataBytes;
    private byte[] subjects = new byte[4096];    // the batch's subject bytes, copied in at
    private int subjectNext;                 // its end (short copies are cheaper here)
    private int dataNext;                    // bytes copied to dataBytes in the batch
    private int dataRoom;
    // payloads of adjacent rows are copied as one run of block bytes (record framing
    // included) when they make up most of their records: one copy instead of one a row
    private int runStart = -1;               // block offset of the run's first payload
    private int runLast;                     // block offset where its last payload ends
    private int runEnd;                      // block offset where its last record ends
    private long[] seqs = new long[0];       // long columns, copied in at the end of a batch
    private long[] times = new long[0];
    private long[] timesNs = new long[0];
    private int nullsFrom = -1;              // first of the batch's last rows without headers
    private int entries;                     // header map entries in the batch
    private int values;                      // header values in the batch
    private long headerBytes;                // header key and value bytes in the batch
    private long largestBatchBytes;          // the most bytes any batch put in its vectors

    // scratch for one message's header lines
    private final int[] keyOff = new int[HEADER_LINES_MAX];
    private final int[] keyLen = new int[HEADER_LINES_MAX];
    private final int[] valueOff = new int[HEADER_LINES_MAX];
    private final int[] valueLen = new int[HEADER_LINES_MAX];
    private final boolean[] taken = new boolean[HEADER_LINES_MAX];

    BlockColumns(byte[] plain, String[] columns, long seqLow, long seqHigh, long timeLow,
                 long timeHigh, long[] deleted, SubjectMatch match) {
        this(plain, plain.length, columns, seqLow, seqHigh, timeLow, timeHigh, deleted, match);
    }

    /** The block is plain[0, size): a buffer reused from block to block may be longer. */
    BlockColumns(byte[] plain, int size, String[] columns, long seqLow, long seqHigh, long timeLow,
                 long timeHigh, long[] deleted, SubjectMatch match) {
        this(plain, size, columns, seqLow, seqHigh, timeLow, timeHigh, deleted, match, null);
    }

    /** With `hash` (null: none), every record's hash is checked. */
    BlockColumns(byte[] plain, int size, String[] columns, long seqLow, long seqHigh, long timeLow,
                 long timeHigh, long[] deleted, SubjectMatch match, RecordHash hash) {
        this.hash = hash;
        if (size < 0 || size > plain.length) {
            throw new IllegalArgumentException("block size " + size + " of a " + plain.length + "-byte buffer");
        }
        this.buf = plain;
        this.size = size;
        this.kinds = new int[columns.length];
        int seen = 0;
        for (int i = 0; i < columns.length; i++) {
            kinds[i] = kind(columns[i]);
            if ((seen & (1 << kinds[i])) != 0) {
                throw new IllegalArgumentException("column named twice: " + columns[i]);
            }
            seen |= 1 << kinds[i];
        }
        this.seqLow = seqLow;
        this.seqHigh = seqHigh;
        this.timeLow = timeLow;
        this.timeHigh = timeHigh;
        this.deleted = deleted != null ? deleted : new long[0];
        this.match = match != null ? match : new SubjectMatch(null, null, null);
        this.finished = size == 0;
    }

    private static int kind(String column) {
        switch (column) {
            case "seq": return SEQ;
            case "subject": return SUBJECT;
            case "time": return TIME;
            case "time_ns": return TIME_NS;
            case "headers": return HEADERS;
            case "data": return DATA;
            default: throw new IllegalArgumentException("not a stream column: " + column);
        }
    }

    /** Records looked at so far (every kind, the one past seqHigh included). */
    long recordsWalked() {
        return recordsWalked;
    }

    /** The most bytes a batch so far appended to its vectors' byte children. */
    long largestBatchBytes() {
        return largestBatchBytes;
    }

    /** Rows handed out so far. */
    long rowsEmitted() {
        return rowsEmitted;
    }

    /** {offset, first, last} of every damaged stretch (see the class comment). */
    java.util.List<long[]> holes() {
        return holes;
    }

    boolean passedHigh() {
        return passedHigh;
    }

    long lastSeq() {
        return lastSeq;
    }

    long accounted() {
        return accounted;
    }

    /** Byte offset of the next record to walk. */
    int position() {
        return pos;
    }

    /** Whether b[from, to) holds only zeros. */
    static boolean allZero(byte[] b, int from, int to) {
        for (int i = from; i < to; i++) {
            if (b[i] != 0) {
                return false;
            }
        }
        return true;
    }

    /** Offset of the first intact record at or after `start` in b[0, size) (its lengths hold,
     *  its hash is right, and a message record's sequence is above afterSeq), or size. */
    static int resync(byte[] b, int size, int start, RecordHash hash, long afterSeq) {
        for (int at = start; at + EMPTY_LEN <= size; at++) {
            int length = recordLength(b, at, size - at);
            if (length < 0 || !hash.ok(b, at, length)) {
                continue;
            }
            long raw = rawSeq(b, at);
            if ((raw & SEQ_TOMB_BIT) != 0 || (raw & SEQ_MASK) > afterSeq) {
                return at;
            }
        }
        return size;
    }

    /** The record at pos is not intact: the end of the walk when only zeros are left, else
     *  a damaged stretch noted and, with hashes checked, walked past. False: the walk ends. */
    private boolean skipDamage() {
        if (allZero(buf, pos, size)) {
            return false;
        }
        if (openHole == null) {
            openHole = new long[] {pos, lastSeq + 1, 0};
            holes.add(openHole);
        }
        pos = hash == null ? size : resync(buf, size, pos + 1, hash, lastSeq);
        return pos < size;
    }

    /** The length of the intact record at rec, or -1 (lengths or, when checked, hash wrong). */
    private int intactLength(int rec) {
        if (rec >= size) {
            return -1;
        }
        int length = recordLength(buf, rec, size - rec);
        if (length >= 0 && hash != null && !hash.ok(buf, rec, length)) {
            return -1;
        }
        return length;
    }

    // -- record layout -------------------------------------------------------------------------

    static long rawSeq(byte[] b, int rec) {
        return (long) I64.get(b, rec + OFF_SEQ);
    }

    static long ts(byte[] b, int rec) {
        return (long) I64.get(b, rec + OFF_TS);
    }

    static int subjectLength(byte[] b, int rec) {
        return (short) I16.get(b, rec + OFF_SUBJ_LEN) & 0xFFFF;
    }

    /** Receives a block's message records (not tombstones, not erased ones). */
    interface MessageVisitor {
        void message(int rec, int length, long seq);
    }

    /** Hands every message record of plain[0, size) to `visitor` in block order, up to the
     *  first record whose lengths do not hold together. */
    static void forEachMessage(byte[] plain, int size, MessageVisitor visitor) {
        int pos = 0;
        while (pos < size) {
            int length = recordLength(plain, pos, size - pos);
            if (length < 0) {
                return;
            }
            long raw = rawSeq(plain, pos);
            if ((raw & (SEQ_ERASE_BIT | SEQ_TOMB_BIT)) == 0) {
                visitor.message(pos, length, raw);
            }
            pos += length;
        }
    }

    /** The length of the record at rec when its lengths hold together within avail bytes,
     *  else -1 (the walk stops there). */
    static int recordLength(byte[] b, int rec, int avail) {
        if (avail < EMPTY_LEN) {
            return -1;
        }
        int raw = (int) I32.get(b, rec);
        int length = raw & 0x7FFFFFFF;
        if (length < EMPTY_LEN || length > MAX_LEN || length > avail) {
            return -1;
        }
        long p = OFF_SUBJ + (long) subjectLength(b, rec);
        if (p + HASH_SIZE > length) {
            return -1;
        }
        if (raw < 0) {
            if (p + 4 + HASH_SIZE > length) {
                return -1;
            }
            long hdrLen = (int) I32.get(b, rec + (int) p) & 0xFFFFFFFFL;
            if (p + 4 + hdrLen + HASH_SIZE > length) {
                return -1;
            }
        }
        return length;
    }

    // -- the walk ------------------------------------------------------------------------------

    /** Resets the vectors and fills up to maxRows rows (out[i] holds columns[i]); the row
     *  count, or -1 once the block has no more rows. */
    int nextBatch(WritableColumnVector[] out, int maxRows) {
        if (finished) {
            return -1;
        }
        bind(out, maxRows);
        // two copies of the walk, so that the JIT's profile of a scan with subject clauses
        // does not slow down the scans without (one JVM runs both kinds of query)
        int rows = match.matchAll() ? walkAll(maxRows) : walkMatching(maxRows);
        if (rows > 0) {
            finish(rows);
        }
        if (rows == 0 && finished) {
            return -1;
        }
        rowsEmitted += rows;
        return rows;
    }

    /** The record at rec against every filter but the subject clauses. */
    private int verdict(int rec) {
        long raw = (long) I64.get(buf, rec + OFF_SEQ);
        if ((raw & SEQ_TOMB_BIT) != 0) {
            return SKIP;
        }
        long seq = raw & SEQ_MASK;
        if (openHole != null) {
            openHole[2] = seq - 1;
            openHole = null;
        }
        if (seq > seqHigh) {
            passedHigh = true;
            return STOP;
        }
        if (seq > lastSeq) {
            lastSeq = seq;
        }
        if ((raw & SEQ_ERASE_BIT) != 0 || seq < seqLow) {
            return SKIP;
        }
        if (deletedPos < deleted.length) {
            while (deletedPos < deleted.length && deleted[deletedPos] < seq) {
                deletedPos++;
            }
            if (deletedPos < deleted.length && deleted[deletedPos] == seq) {
                return SKIP;
            }
        }
        accounted++;
        long ts = (long) I64.get(buf, rec + OFF_TS);
        return ts < timeLow || ts > timeHigh ? SKIP : ROW;
    }

    private int walkAll(int maxRows) {
        final byte[] b = buf;
        int rows = 0;
        while (rows < maxRows) {
            int rec = pos;
            int length = intactLength(rec);
            if (length < 0) {
                if (rec < size && skipDamage()) {
                    continue;
                }
                finished = true;
                break;
            }
            pos = rec + length;
            recordsWalked++;
            int v = verdict(rec);
            if (v == SKIP) {
                continue;
            }
            if (v == STOP) {
                finished = true;
                break;
            }
            row(rows++, rec, length);
        }
        return rows;
    }

    private int walkMatching(int maxRows) {
        final byte[] b = buf;
        int rows = 0;
        while (rows < maxRows) {
            int rec = pos;
            int length = intactLength(rec);
            if (length < 0) {
                if (rec < size && skipDamage()) {
                    continue;
                }
                finished = true;
                break;
            }
            pos = rec + length;
            recordsWalked++;
            int v = verdict(rec);
            if (v == SKIP) {
                continue;
            }
            if (v == STOP) {
                finished = true;
                break;
            }
            if (match.accepts(b, rec + OFF_SUBJ, subjectLength(b, rec))) {
                row(rows++, rec, length);
            }
        }
        return rows;
    }

    private void bind(WritableColumnVector[] out, int maxRows) {
        if (out.length != kinds.length) {
            throw new IllegalArgumentException(
                "expected " + kinds.length + " vectors, got " + out.length);
        }
        seqVec = subjectVec = timeVec = timeNsVec = headersVec = dataVec = null;
        keysVec = listsVec = valuesVec = null;
        for (int i = 0; i < kinds.length; i++) {
            WritableColumnVector v = out[i];
            v.reset();
            if (maxRows > 0) {
                v.reserve(maxRows);
            }
            switch (kinds[i]) {
                case SEQ: seqVec = v; break;
                case SUBJECT: subjectVec = v; break;
                case TIME: timeVec = v; break;
                case TIME_NS: timeNsVec = v; break;
                case DATA: dataVec = v; break;
                default:
                    headersVec = v;
                    keysVec = v.getChild(0);
                    listsVec = v.getChild(1);
                    valuesVec = listsVec.getChild(0);
                    break;
            }
        }
        int scratch = Math.max(maxRows, 0);
        if (seqVec != null && seqs.length < scratch) {
            seqs = new long[scratch];
        }
        if (timeVec != null && times.length < scratch) {
            times = new long[scratch];
        }
        if (timeNsVec != null && timesNs.length < scratch) {
            timesNs = new long[scratch];
        }
        subjectBytes = subjectVec != null ? subjectVec.arrayData() : null;
        dataBytes = dataVec != null ? dataVec.arrayData() : null;
        subjectNext = dataNext = dataRoom = 0;
        runStart = -1;
        nullsFrom = -1;
        entries = 0;
        values = 0;
        headerBytes = 0;
    }

    /** Copies the long columns in and counts the bytes appended to the byte children. */
    private void finish(int rows) {
        if (seqVec != null) {
            seqVec.putLongs(0, rows, seqs, 0);
        }
        if (timeVec != null) {
            timeVec.putLongs(0, rows, times, 0);
        }
        if (timeNsVec != null) {
            timeNsVec.putLongs(0, rows, timesNs, 0);
        }
        if (subjectBytes != null && subjectNext > 0) {
            subjectBytes.reserve(subjectNext);
            subjectBytes.putBytes(0, subjectNext, subjects, 0);
            subjectBytes.addElementsAppended(subjectNext);
        }
        if (headersVec != null) {
            flushNulls(rows);
        }
        if (dataBytes != null) {
            flushRun();
            dataBytes.addElementsAppended(dataNext);
        }
        largestBatchBytes = Math.max(largestBatchBytes, (long) subjectNext + dataNext + headerBytes);
    }

    /** Room for `need` bytes in a byte child: the room it has now, or more (doubling). */
    private static int room(WritableColumnVector bytes, int room, long need) {
        if (need > Integer.MAX_VALUE - 15) {
            throw new IllegalStateException("more than 2 GiB of bytes in one batch");
        }
        int grown = (int) Math.max(need, Math.min(Integer.MAX_VALUE - 15, 2L * room));
        bytes.reserve(grown);
        return grown;
    }

    // one row, split in small methods so that the JIT inlines them into the walk loop
    private void row(int row, int rec, int length) {
        final byte[] b = buf;
        long ts = (long) I64.get(b, rec + OFF_TS);
        int subjLen = subjectLength(b, rec);
        if (seqVec != null) {
            long seq = (long) I64.get(b, rec + OFF_SEQ);   // flag bits clear: a message
            seqs[row] = seq;
        }
        if (timeVec != null) {
            times[row] = Math.floorDiv(ts, 1000L);
        }
        if (timeNsVec != null) {
            timesNs[row] = ts;
        }
        if (subjectVec != null) {
            subject(row, rec + OFF_SUBJ, subjLen);
        }
        if (dataVec == null && headersVec == null) {
            return;
        }
        int p = rec + OFF_SUBJ + subjLen;
        boolean hasHdr = (int) I32.get(buf, rec) < 0;
        int hdrLen = 0;
        if (hasHdr) {
            hdrLen = (int) I32.get(buf, p);    // fits: recordLength checked it against length
            p += 4;
        }
        if (dataVec != null) {
            data(row, rec, length, p + hdrLen);
        }
        if (headersVec != null) {
            if (hasHdr) {
                headerMap(row, p, hdrLen);
            } else if (nullsFrom < 0) {
                nullsFrom = row;             // rows without headers: null, set a run at once
            }
        }
    }

    private void subject(int row, int src, int len) {
        int at = subjectNext;
        if (at + len + 8 > subjects.length) {
            subjects = Arrays.copyOf(subjects, Math.max(subjects.length * 2, at + len + 8));
        }
        // in 8-byte words: the reads stay inside the record (the hash follows the subject),
        // the writes past `at + len` are overwritten by the next subject
        final byte[] b = buf;
        final byte[] dst = subjects;
        I64.set(dst, at, (long) I64.get(b, src));    // most subjects: one or two words
        if (len > 8) {
            I64.set(dst, at + 8, (long) I64.get(b, src + 8));
            for (int i = 16; i < len; i += 8) {
                I64.set(dst, at + i, (long) I64.get(b, src + i));
            }
        }
        subjectVec.putArray(row, at, len);
        subjectNext = at + len;
    }

    private void data(int row, int rec, int length, int msgOff) {
        int len = rec + length - HASH_SIZE - msgOff;
        if (2L * len >= length) {
            if (runStart < 0 || rec != runEnd) {
                flushRun();
                runStart = msgOff;
            }
            dataVec.putArray(row, dataNext + (msgOff - runStart), len);
            runLast = msgOff + len;
            runEnd = rec + length;
            if (runLast - runStart >= RUN_FLUSH) {
                flushRun();                  // copy while the bytes are still in cache
            }
        } else {
            dataCopy(row, msgOff, len);
        }
    }

    private void dataCopy(int row, int msgOff, int len) {
        flushRun();
        int at = dataNext;
        if ((long) at + len > dataRoom) {
            dataRoom = room(dataBytes, dataRoom, (long) at + len);
        }
        dataBytes.putBytes(at, len, buf, msgOff);
        dataVec.putArray(row, at, len);
        dataNext = at + len;
    }

    private void headerMap(int row, int start, int length) {
        flushNulls(row);
        int first = entries;
        headers(start, length);
        headersVec.putArray(row, first, entries - first);
    }

    private void flushNulls(int row) {
        if (nullsFrom >= 0) {
            headersVec.putNulls(nullsFrom, row - nullsFrom);
            nullsFrom = -1;
        }
    }

    /** Copies the open run of payloads (rows already point into it at dataNext). */
    private void flushRun() {
        if (runStart < 0) {
            return;
        }
        int span = runLast - runStart;
        if ((long) dataNext + span > dataRoom) {
            dataRoom = room(dataBytes, dataRoom, (long) dataNext + span);
        }
        dataBytes.putBytes(dataNext, span, buf, runStart);
        dataNext += span;
        runStart = -1;
    }

    private static boolean blank(byte c) {
        return c == ' ' || c == '\t';
    }

    /** Appends one message's header map (block bytes [start, start + length)) to the map's
     *  key, list and value vectors: its lines grouped by key. */
    private void headers(int start, int length) {
        final byte[] b = buf;
        final int end = start + length;
        int p = start;
        while (p < end && b[p] != '\n') {     // the version / status line
            p++;
        }
        p++;
        int n = 0;
        while (p < end && n < HEADER_LINES_MAX) {
            int lineEnd = p;
            while (lineEnd < end && b[lineEnd] != '\n') {
                lineEnd++;
            }
            int z = lineEnd;
            if (z > p && b[z - 1] == '\r') {
                z--;
            }
            int colon = p;
            while (colon < z && b[colon] != ':') {
                colon++;
            }
            if (colon < z && colon > p) {
                int a = colon + 1;
                while (a < z && blank(b[a])) {
                    a++;
                }
                while (z > a && blank(b[z - 1])) {
                    z--;
                }
                keyOff[n] = p;
                keyLen[n] = colon - p;
                valueOff[n] = a;
                valueLen[n] = z - a;
                taken[n] = false;
                n++;
            }
            p = lineEnd + 1;
        }
        for (int i = 0; i < n; i++) {
            if (taken[i]) {
                continue;
            }
            int firstValue = values;
            for (int j = i; j < n; j++) {
                if (taken[j] || keyLen[j] != keyLen[i]
                        || !sameBytes(b, keyOff[j], keyOff[i], keyLen[i])) {
                    continue;
                }
                taken[j] = true;
                valuesVec.reserve(values + 1);
                valuesVec.putByteArray(values, b, valueOff[j], valueLen[j]);
                values++;
                headerBytes += valueLen[j];
            }
            keysVec.reserve(entries + 1);
            keysVec.putByteArray(entries, b, keyOff[i], keyLen[i]);
            headerBytes += keyLen[i];
            listsVec.reserve(entries + 1);
            listsVec.putArray(entries, firstValue, values - firstValue);
            entries++;
        }
    }

    private static boolean sameBytes(byte[] b, int x, int y, int n) {
        for (int i = 0; i < n; i++) {
            if (b[x + i] != b[y + i]) {
                return false;
            }
        }
        return true;
    }
}
