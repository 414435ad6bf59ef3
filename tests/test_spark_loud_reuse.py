"""Loud or right: a DataFrame or a SQL view queried again answers the new query, never the
filters of an earlier one (both readers, every kind of filter, in every order).

pyspark (4.3) keeps a Python source's read info (the reader after pushFilters, and its
partitions) on the table provider of a DataFrame: a later query of the same DataFrame or
view that pushes no filter is planned with the earlier query's. The answers here are
computed from what was written, not by Spark.
"""

from __future__ import annotations

import datetime

import pytest

import jsstore
from jsstore import StoreOptions

pytestmark = pytest.mark.spark

SUBJECTS = ("orders.eu.new", "orders.eu.paid", "orders.us.new", "orders.ap.paid")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """240 messages over several blocks, a few deleted: {seq: (subject, time_ns)}."""
    directory = str(tmp_path_factory.mktemp("reuse"))
    rows = {}
    with jsstore.open(directory, StoreOptions(block_size=2048)) as js:
        js.add_stream(name="ORDERS", subjects=["orders.>"])
        for i in range(240):
            ack = js.publish(SUBJECTS[i % len(SUBJECTS)], b"x" * (i % 13))
            rows[ack.seq] = SUBJECTS[i % len(SUBJECTS)]
        for seq in (3, 100, 101):
            js.delete_msg("ORDERS", seq)
            del rows[seq]
        out = {seq: (subject, js.get_msg("ORDERS", seq).time) for seq, subject in rows.items()}
    return directory, out


def _micros_text(ns: int) -> str:
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=ns // 1000)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")


def _kinds(rows):
    """(name, SQL condition, predicate over (seq, subject, time_ns)) of every filter kind."""
    times = sorted(ts for _subject, ts in rows.values())
    middle = times[len(times) // 2]
    at = next(seq for seq, (_s, ts) in rows.items() if ts == middle)
    micros = middle // 1000
    return [
        ("seq =", "seq = 15", lambda s, subj, ts: s == 15),
        ("seq <=", "seq <= 10", lambda s, subj, ts: s <= 10),
        ("seq range", "seq > 50 AND seq < 120", lambda s, subj, ts: 50 < s < 120),
        ("seq IN", "seq IN (1, 2, 200)", lambda s, subj, ts: s in (1, 2, 200)),
        ("time_ns =", f"time_ns = {middle}", lambda s, subj, ts: ts == middle),
        ("time_ns >=", f"time_ns >= {middle}", lambda s, subj, ts: ts >= middle),
        ("time =", f"time = '{_micros_text(middle)}'", lambda s, subj, ts: ts // 1000 == micros),
        ("time <", f"time < '{_micros_text(middle)}'", lambda s, subj, ts: ts // 1000 < micros),
        ("subject =", "subject = 'orders.us.new'", lambda s, subj, ts: subj == "orders.us.new"),
        ("subject IN", "subject IN ('orders.eu.paid', 'orders.ap.paid', 'none')",
         lambda s, subj, ts: subj in ("orders.eu.paid", "orders.ap.paid")),
        ("startswith", "startswith(subject, 'orders.eu.')",
         lambda s, subj, ts: subj.startswith("orders.eu.")),
        ("LIKE", "subject LIKE 'orders.%.new'",
         lambda s, subj, ts: subj.startswith("orders.") and subj.endswith(".new")),
        ("combined", f"subject = 'orders.eu.new' AND seq BETWEEN 20 AND 200 AND time_ns <= {middle}",
         lambda s, subj, ts: subj == "orders.eu.new" and 20 <= s <= 200 and ts <= middle),
        ("NOT", "NOT (seq <= 200)", lambda s, subj, ts: not s <= 200),
        ("NOT subject", "NOT (subject = 'orders.eu.new')", lambda s, subj, ts: subj != "orders.eu.new"),
        ("OR", f"seq = {at} OR subject = 'orders.ap.paid'",
         lambda s, subj, ts: s == at or subj == "orders.ap.paid"),
    ]


def _want(rows, predicate):
    return sorted(seq for seq, (subject, ts) in rows.items() if predicate(seq, subject, ts))


def _seqs(df):
    return sorted(r["seq"] for r in df.select("seq").collect())


def _sequence(rows, kinds, index):
    """The queries asked in turn: unfiltered, this kind, unfiltered, the next kind, this kind
    again: filtered then unfiltered, unfiltered then filtered, two different filters."""
    name, condition, predicate = kinds[index]
    _other_name, other, other_predicate = kinds[(index + 1) % len(kinds)]
    everything = sorted(rows)
    return [(None, everything), (condition, _want(rows, predicate)), (None, everything),
            (other, _want(rows, other_predicate)), (condition, _want(rows, predicate))]


KIND_COUNT = 16


@pytest.mark.parametrize("index", range(KIND_COUNT))
def test_a_dataframe_and_a_view_queried_again(spark, source_format, store, index):
    """An unfiltered query counts (the issue's count() and count(*)); a filtered one lists
    the sequences."""
    directory, rows = store
    kinds = _kinds(rows)
    assert len(kinds) == KIND_COUNT
    name = kinds[index][0]
    df = spark.read.format(source_format).option("path", directory).option("stream", "ORDERS").load()
    view = f"loud_reuse_{source_format.replace('-', '_')}_{index}"
    (spark.read.format(source_format).option("path", directory).option("stream", "ORDERS").load()
     .createOrReplaceTempView(view))
    try:
        for condition, want in _sequence(rows, kinds, index):
            if condition is None:
                assert df.count() == len(want), (name, "DataFrame count")
                assert spark.sql(f"SELECT count(*) AS n FROM {view}").collect()[0]["n"] == len(want), \
                    (name, "view count(*)")
            else:
                assert _seqs(df.filter(condition)) == want, (name, "DataFrame", condition)
                got = sorted(r["seq"] for r in spark.sql(f"SELECT seq FROM {view} WHERE {condition}").collect())
                assert got == want, (name, "view", condition)
    finally:
        spark.catalog.dropTempView(view)


def test_one_query_reading_a_dataframe_twice(spark, source_format, store):
    """A union and a self-join of two filtered halves of one DataFrame: both scans are
    planned from the same table provider within one query."""
    directory, rows = store
    df = spark.read.format(source_format).option("path", directory).option("stream", "ORDERS").load()
    low = df.filter("seq <= 10")
    high = df.filter("subject = 'orders.ap.paid' AND seq > 200")
    want = _want(rows, lambda s, subj, ts: s <= 10 or (subj == "orders.ap.paid" and s > 200))
    assert _seqs(low.union(high)) == want
    joined = df.filter("seq = 15").alias("a").join(df.filter("seq = 16").alias("b"))
    assert joined.count() == 1
    assert df.count() == len(rows)
