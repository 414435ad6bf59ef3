"""Directory writes, loud or right: what used to be dropped or half-applied without a word
is refused naming the problem, and a commit the stream refuses part-way leaves the stream
as it was."""

from __future__ import annotations

import os

import pytest

import jsstore
from jsstore.spark.staged import STAGING_DIR

pytestmark = pytest.mark.spark


def write(df, directory, stream="OUT", mode="append", **options):
    writer = df.write.format("jsstore").option("path", directory).option("stream", stream)
    for key, value in {"server_stopped": "true", **options}.items():
        writer = writer.option(key, value)
    writer.mode(mode).save()


def stored(directory, stream="OUT", account="$G"):
    with jsstore.open(directory, account=account) as js:
        state = js.stream_info(stream).state
        out = []
        for seq in range(state.first_seq, state.last_seq + 1):
            try:
                out.append(js.get_msg(stream, seq).data)
            except Exception:       # noqa: BLE001 - a deleted sequence
                continue
        return out


def make(directory, account="$G", **config):
    with jsstore.open(directory, account=account) as js:
        js.add_stream(name="OUT", subjects=["in.>"], **config)
        js.publish("in.0", b"before")


def no_staging_left(directory):
    for _root, _dirs, files in os.walk(os.path.join(directory, STAGING_DIR)):
        assert files == []


@pytest.mark.parametrize("config, problem", [
    ({"max_msgs": 50, "discard": "new"}, "maximum messages exceeded"),
    ({"max_msg_size": 100}, "message size exceeds maximum allowed"),
], ids=["discard-new", "max-msg-size"])
def test_a_commit_the_stream_refuses_part_way_leaves_it_as_it_was(spark, tmp_path, config,
                                                                   problem):
    directory = str(tmp_path)
    make(directory, **config)
    payloads = [b"v" * 10] * 80 + [b"w" * 200]                  # row 80 is too large
    df = spark.createDataFrame([(f"in.{i % 3}", p) for i, p in enumerate(payloads)],
                               "subject STRING, data BINARY").coalesce(1)
    with pytest.raises(Exception, match=rf"(?s)refused a row.*{problem}.*deleted again"):
        write(df, directory)
    assert stored(directory) == [b"before"]
    no_staging_left(directory)


def test_an_unknown_column_is_refused_not_dropped(spark, tmp_path):
    directory = str(tmp_path)
    make(directory)
    df = spark.createDataFrame([("in.1", b"x", "k")], "subject STRING, data BINARY, header STRING")
    with pytest.raises(Exception, match=r"unknown column\(s\) \['header'\]"):
        write(df, directory)
    assert stored(directory) == [b"before"]


def test_a_stream_read_can_be_written_back(spark, tmp_path):
    directory = str(tmp_path)
    make(directory)
    with jsstore.open(directory) as js:
        js.add_stream(name="COPY", subjects=["in2.>"])
    back = spark.read.format("jsstore").option("path", directory).option("stream", "OUT").load()
    write(back.selectExpr("'in2.x' AS subject", "data", "headers", "seq", "time", "time_ns"),
          directory, stream="COPY")
    assert stored(directory, "COPY") == [b"before"]


@pytest.mark.parametrize("schema, problem", [
    ("subject INT, data BINARY", "column 'subject' must be STRING, not int"),
    ("subject STRING, data INT", "column 'data' must be BINARY or STRING, not int"),
    ("subject STRING, data BINARY, headers MAP<STRING, INT>",
     "column 'headers' must be MAP<STRING, ARRAY<STRING>> or MAP<STRING, STRING>"),
], ids=["subject", "data", "headers"])
def test_a_column_of_the_wrong_type_is_refused(spark, tmp_path, schema, problem):
    directory = str(tmp_path)
    make(directory)
    values = {"subject INT, data BINARY": (1, b"x"), "subject STRING, data INT": ("in.1", 1)}
    row = values.get(schema, ("in.1", b"x", {"k": 1}))
    with pytest.raises(Exception, match=problem):
        write(spark.createDataFrame([row], schema), directory)


def test_null_data_is_refused_not_written_empty(spark, tmp_path):
    directory = str(tmp_path)
    make(directory)
    df = spark.createDataFrame([("in.1", b"a"), ("in.1", None)], "subject STRING, data BINARY")
    with pytest.raises(Exception, match=r"row 1 of the task has null data"):
        write(df.coalesce(1), directory)
    assert stored(directory) == [b"before"]
    no_staging_left(directory)


@pytest.mark.parametrize("subject", [None, "in.a b", "in..a"], ids=["null", "space", "empty-token"])
def test_a_subject_that_can_not_be_published_is_refused_naming_the_row(spark, tmp_path, subject):
    directory = str(tmp_path)
    make(directory)
    df = spark.createDataFrame([("in.1", b"a"), ("in.2", b"b"), (subject, b"c")],
                               "subject STRING, data BINARY")
    with pytest.raises(Exception, match=r"row 2 of the task"):
        write(df.coalesce(1), directory)
    assert stored(directory) == [b"before"]


def test_a_misspelled_write_option_is_refused(spark, tmp_path):
    """A misspelled write_id would otherwise make a write that must not repeat an unkeyed
    one, repeatable."""
    directory = str(tmp_path)
    make(directory)
    df = spark.createDataFrame([("in.1", b"a")], "subject STRING, data BINARY")
    with pytest.raises(Exception, match=r"\['writeid'\] are not taken by a write"):
        write(df, directory, writeid="nightly")
    assert stored(directory) == [b"before"]


def test_the_account_option_writes_into_that_account(spark, tmp_path):
    directory = str(tmp_path)
    make(directory, account="ACC")
    df = spark.createDataFrame([("in.1", b"acc")], "subject STRING, data BINARY")
    write(df, directory, account="ACC")
    assert stored(directory, account="ACC") == [b"before", b"acc"]
    with jsstore.open(directory) as js:
        assert js.stream_names() == []


@pytest.mark.parametrize("mode", ["overwrite", "error", "ignore"])
def test_only_append_is_taken(spark, tmp_path, mode):
    """A stream is append-only: a mode that would replace it, or skip the write when the
    stream exists, is refused rather than taken as append."""
    directory = str(tmp_path)
    make(directory)
    df = spark.createDataFrame([("in.1", b"a")], "subject STRING, data BINARY")
    with pytest.raises(Exception):
        write(df, directory, mode=mode)
    assert stored(directory) == [b"before"]


def test_a_keyed_write_run_again_appends_nothing(spark, tmp_path):
    directory = str(tmp_path)
    make(directory)
    df = spark.createDataFrame([(f"in.{i}", f"r{i}".encode()) for i in range(10)],
                               "subject STRING, data BINARY").repartition(2)
    write(df, directory, write_id="daily-2026-12-07")
    write(df, directory, write_id="daily-2026-12-07")
    assert sorted(stored(directory)) == sorted([b"before"] + [f"r{i}".encode() for i in range(10)])
    no_staging_left_but_records = [
        name for _root, _dirs, files in os.walk(os.path.join(directory, STAGING_DIR))
        for name in files if name != "commit.json"]
    assert no_staging_left_but_records == []


@pytest.mark.parametrize("option, value, problem", [
    ("subjects", "other.>", r"option 'subjects' \['other.>'\]: stream 'OUT' has subjects "
                            r"\['in.>'\]"),
    ("compression", "s2", r"option 'compression' 's2': stream 'OUT' has compression 'none'"),
], ids=["subjects", "compression"])
def test_creation_options_that_an_existing_stream_contradicts_are_refused(spark, tmp_path,
                                                                          option, value,
                                                                          problem):
    directory = str(tmp_path)
    make(directory)
    df = spark.createDataFrame([("in.1", b"a")], "subject STRING, data BINARY")
    with pytest.raises(Exception, match=problem):
        write(df, directory, create="true", **{option: value})
    assert stored(directory) == [b"before"]
    write(df, directory, create="true", subjects="in.>")       # what the stream has: fine
    assert stored(directory) == [b"before", b"a"]
