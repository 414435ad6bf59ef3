"""Loud or right: options are checked by name, subject filters by nats-server's rules, and a
streaming read honours `subject_filter` and fails at once on a stream that does not exist
(both readers where they take the option)."""

from __future__ import annotations

import os

import pytest

import jsstore
from jsstore import StoreOptions
from jsstoreserver import jsstore_server
from sparksession import JVM_FORMAT, require_jvm_reader

pytestmark = pytest.mark.spark

SUBJECTS = ("orders.eu.new", "orders.eu.paid", "orders.us.new")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("options"))
    with jsstore.open(directory, StoreOptions(block_size=2048)) as js:
        js.add_stream(name="ORDERS", subjects=["orders.>"])
        for i in range(90):
            js.publish(SUBJECTS[i % 3], b"m%d" % i)
    return directory


def batch(spark, fmt, directory, **options):
    read = spark.read.format(fmt).option("path", directory).option("stream", "ORDERS")
    for key, value in options.items():
        read = read.option(key, value)
    return read.load()


def _fails(action, *needles):
    with pytest.raises(Exception) as caught:
        action()
    text = str(caught.value)
    for needle in needles:
        assert needle.lower() in text.lower(), (needle, text[:2000])


@pytest.mark.parametrize("name", ["subject_filters", "subjectFilter", "strem", "fail_on_dataloss"])
def test_an_unknown_option_fails_the_batch_read(spark, source_format, store, name):
    _fails(lambda: batch(spark, source_format, store, **{name: "orders.eu.*"}).count(),
           name, "subject_filter", "partition_bytes")
    df = batch(spark, source_format, store, subject_filter="orders.eu.*, orders.us.>",
               partition_bytes="4096", batch_rows="7", fail_on_data_loss="true")
    assert df.count() == 90                 # the valid names still read


@pytest.mark.parametrize("name, value", [("startingOffsets", "earliest"),
                                         ("maxMessagesPerTrigger", "10")])
def test_a_streaming_option_fails_the_batch_read(spark, source_format, store, name, value):
    _fails(lambda: batch(spark, source_format, store, **{name: value}).count(), name, "stream")


@pytest.mark.parametrize("value", ["orders..x", "orders.>.x", "orders.", ".orders",
                                   "orders.eu.*,,orders.us.*", "orders. eu"])
def test_an_invalid_subject_filter_fails(spark, source_format, store, value):
    _fails(lambda: batch(spark, source_format, store, subject_filter=value).count(),
           "subject_filter")


def test_the_python_source_refuses_to_push_filters(spark, store):
    _fails(lambda: batch(spark, "jsstore", store, pushdown="true").count(), "pushdown", "jsstore-jvm")
    assert batch(spark, "jsstore", store, pushdown="false").filter("seq <= 5").count() == 5


def test_a_jvm_only_option_fails_the_python_source(spark, store):
    _fails(lambda: batch(spark, "jsstore", store, columnar="false").count(), "columnar", JVM_FORMAT)


def test_the_jvm_reader_refuses_python_only_options(spark, store):
    require_jvm_reader()
    for name, value in (("pushdown", "false"), ("nats_batch", "10"), ("kv_history", "true")):
        _fails(lambda: batch(spark, JVM_FORMAT, store, **{name: value}).count(), name)


# -- streaming ------------------------------------------------------------------------------

def stream_into_memory(spark, reader, name, checkpoint):
    query = (reader.writeStream.format("memory").queryName(name)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    try:
        query.awaitTermination(180)
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        return sorted((r["seq"], r["subject"]) for r in spark.sql(f"SELECT * FROM {name}").collect())
    finally:
        query.stop()


def stream(spark, **options):
    read = spark.readStream.format("jsstore")
    for key, value in options.items():
        read = read.option(key, value)
    return read.load()


def _expected(pattern):
    from jsstore._core.storage.subjects import is_subset_match
    return [(i + 1, SUBJECTS[i % 3]) for i in range(90)
            if any(is_subset_match(SUBJECTS[i % 3], p.strip()) for p in pattern.split(","))]


@pytest.mark.parametrize("pattern", ["orders.eu.*", "orders.us.new,orders.*.paid"])
def test_a_streaming_read_honours_subject_filter(spark, store, tmp_path, pattern):
    got = stream_into_memory(spark, stream(spark, path=store, stream="ORDERS", subject_filter=pattern,
                                           maxMessagesPerTrigger="25"),
                             f"loud_filter_{len(pattern)}", str(tmp_path / "ck"))
    assert got == _expected(pattern)


def test_a_streaming_read_over_nats_honours_subject_filter(spark, store, tmp_path):
    with jsstore_server(store) as server:
        got = stream_into_memory(spark, stream(spark, url=server.url, stream="ORDERS",
                                               subject_filter="orders.eu.paid"),
                                 "loud_filter_nats", str(tmp_path / "ck"))
    assert got == _expected("orders.eu.paid")


def test_a_streaming_read_of_a_missing_stream_fails_at_start(spark, store, tmp_path):
    """From a directory and over NATS."""
    _fails(lambda: stream_into_memory(spark, stream(spark, path=store, stream="NOPE"),
                                      "loud_missing", str(tmp_path / "ck")), "NOPE")
    assert not os.path.isdir(os.path.join(store, "jetstream", "$G", "streams", "NOPE"))
    with jsstore_server(store) as server:
        _fails(lambda: stream_into_memory(spark, stream(spark, url=server.url, stream="NOPE"),
                                          "loud_missing_nats", str(tmp_path / "ck-nats")), "NOPE")


@pytest.mark.parametrize("name, value", [("kv_history", "true"), ("pushdown", "false"),
                                         ("subjectFilter", "orders.>")])
def test_a_batch_or_unknown_option_fails_the_streaming_read(spark, store, tmp_path, name, value):
    _fails(lambda: stream_into_memory(spark, stream(spark, path=store, stream="ORDERS", **{name: value}),
                                      f"loud_batch_{name.lower()}", str(tmp_path / "ck")),
           name, "startingOffsets")


def test_an_invalid_subject_filter_fails_the_streaming_read(spark, store, tmp_path):
    _fails(lambda: stream_into_memory(spark, stream(spark, path=store, stream="ORDERS",
                                                    subject_filter="orders..x"),
                                      "loud_bad_filter", str(tmp_path / "ck")), "subject_filter")
