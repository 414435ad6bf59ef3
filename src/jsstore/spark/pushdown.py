"""Spark's pushed filters translated into a ScanFilter; the rest goes back to Spark.

Accepted (and then applied by the core to every record, so Spark drops them from its plan):
  seq, time_ns: =, <, <=, >, >=          time: the same, on its microsecond value
  subject: =, <=> (non-null value), IN, startswith (also LIKE 'x%')
  IsNotNull on a column that is never null (everything but headers)
Everything else (Not, OR trees Spark did not split, endswith, filters on headers or data,
IN on seq...) is returned and evaluated by Spark after the scan.

In a KV table only the key filters are taken unless every revision is read: the latest
revision of a key must be decided before any filter on revision or time applies.
"""

from __future__ import annotations

import datetime

from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
)

from jsstore.spark.options import parse_time_ns
from jsstore.spark.scan import ScanFilter

NEVER_NULL = {"seq", "subject", "time", "time_ns", "data", "key", "revision", "created",
              "operation"}
NANOS_PER_MICRO = 1000


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _seq_bounds(kind, value: int):
    """(low, high) of the sequences satisfying `seq <op> value`, or None."""
    if kind is EqualTo or kind is EqualNullSafe:
        return value, value
    if kind is GreaterThan:
        return value + 1, None
    if kind is GreaterThanOrEqual:
        return value, None
    if kind is LessThan:
        return None, value - 1
    if kind is LessThanOrEqual:
        return None, value
    return None


def _micros_to_ns_bounds(kind, micros: int):
    """Bounds on ns for `floor(ns / 1000) <op> micros`."""
    start = micros * NANOS_PER_MICRO
    end = start + NANOS_PER_MICRO - 1
    if kind is EqualTo or kind is EqualNullSafe:
        return start, end
    if kind is GreaterThan:
        return end + 1, None
    if kind is GreaterThanOrEqual:
        return start, None
    if kind is LessThan:
        return None, start - 1
    if kind is LessThanOrEqual:
        return None, end
    return None


class FilterTranslator:
    """Column names of the table mapped onto the scan: for a stream, the columns
    themselves; for a KV bucket, key -> subject (with the bucket's prefix), revision -> seq,
    created -> time."""

    def __init__(self, scan: ScanFilter, *, subject_column="subject", subject_prefix="",
                 seq_column="seq", time_column="time", time_ns_column="time_ns"):
        self.scan = scan
        self.subject_column = subject_column
        self.subject_prefix = subject_prefix
        self.seq_column = seq_column
        self.time_column = time_column
        self.time_ns_column = time_ns_column

    def push(self, filters) -> list:
        """Apply what can be applied; return the filters Spark must still evaluate."""
        rejected = []
        for item in filters:
            if not self._take(item):
                rejected.append(item)
        return rejected

    def _take(self, item) -> bool:
        kind = type(item)
        if len(item.attribute) != 1:
            return False
        column = item.attribute[0]
        if kind is IsNotNull:
            return column in NEVER_NULL and column in self._columns()
        value = getattr(item, "value", None)
        if column == self.seq_column and _is_int(value):
            bounds = _seq_bounds(kind, value)
            if bounds is None:
                return False
            self.scan.seq_range(bounds[0] if bounds[0] is not None else 0,
                                bounds[1] if bounds[1] is not None else self.scan.seq_high)
            return True
        if column == self.time_ns_column and _is_int(value):
            bounds = _seq_bounds(kind, value)
            if bounds is None:
                return False
            self._time(bounds)
            return True
        if column == self.time_column and isinstance(value, datetime.datetime):
            nanos = parse_time_ns(column, value)
            bounds = _micros_to_ns_bounds(kind, nanos // NANOS_PER_MICRO)
            if bounds is None:
                return False
            self._time(bounds)
            return True
        if column == self.subject_column:
            return self._subject(kind, item, value)
        return False

    def _columns(self):
        return {self.subject_column, self.seq_column, self.time_column, self.time_ns_column,
                "data", "value", "operation"}

    def _time(self, bounds) -> None:
        low, high = bounds
        self.scan.time_range(low if low is not None else self.scan.time_low,
                             high if high is not None else self.scan.time_high)

    def _subject(self, kind, item, value) -> bool:
        prefix = self.subject_prefix
        if kind in (EqualTo, EqualNullSafe) and isinstance(value, str):
            self.scan.subjects_in([prefix + value])
            return True
        if kind is In and all(isinstance(v, str) for v in value):
            self.scan.subjects_in([prefix + v for v in value])
            return True
        if kind is StringStartsWith and isinstance(value, str):
            self.scan.prefixes.append(prefix + value)
            return True
        return False
