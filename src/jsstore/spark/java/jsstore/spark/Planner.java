// Planning a directory read on the driver (the Java twin of jsstore.spark.planning): which
// block files, which sequences of each, in which partitions, from msgs/index.db when it is
// current, otherwise from one walk of every block's records (BlockSummary).
//
// index.db is current when it verifies, its last block is the last block file, every block
// it lists exists and the last file still ends with the hash it recorded. A stale index.db
// that verifies still gives its deletes and its first sequence. The snapshot is everything
// up to the last sequence seen here: no partition reads past it.
//
// Damage, as jsstore.spark.planning words it: a slice of a current index.db is `complete`
// (every sequence it does not list as deleted must be read); from the walk, a damaged
// block's range is stretched to what it is known to have held (a stale index.db's range;
// after a damaged end, up to the next block's first sequence; before a damaged start, from
// the previous block's last one) so that its reader finds what it cannot give, while an
// undamaged block keeps its own; a block file a stale index.db lists and that is gone is a
// loss found here, unless index.db is only older than the blocks (removed since).
package jsstore.spark;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

final class Planner {
    static final String BLOCK_SUFFIX = ".blk";
    static final String INDEX_FILE = "index.db";
    static final String MSGS_DIR = "msgs";
    private static final int SUMMARY_CACHE_LIMIT = 100_000;
    static final long OPEN_COST_BYTES = 4L * 1024 * 1024;   // spark.sql.files.openCostInBytes

    private Planner() {}

    /** One block as seen at planning time. */
    static final class BlockInfo {
        final long index;
        final String path;
        final long size;
        long firstSeq;
        long lastSeq;
        final long firstTs;
        final long lastTs;
        final TreeSet<Long> deleted = new TreeSet<>();
        final Set<String> subjects;                 // null when not known
        long msgs = -1;                             // live messages (-1: not counted)
        List<long[]> holes = List.of();             // damaged stretches the walk found

        BlockInfo(long index, String path, long size, long firstSeq, long lastSeq, long firstTs,
                  long lastTs, Set<String> subjects) {
            this.index = index;
            this.path = path;
            this.size = size;
            this.firstSeq = firstSeq;
            this.lastSeq = lastSeq;
            this.firstTs = firstTs;
            this.lastTs = lastTs;
            this.subjects = subjects;
        }
    }

    /** The blocks of a stream: read nothing above lastSeq nor below firstSeq. */
    record StreamBlocks(List<BlockInfo> blocks, long firstSeq, long lastSeq, String source,
                        Map<String, long[]> subjectBlocks, long lastFileIndex, String name,
                        List<DataLoss.Loss> losses) {
        /** Fails with the first loss found while planning that the scan's range touches. */
        void checkLosses(ScanFilter scan) {
            for (DataLoss.Loss loss : losses) {
                long[] touched = java.util.Arrays.stream(loss.seqs())
                        .filter(seq -> scan.seqLow <= seq && seq <= scan.seqHigh).toArray();
                if (touched.length > 0) {
                    throw new DataLoss(loss.path(), loss.problem(), touched);
                }
            }
        }
    }

    private record BlockFile(long index, Path path, long size) {}

    private record CachedSummary(long size, long mtimeNs, BlockSummary summary) {}

    private static final Map<String, CachedSummary> SUMMARIES = new ConcurrentHashMap<>();

    static List<BlockFile> blockFiles(Path msgsDir) throws IOException {
        List<BlockFile> out = new ArrayList<>();
        if (!Files.isDirectory(msgsDir)) {
            return out;
        }
        try (DirectoryStream<Path> names = Files.newDirectoryStream(msgsDir, "*" + BLOCK_SUFFIX)) {
            for (Path path : names) {
                String name = path.getFileName().toString();
                String digits = name.substring(0, name.length() - BLOCK_SUFFIX.length());
                if (digits.isEmpty() || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
                    continue;
                }
                try {
                    out.add(new BlockFile(Long.parseLong(digits), path, Files.size(path)));
                } catch (NoSuchFileException | NumberFormatException gone) {
                    // removed since it was listed, or not a block index
                }
            }
        }
        out.sort((a, b) -> Long.compare(a.index, b.index));
        return out;
    }

    static StreamBlocks load(Path streamDir, String streamName) throws IOException {
        if (!Files.isRegularFile(streamDir.resolve("meta.inf"))) {
            throw new IllegalArgumentException("no stream '" + streamName
                    + "' in the store directory (looked for " + streamDir.resolve("meta.inf") + ")");
        }
        Path msgsDir = streamDir.resolve(MSGS_DIR);
        List<BlockFile> files = blockFiles(msgsDir);
        IndexDb state = readIndex(streamName, msgsDir);
        if (indexIsCurrent(state, files)) {
            return fromIndex(state, files, streamName);
        }
        return fromScan(state, files, streamName, msgsDir);
    }

    private static IndexDb readIndex(String streamName, Path msgsDir) {
        try {
            return IndexDb.decode(streamName, Files.readAllBytes(msgsDir.resolve(INDEX_FILE)));
        } catch (IOException unusable) {
            return null;                            // missing or does not verify: rebuild
        }
    }

    private static byte[] tail(BlockFile file) throws IOException {
        byte[] out = new byte[8];
        if (file.size < 8) {
            return out;
        }
        try (RandomAccessFile f = new RandomAccessFile(file.path.toFile(), "r")) {
            f.seek(file.size - 8);
            f.readFully(out);
        }
        return out;
    }

    private static boolean indexIsCurrent(IndexDb state, List<BlockFile> files) throws IOException {
        if (state == null || files.isEmpty() || state.blocks.isEmpty()) {
            return false;
        }
        BlockFile last = files.get(files.size() - 1);
        if (state.lastIndex != last.index || state.blocks.get(state.blocks.size() - 1).index() != last.index) {
            return false;
        }
        Set<Long> onDisk = new TreeSet<>();
        for (BlockFile f : files) {
            onDisk.add(f.index);
        }
        for (IndexDb.Block b : state.blocks) {
            if (!onDisk.contains(b.index())) {
                return false;
            }
        }
        return Arrays.equals(tail(last), state.lchk);
    }

    private static StreamBlocks fromIndex(IndexDb state, List<BlockFile> files, String name) {
        Map<Long, BlockFile> byIndex = new HashMap<>();
        for (BlockFile f : files) {
            byIndex.put(f.index, f);
        }
        List<BlockInfo> blocks = new ArrayList<>();
        for (IndexDb.Block b : state.blocks) {
            BlockFile file = byIndex.get(b.index());
            BlockInfo info = new BlockInfo(b.index(), file.path.toString(), file.size, b.firstSeq(),
                    b.lastSeq(), b.firstTs(), b.lastTs(), null);
            for (long seq : b.deleted()) {
                info.deleted.add(seq);
            }
            blocks.add(info);
        }
        Map<String, long[]> subjectBlocks = new HashMap<>();
        for (IndexDb.Subject s : state.subjects) {
            subjectBlocks.put(s.subject(), new long[] {s.total(), s.firstBlock(), s.lastBlock()});
        }
        return new StreamBlocks(blocks, state.firstSeq, state.lastSeq, "index", subjectBlocks,
                files.get(files.size() - 1).index, name, List.of());
    }

    /** BlockSummary of a block file, reused while its size and mtime stay the same; never
     *  reused for the last block, which a store appends to through a mapping. */
    static BlockSummary summary(Path path, boolean reuse) throws IOException {
        return summary(path, reuse, null);
    }

    /** The same with every record's hash checked (`hash` null: not checked); a block that
     *  does not decompress is one damaged stretch. */
    static BlockSummary summary(Path path, boolean reuse, RecordHash hash) throws IOException {
        BasicFileAttributes attrs = Files.readAttributes(path, BasicFileAttributes.class);
        long mtime = attrs.lastModifiedTime().to(java.util.concurrent.TimeUnit.NANOSECONDS);
        String key = path.toString();
        CachedSummary cached = SUMMARIES.get(key);
        if (reuse && cached != null && cached.size == attrs.size() && cached.mtimeNs == mtime) {
            return cached.summary;
        }
        BlockSummary out;
        try {
            out = BlockSummary.of(BlockBytes.readPlain(path), hash);
        } catch (NoSuchFileException gone) {
            throw gone;
        } catch (IOException | RuntimeException undecodable) {
            out = BlockSummary.unreadable();
        }
        if (SUMMARIES.size() >= SUMMARY_CACHE_LIMIT) {
            SUMMARIES.clear();
        }
        SUMMARIES.put(key, new CachedSummary(attrs.size(), mtime, out));
        return out;
    }

    private static StreamBlocks fromScan(IndexDb state, List<BlockFile> files, String name,
                                         Path msgsDir) throws IOException {
        List<BlockInfo> blocks = new ArrayList<>();
        long lastSeq = 0;
        List<Long> tombstones = new ArrayList<>();
        Set<Long> present = new TreeSet<>();
        Map<Long, IndexDb.Block> saved = new HashMap<>();
        if (state != null) {
            for (IndexDb.Block b : state.blocks) {
                saved.put(b.index(), b);
            }
        }
        for (int position = 0; position < files.size(); position++) {
            BlockFile file = files.get(position);
            BlockSummary s;
            try {
                s = summary(file.path, position < files.size() - 1,
                            new RecordHash(RecordHash.blockKey(name, file.index)));
            } catch (NoSuchFileException gone) {
                continue;                           // removed since listed (limits, compaction)
            }
            present.add(file.index);
            lastSeq = Math.max(lastSeq, Math.max(s.maxSeq, s.lastSeq));
            for (long t : s.tombstones) {
                tombstones.add(t);
            }
            if (s.msgs == 0 && s.holes.isEmpty()) {
                continue;
            }
            boolean known = s.msgs > 0 && s.holes.isEmpty();
            BlockInfo info = new BlockInfo(file.index, file.path.toString(), file.size,
                    s.msgs > 0 ? s.firstSeq : lastSeq + 1, s.msgs > 0 ? s.lastSeq : lastSeq,
                    s.firstTs, s.lastTs, known ? s.subjects : null);
            info.msgs = s.msgs;
            info.holes = s.holes;
            blocks.add(info);
        }
        long firstSeq = 0;
        if (state != null) {
            firstSeq = state.firstSeq;
            lastSeq = Math.max(lastSeq, state.lastSeq);
            for (BlockInfo block : blocks) {
                IndexDb.Block old = saved.get(block.index);
                if (old != null) {
                    for (long seq : old.deleted()) {
                        block.deleted.add(seq);
                    }
                }
            }
        }
        knownRanges(blocks, saved, firstSeq);
        assignTombstones(blocks, tombstones);
        Set<Long> removed = new TreeSet<>(tombstones);
        List<DataLoss.Loss> losses = new ArrayList<>();
        boolean outdated = indexOutdated(state, files);
        for (IndexDb.Block old : state == null || outdated ? List.<IndexDb.Block>of() : state.blocks) {
            long from = Math.max(old.firstSeq(), firstSeq);
            if (present.contains(old.index()) || old.lastSeq() < from) {
                continue;
            }
            Set<Long> deleted = new TreeSet<>();
            for (long seq : old.deleted()) {
                deleted.add(seq);
            }
            long[] seqs = java.util.stream.LongStream.rangeClosed(from, old.lastSeq())
                    .filter(seq -> !deleted.contains(seq) && !removed.contains(seq)).toArray();
            if (seqs.length > 0) {
                losses.add(new DataLoss.Loss(msgsDir.resolve(old.index() + BLOCK_SUFFIX).toString(),
                        "block file listed in index.db is missing", seqs));
            }
        }
        List<BlockInfo> kept = new ArrayList<>();
        for (BlockInfo b : blocks) {
            if (b.lastSeq >= firstSeq && b.lastSeq >= b.firstSeq) {
                kept.add(b);
            }
        }
        return new StreamBlocks(kept, firstSeq, lastSeq, "scan", null,
                files.isEmpty() ? -1 : files.get(files.size() - 1).index, name, losses);
    }

    /** Whether a stale index.db is only older than the blocks: records were written after it
     *  (its last block no longer ends with the hash it names, or block files follow its
     *  last). A block it lists that is gone was then removed since, not lost (as for the
     *  store's own recovery and nats-server). */
    private static boolean indexOutdated(IndexDb state, List<BlockFile> files) throws IOException {
        if (state == null || files.isEmpty()) {
            return false;
        }
        if (files.get(files.size() - 1).index > state.lastIndex) {
            return true;
        }
        for (BlockFile f : files) {
            if (f.index == state.lastIndex) {
                return !Arrays.equals(tail(f), state.lchk);
            }
        }
        return false;
    }

    /** Each damaged block's range stretched to what it is known to have held (see the top). */
    private static void knownRanges(List<BlockInfo> blocks, Map<Long, IndexDb.Block> saved, long firstSeq) {
        for (int position = 0; position < blocks.size(); position++) {
            BlockInfo block = blocks.get(position);
            if (block.holes.isEmpty()) {
                continue;                           // keeps its own range (see the top)
            }
            IndexDb.Block old = saved.get(block.index);
            if (old != null && old.lastSeq() >= old.firstSeq()) {
                block.firstSeq = Math.min(block.firstSeq, old.firstSeq());
                block.lastSeq = Math.max(block.lastSeq, old.lastSeq());
            }
            if (block.holes.get(0)[1] <= 1) {       // damaged before any intact message record
                long before = position > 0 ? blocks.get(position - 1).lastSeq + 1 : Math.max(firstSeq, 1);
                block.firstSeq = Math.min(block.firstSeq, before);
            }
            if (block.holes.get(block.holes.size() - 1)[2] == 0) {   // nothing intact after
                for (int next = position + 1; next < blocks.size(); next++) {
                    if (blocks.get(next).msgs != 0) {
                        block.lastSeq = Math.max(block.lastSeq, blocks.get(next).firstSeq - 1);
                        break;
                    }
                }
            }
        }
    }

    private static void assignTombstones(List<BlockInfo> blocks, List<Long> tombstones) {
        if (tombstones.isEmpty() || blocks.isEmpty()) {
            return;
        }
        long[] firsts = new long[blocks.size()];
        for (int i = 0; i < firsts.length; i++) {
            firsts[i] = blocks.get(i).firstSeq;
        }
        for (long seq : tombstones) {
            int pos = upperBound(firsts, seq) - 1;
            if (pos >= 0) {
                BlockInfo b = blocks.get(pos);
                if (b.firstSeq <= seq && seq <= b.lastSeq) {
                    b.deleted.add(seq);
                }
            }
        }
    }

    private static int upperBound(long[] sorted, long key) {
        int low = 0;
        int high = sorted.length;
        while (low < high) {
            int mid = (low + high) >>> 1;
            if (sorted[mid] <= key) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        return low;
    }

    // -- pruning and partitions ------------------------------------------------------------

    /** [first, last] block index ranges holding a subject the scan accepts, from a current
     *  index.db; null when not known or not narrowing. */
    private static List<long[]> subjectBlockRanges(StreamBlocks stream, ScanFilter scan, SubjectMatch match) {
        if (stream.subjectBlocks() == null || scan.allSubjects()) {
            return null;
        }
        List<long[]> out = new ArrayList<>();
        Iterable<String> candidates = scan.exact != null ? scan.exact : stream.subjectBlocks().keySet();
        for (String subject : candidates) {
            long[] where = stream.subjectBlocks().get(subject);
            if (where != null && match.accepts(subject)) {
                out.add(new long[] {where[1], where[2]});
            }
        }
        return out;
    }

    private static boolean blockMayMatch(BlockInfo block, ScanFilter scan, List<long[]> ranges,
                                         SubjectMatch match) {
        if (block.firstSeq > block.lastSeq) {
            return false;
        }
        if (!scan.overlaps(block.firstSeq, block.lastSeq, block.firstTs, block.lastTs)) {
            return false;
        }
        if (ranges != null) {
            boolean inside = false;
            for (long[] r : ranges) {
                inside |= r[0] <= block.index && block.index <= r[1];
            }
            if (!inside) {
                return false;
            }
        }
        if (block.subjects != null && match != null) {
            for (String subject : block.subjects) {
                if (match.accepts(subject)) {
                    return true;
                }
            }
            return false;
        }
        return true;
    }

    /** The block slices a scan must read, in sequence order. */
    static List<BlockSlice> slices(StreamBlocks stream, ScanFilter scan) {
        List<BlockSlice> out = new ArrayList<>();
        if (scan.empty()) {
            return out;
        }
        SubjectMatch match = scan.allSubjects() ? null : scan.match();
        List<long[]> ranges = match == null ? null : subjectBlockRanges(stream, scan, match);
        long lowBound = Math.max(scan.seqLow, stream.firstSeq());
        long highBound = Math.min(scan.seqHigh, stream.lastSeq());
        for (BlockInfo block : stream.blocks()) {
            if (!blockMayMatch(block, scan, ranges, match)) {
                continue;
            }
            long low = Math.max(block.firstSeq, lowBound);
            long high = Math.min(block.lastSeq, highBound);
            if (low > high) {
                continue;
            }
            long[] deleted = block.deleted.subSet(low, true, high, true).stream()
                    .mapToLong(Long::longValue).toArray();
            if (deleted.length == high - low + 1) {
                continue;
            }
            out.add(new BlockSlice(block.path, block.index, block.size, low, high, deleted,
                    block.index < stream.lastFileIndex(), stream.source().equals("index"),
                    RecordHash.blockKey(stream.name(), block.index)));
        }
        return out;
    }

    /** Bytes per task, as Spark splits files: at most partitionBytes, and no more than an
     *  even share of the read per core unless that share is below OPEN_COST_BYTES (a small
     *  read is not worth more tasks). */
    static long splitBytes(List<BlockSlice> slices, long partitionBytes, int cores) {
        long total = 0;
        for (BlockSlice s : slices) {
            total += s.size();
        }
        long perCore = (total + Math.max(cores, 1) - 1) / Math.max(cores, 1);
        return Math.min(partitionBytes, Math.max(OPEN_COST_BYTES, perCore));
    }

    /** Consecutive slices grouped into ceil(total / targetBytes) partitions with the bytes
     *  spread evenly, none over maxBytes (a bigger block is a partition of its own). */
    static List<List<BlockSlice>> group(List<BlockSlice> slices, long targetBytes, long maxBytes) {
        List<List<BlockSlice>> partitions = new ArrayList<>();
        if (slices.isEmpty()) {
            return partitions;
        }
        long total = 0;
        for (BlockSlice s : slices) {
            total += s.size();
        }
        long target = Math.max(targetBytes, 1);
        long count = Math.max(1, (total + target - 1) / target);
        List<BlockSlice> current = new ArrayList<>();
        long currentBytes = 0;
        long done = 0;
        for (BlockSlice piece : slices) {
            double boundary = (double) total * (partitions.size() + 1) / count;
            if (!current.isEmpty() && (done + piece.size() / 2.0 > boundary
                    || currentBytes + piece.size() > maxBytes)) {
                partitions.add(current);
                current = new ArrayList<>();
                currentBytes = 0;
            }
            current.add(piece);
            currentBytes += piece.size();
            done += piece.size();
        }
        partitions.add(current);
        return partitions;
    }
}
