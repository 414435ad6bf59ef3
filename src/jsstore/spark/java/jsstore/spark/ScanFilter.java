// What a scan keeps: a sequence range, a time range and subject clauses, ANDed together
// (the Java twin of jsstore.spark.scan.ScanFilter). Pushed filters and the subject_filter
// option narrow it; the planner prunes blocks with it and BlockColumns applies it to every
// record, so a filter it accepted holds for every row read.
package jsstore.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeSet;

final class ScanFilter implements Serializable {
    static final long MAX_SEQ = (1L << 62) - 1;     // above every sequence a record carries

    long seqLow = 0;
    long seqHigh = MAX_SEQ;
    long timeLow = Long.MIN_VALUE;                  // Unix ns, inclusive
    long timeHigh = Long.MAX_VALUE;
    TreeSet<String> exact;                          // subject equality / IN; null: any
    final List<String> prefixes = new ArrayList<>();
    final List<String> wildcards = new ArrayList<>();  // NATS filters, one must match

    void seqRange(long low, long high) {
        seqLow = Math.max(seqLow, low);
        seqHigh = Math.min(seqHigh, high);
    }

    void timeRange(long low, long high) {
        timeLow = Math.max(timeLow, low);
        timeHigh = Math.min(timeHigh, high);
    }

    void subjectsIn(Collection<String> subjects) {
        TreeSet<String> wanted = new TreeSet<>(subjects);
        if (exact != null) {
            wanted.retainAll(exact);
        }
        exact = wanted;
    }

    /** A sequence or time range narrower than everything is asked for. */
    boolean ranged() {
        return seqLow > 0 || seqHigh < MAX_SEQ || timeLow != Long.MIN_VALUE || timeHigh != Long.MAX_VALUE;
    }

    boolean allSubjects() {
        return exact == null && prefixes.isEmpty() && wildcards.isEmpty();
    }

    boolean empty() {
        if (seqLow > seqHigh || timeLow > timeHigh) {
            return true;
        }
        return exact != null && reducedExact().isEmpty();
    }

    // The exact subjects that also pass every prefix and one of the wildcards.
    List<String> reducedExact() {
        SubjectMatch wild = wildcards.isEmpty() ? null
                : new SubjectMatch(null, List.of(), wildcards);
        List<String> out = new ArrayList<>();
        for (String subject : exact) {
            boolean ok = !subject.isEmpty();
            for (String prefix : prefixes) {
                ok &= subject.startsWith(prefix);
            }
            if (ok && (wild == null || wild.accepts(subject))) {
                out.add(subject);
            }
        }
        return out;
    }

    // The record-level form: an exact set is reduced by the other clauses up front.
    SubjectMatch match() {
        if (exact != null) {
            return new SubjectMatch(reducedExact(), List.of(), List.of());
        }
        return new SubjectMatch(null, prefixes, wildcards);
    }

    boolean overlaps(long firstSeq, long lastSeq, long firstTs, long lastTs) {
        return firstSeq <= seqHigh && lastSeq >= seqLow && firstTs <= timeHigh && lastTs >= timeLow;
    }

    @Override
    public String toString() {
        StringBuilder out = new StringBuilder();
        if (seqLow > 0 || seqHigh < MAX_SEQ) {
            out.append("seq ").append(seqLow).append("..").append(seqHigh).append(' ');
        }
        if (timeLow > Long.MIN_VALUE || timeHigh < Long.MAX_VALUE) {
            out.append("time_ns ").append(timeLow).append("..").append(timeHigh).append(' ');
        }
        if (exact != null) {
            out.append("subject in ").append(exact).append(' ');
        }
        if (!prefixes.isEmpty()) {
            out.append("prefixes ").append(prefixes).append(' ');
        }
        if (!wildcards.isEmpty()) {
            out.append("filters ").append(wildcards).append(' ');
        }
        return out.length() == 0 ? "everything" : out.toString().trim();
    }
}
