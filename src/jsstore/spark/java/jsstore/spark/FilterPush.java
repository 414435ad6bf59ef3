// Spark's pushed filters translated into a ScanFilter (the Java twin of
// jsstore.spark.pushdown); what is not taken goes back to Spark.
//
// Taken (then applied to every record, so Spark drops them from its plan):
//   seq, time_ns: =, <=>, <, <=, >, >=       time: the same, on its microsecond value
//   subject: =, <=>, IN, startswith (LIKE 'x%')
//   IsNotNull on a column that is never null (all but headers); And of taken filters
// Everything else is returned and evaluated by Spark after the scan.
package jsstore.spark;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.StringStartsWith;

final class FilterPush {
    private static final Set<String> NEVER_NULL = Set.of("seq", "subject", "time", "time_ns", "data");

    private final ScanFilter scan;

    FilterPush(ScanFilter scan) {
        this.scan = scan;
    }

    /** Apply what can be applied; return the filters Spark must still evaluate. */
    Filter[] push(Filter[] filters, List<Filter> taken) {
        List<Filter> rejected = new ArrayList<>();
        for (Filter f : filters) {
            if (take(f)) {
                taken.add(f);
            } else {
                rejected.add(f);
            }
        }
        return rejected.toArray(new Filter[0]);
    }

    private enum Op { EQ, GT, GE, LT, LE }

    private boolean take(Filter f) {
        if (f instanceof And and) {
            // narrowing by one side is right even when the other goes back to Spark
            boolean left = take(and.left());
            boolean right = take(and.right());
            return left && right;
        }
        if (f instanceof IsNotNull n) {
            return NEVER_NULL.contains(n.attribute());
        }
        if (f instanceof In in) {
            if (!"subject".equals(in.attribute())) {
                return false;
            }
            List<String> subjects = new ArrayList<>();
            for (Object v : in.values()) {
                if (!(v instanceof String s)) {
                    return false;
                }
                subjects.add(s);
            }
            scan.subjectsIn(subjects);
            return true;
        }
        if (f instanceof StringStartsWith s) {
            if (!"subject".equals(s.attribute())) {
                return false;
            }
            scan.prefixes.add(s.value());
            return true;
        }
        if (f instanceof EqualTo e) {
            return compare(e.attribute(), Op.EQ, e.value());
        }
        if (f instanceof EqualNullSafe e) {
            return e.value() != null && compare(e.attribute(), Op.EQ, e.value());
        }
        if (f instanceof GreaterThan g) {
            return compare(g.attribute(), Op.GT, g.value());
        }
        if (f instanceof GreaterThanOrEqual g) {
            return compare(g.attribute(), Op.GE, g.value());
        }
        if (f instanceof LessThan l) {
            return compare(l.attribute(), Op.LT, l.value());
        }
        if (f instanceof LessThanOrEqual l) {
            return compare(l.attribute(), Op.LE, l.value());
        }
        return false;
    }

    private boolean compare(String column, Op op, Object value) {
        switch (column) {
            case "subject":
                if (op == Op.EQ && value instanceof String s) {
                    scan.subjectsIn(List.of(s));
                    return true;
                }
                return false;
            case "seq":
                if (!(value instanceof Long v)) {
                    return false;
                }
                long[] seq = bounds(op, v, v);
                scan.seqRange(seq[0], seq[1]);
                return true;
            case "time_ns":
                if (!(value instanceof Long t)) {
                    return false;
                }
                long[] ns = bounds(op, t, t);
                scan.timeRange(ns[0], ns[1]);
                return true;
            case "time":
                Long micros = micros(value);
                if (micros == null) {
                    return false;
                }
                // floor(ns / 1000) <op> micros, on ns
                long start = saturatingMul1000(micros);
                long end = start == Long.MAX_VALUE ? start : start + 999;
                long[] b = bounds(op, start, end);
                scan.timeRange(b[0], b[1]);
                return true;
            default:
                return false;
        }
    }

    /** [low, high] of x with `x <op> v`, v standing for the range [start, end]. */
    private static long[] bounds(Op op, long start, long end) {
        switch (op) {
            case EQ:
                return new long[] {start, end};
            case GT:
                return end == Long.MAX_VALUE ? new long[] {1, 0} : new long[] {end + 1, Long.MAX_VALUE};
            case GE:
                return new long[] {start, Long.MAX_VALUE};
            case LT:
                return start == Long.MIN_VALUE ? new long[] {1, 0} : new long[] {Long.MIN_VALUE, start - 1};
            default:
                return new long[] {Long.MIN_VALUE, end};
        }
    }

    private static Long micros(Object value) {
        if (value instanceof Timestamp ts) {
            return Math.floorDiv(ts.getTime(), 1000L) * 1_000_000L + ts.getNanos() / 1000;
        }
        if (value instanceof Instant i) {
            return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
        }
        return null;
    }

    private static long saturatingMul1000(long micros) {
        if (micros > Long.MAX_VALUE / 1000) {
            return Long.MAX_VALUE;
        }
        if (micros < Long.MIN_VALUE / 1000) {
            return Long.MIN_VALUE;
        }
        return micros * 1000;
    }
}
