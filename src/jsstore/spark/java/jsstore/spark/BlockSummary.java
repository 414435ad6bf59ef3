/*
 * What a planner needs of a block that index.db does not describe, from one walk over its
 * record headers (the JVM twin of the core's summarize_block):
 *   msgs                 live message records (neither tombstone nor erased / skip)
 *   firstSeq, lastSeq    lowest and highest sequence of those (0 when none)
 *   firstTs, lastTs      lowest and highest timestamp of those, Unix ns (0 when none)
 *   maxSeq               highest sequence of any record but a tombstone, skips included
 *   tombstones           the sequences tombstones remove, in walk order
 *   subjects             the distinct subjects of the live messages (empty ones left out)
 *   walkedBytes          where the walk stopped: the end, or the first record that does not
 *                        parse (the rest of the file is not records)
 */
package jsstore.spark;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Set;

final class BlockSummary {
    public final long msgs;
    public final long firstSeq;
    public final long lastSeq;
    public final long maxSeq;
    public final long firstTs;
    public final long lastTs;
    public final Set<String> subjects;
    public final long[] tombstones;
    public final long walkedBytes;

    private BlockSummary(long msgs, long firstSeq, long lastSeq, long maxSeq, long firstTs,
                         long lastTs, Set<String> subjects, long[] tombstones, long walkedBytes) {
        this.msgs = msgs;
        this.firstSeq = firstSeq;
        this.lastSeq = lastSeq;
        this.maxSeq = maxSeq;
        this.firstTs = firstTs;
        this.lastTs = lastTs;
        this.subjects = subjects;
        this.tombstones = tombstones;
        this.walkedBytes = walkedBytes;
    }

    static BlockSummary of(byte[] plain) {
        long msgs = 0;
        long firstSeq = 0;
        long lastSeq = 0;
        long maxSeq = 0;
        long firstTs = 0;
        long lastTs = 0;
        long[] tombstones = new long[8];
        int tombCount = 0;
        Set<String> subjects = new LinkedHashSet<>();
        int size = plain.length;
        int pos = 0;
        while (pos < size) {
            int length = BlockColumns.recordLength(plain, pos, size - pos);
            if (length < 0) {
                break;
            }
            long rawSeq = BlockColumns.rawSeq(plain, pos);
            long seq = rawSeq & BlockColumns.SEQ_MASK;
            if ((rawSeq & BlockColumns.SEQ_TOMB_BIT) != 0) {
                if (tombCount == tombstones.length) {
                    tombstones = Arrays.copyOf(tombstones, tombCount * 2);
                }
                tombstones[tombCount++] = seq;
            } else {
                if (seq > maxSeq) {
                    maxSeq = seq;
                }
                if ((rawSeq & BlockColumns.SEQ_ERASE_BIT) == 0) {
                    long ts = BlockColumns.ts(plain, pos);
                    if (msgs == 0 || seq < firstSeq) {
                        firstSeq = seq;
                    }
                    if (seq > lastSeq) {
                        lastSeq = seq;
                    }
                    if (msgs == 0 || ts < firstTs) {
                        firstTs = ts;
                    }
                    if (msgs == 0 || ts > lastTs) {
                        lastTs = ts;
                    }
                    msgs++;
                    int subjLen = BlockColumns.subjectLength(plain, pos);
                    if (subjLen > 0) {
                        subjects.add(new String(plain, pos + BlockColumns.OFF_SUBJ, subjLen,
                                                StandardCharsets.UTF_8));
                    }
                }
            }
            pos += length;
        }
        return new BlockSummary(msgs, firstSeq, lastSeq, maxSeq, firstTs, lastTs,
                                Collections.unmodifiableSet(subjects),
                                Arrays.copyOf(tombstones, tombCount), pos);
    }
}
