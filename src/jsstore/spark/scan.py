"""What a scan keeps: a sequence range, a time range and subject clauses, ANDed together.

The `subject_filter` option (and a KV table's bucket prefix), a streaming micro-batch's
sequence range and a start time narrow a `ScanFilter`; the planner prunes blocks with it
and the core applies it record by record.  Spark's own filters are not taken (see
jsstore.spark.source): Spark applies them to the rows read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jsstore._core.columns.arrowblock import MAX_SEQ, SubjectPredicate
from jsstore._core.storage.subjects import filters_overlap
from jsstore.spark.options import KV_SUBJECT_PREFIX

TIME_MIN = -(1 << 63)
TIME_MAX = (1 << 63) - 1


@dataclass
class ScanFilter:
    seq_low: int = 0
    seq_high: int = MAX_SEQ
    time_low: int = TIME_MIN               # Unix ns, inclusive
    time_high: int = TIME_MAX
    exact: set[str] | None = None          # subject equality / IN
    prefixes: list[str] = field(default_factory=list)
    wildcards: list[str] = field(default_factory=list)   # NATS filters, one must match

    # -- questions -----------------------------------------------------------------------
    @property
    def empty(self) -> bool:
        return (self.seq_low > self.seq_high or self.time_low > self.time_high
                or (self.exact is not None and not any(self.subject_ok(s) for s in self.exact)))

    @property
    def all_subjects(self) -> bool:
        return self.exact is None and not self.prefixes and not self.wildcards

    def subject_ok(self, subject: str) -> bool:
        if self.exact is not None and subject not in self.exact:
            return False
        if any(not subject.startswith(p) for p in self.prefixes):
            return False
        if self.wildcards:
            return self.predicate().accepts(subject)
        return True

    def could_match_filter(self, nats_filter: str) -> bool:
        """Whether some subject matching the NATS filter may pass (for planning over NATS)."""
        if self.wildcards and not any(filters_overlap(w, nats_filter) for w in self.wildcards):
            return False
        return True

    def predicate(self) -> SubjectPredicate:
        """The core's form: an exact set is reduced by the other clauses up front."""
        if self.exact is not None:
            exact = sorted(s for s in self.exact
                           if all(s.startswith(p) for p in self.prefixes)
                           and (not self.wildcards
                                or SubjectPredicate(wildcards=self.wildcards).accepts(s)))
            return SubjectPredicate(exact=exact)
        return SubjectPredicate(prefixes=self.prefixes, wildcards=self.wildcards)

    def overlaps(self, first_seq: int, last_seq: int, first_ts: int, last_ts: int) -> bool:
        return (first_seq <= self.seq_high and last_seq >= self.seq_low
                and first_ts <= self.time_high and last_ts >= self.time_low)


def options_scan(options, **bounds) -> ScanFilter:
    """The scan every read of these SourceOptions starts from: its `subject_filter` (under a
    KV table's bucket prefix) and a KV table's prefix, with `bounds` (ScanFilter fields)."""
    scan = ScanFilter(**bounds)
    if options.subject_filter:
        prefix = KV_SUBJECT_PREFIX + options.kv + "." if options.kv else ""
        scan.wildcards = [prefix + f for f in options.subject_filter]
    if options.kv:
        scan.prefixes.append(KV_SUBJECT_PREFIX + options.kv + ".")
    return scan
