"""Writes over NATS, loud or right, against nats-server and jsstore serve alike: a wrong
stream name or a row the target stream does not capture is refused before anything is
published (nothing lands in another stream), a PubAck from another stream fails the task,
rows NATS can not carry are refused naming the row, and a failed job's tasks stop
publishing; a rerun with the same write_id lands each row once."""

from __future__ import annotations

import base64
import threading

import pyarrow as pa
import pytest

from jsstore.spark import natsclient
from jsstore.spark.options import SourceOptions
from jsstore.spark.writer import NatsWriter, publish_partition
from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

pytestmark = [pytest.mark.spark, pytest.mark.natsserver]


@pytest.fixture(params=["nats-server", "jsstore"])
def server(request, tmp_path):
    if request.param == "nats-server":
        require_nats_server()
        start = nats_server
    else:
        start = jsstore_server
    with start(str(tmp_path / "store")) as running:
        yield running


def add_stream(url, name, subjects, **config):
    with natsclient.Connection(SourceOptions(url=url, stream=name)) as conn:
        conn.request(f"$JS.API.STREAM.CREATE.{name}",
                     {"name": name, "subjects": subjects, "storage": "file", **config})


def messages(url, name) -> int:
    return natsclient.stream_info(SourceOptions(url=url, stream=name), name)["state"]["messages"]


def batch(subjects, payloads=None):
    payloads = payloads if payloads is not None else [b"x"] * len(subjects)
    return pa.RecordBatch.from_arrays([pa.array(subjects, pa.string()),
                                       pa.array(payloads, pa.binary())],
                                      names=["subject", "data"])


def test_a_write_to_a_stream_that_is_not_there_is_refused_before_any_row(spark, server):
    add_stream(server.url, "CAPTURE", ["out.>"])
    df = spark.createDataFrame([(f"out.{i % 3}", b"v") for i in range(3000)],
                               "subject STRING, data BINARY").repartition(2)
    with pytest.raises(Exception, match=r"'OUTT'.*stream not found.*10059"):
        df.write.format("jsstore").option("url", server.url).option("stream", "OUTT") \
            .mode("append").save()
    assert messages(server.url, "CAPTURE") == 0


def test_a_row_the_target_stream_does_not_capture_is_refused_before_it_is_sent(server):
    add_stream(server.url, "OUT", ["out.>"])
    add_stream(server.url, "OTHER", ["other.>"])
    options = SourceOptions(url=server.url, stream="OUT")
    rows = ["out.1"] * 10 + ["other.1"] * 2000
    with pytest.raises(natsclient.NatsError, match=r"'other.1' is not one of stream 'OUT'"):
        publish_partition(options, "job-a", iter([batch(rows)]))
    assert messages(server.url, "OTHER") == 0


def test_a_puback_from_another_stream_fails_the_task(server):
    """The target stream is replaced, after the write checked it, by one that captures the
    same subjects: the first PubAck naming it fails the task."""
    add_stream(server.url, "OUT", ["out.>"])
    options = SourceOptions(url=server.url, stream="OUT")
    target = natsclient.WriteTarget(options, "OUT")
    with natsclient.Connection(options) as conn:
        conn.request("$JS.API.STREAM.DELETE.OUT", b"")
    add_stream(server.url, "MOVED", ["out.>"])
    with pytest.raises(natsclient.NatsError, match=r"went to stream 'MOVED', not 'OUT'"):
        publish_partition(options, "job-b", iter([batch(["out.1"] * 10)]), target)


@pytest.mark.parametrize("subject, problem", [
    (None, "null subject"),
    ("out.a b", "not a subject to publish to"),
    ("out.a\r\nPUB out.b 1", "not a subject to publish to"),
    ("out..a", "not a subject to publish to"),
    ("", "not a subject to publish to"),
], ids=["null", "space", "crlf", "empty-token", "empty"])
def test_a_row_nats_can_not_carry_is_refused_naming_it(server, subject, problem):
    add_stream(server.url, "OUT", ["out.>"])
    options = SourceOptions(url=server.url, stream="OUT")
    with pytest.raises(Exception, match=rf"row 3 of the task .*{problem}"):
        publish_partition(options, "job-c", iter([batch(["out.1"] * 3 + [subject])]))
    assert messages(server.url, "OUT") == 0


def test_null_data_is_refused_not_written_empty(server):
    add_stream(server.url, "OUT", ["out.>"])
    options = SourceOptions(url=server.url, stream="OUT")
    with pytest.raises(Exception, match=r"row 1 of the task has null data"):
        publish_partition(options, "job-d", iter([batch(["out.1", "out.2"], [b"a", None])]))
    assert messages(server.url, "OUT") == 0


def test_a_message_over_max_payload_is_refused_before_it_is_sent(server):
    add_stream(server.url, "OUT", ["out.>"])
    options = SourceOptions(url=server.url, stream="OUT")
    big = b"z" * (1024 * 1024 + 1)
    with pytest.raises(natsclient.NatsError, match=r"over the server's max_payload 1048576"):
        publish_partition(options, "job-e", iter([batch(["out.1", "out.2"], [b"small", big])]))


def test_discard_new_refusal_fails_the_task_naming_the_stream(server):
    add_stream(server.url, "OUT", ["out.>"], max_msgs=5, discard="new")
    options = SourceOptions(url=server.url, stream="OUT")
    with pytest.raises(natsclient.NatsError, match=r"stream 'OUT' refused message 6"):
        publish_partition(options, "job-f", iter([batch(["out.1"] * 8)]))
    assert messages(server.url, "OUT") == 5


def test_a_rows_own_msg_id_is_kept(server):
    """A row that carries its own Nats-Msg-Id keeps it (the stream de-duplicates by it);
    rows without one get the write's."""
    add_stream(server.url, "OUT", ["out.>"])
    options = SourceOptions(url=server.url, stream="OUT")
    headers = pa.array([[("Nats-Msg-Id", ["mine-1"])], [("Nats-Msg-Id", ["mine-1"])], None],
                       pa.map_(pa.string(), pa.list_(pa.string())))
    rows = pa.RecordBatch.from_arrays(
        [pa.array(["out.1", "out.2", "out.3"]), pa.array([b"a", b"b", b"c"]), headers],
        names=["subject", "data", "headers"])
    published = publish_partition(options, "job-g", iter([rows]))
    assert (published.rows, published.duplicates) == (3, 1)
    with natsclient.Connection(options) as conn:
        stored = [base64.b64decode(conn.request("$JS.API.STREAM.MSG.GET.OUT",
                                                {"seq": seq})["message"]["hdrs"])
                  for seq in (1, 2)]
    assert b"Nats-Msg-Id: mine-1\r\n" in stored[0]
    assert b"Nats-Msg-Id: job-g-0-2\r\n" in stored[1]
    assert messages(server.url, "OUT") == 2


def test_directory_options_over_nats_are_refused(spark, server):
    """Over NATS the stream must exist: `create` (and its subjects) would be dropped."""
    df = spark.createDataFrame([("out.1", b"a")], "subject STRING, data BINARY")
    with pytest.raises(Exception, match=r"\['create', 'subjects'\] are taken by directory"):
        df.write.format("jsstore").option("url", server.url).option("stream", "OUT") \
            .option("create", "true").option("subjects", "out.>").mode("append").save()


def test_a_task_stops_publishing_when_its_job_is_aborted(server):
    """Spark calls the writer's abort() on the driver once the job failed; a task still
    publishing then stops at its next send, with an error saying why."""
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType
    add_stream(server.url, "OUT", ["out.>"])
    options = SourceOptions(url=server.url, stream="OUT")
    writer = NatsWriter(options, StructType([StructField("subject", StringType()),
                                             StructField("data", BinaryType())]))
    reached, resume = threading.Event(), threading.Event()
    outcome: dict = {}

    def batches():
        for number in range(40):
            if number == 4:
                reached.set()
                resume.wait(60)
            yield batch(["out.1"] * 250)

    def task():
        try:
            outcome["result"] = writer.write(batches())
        except Exception as exc:     # noqa: BLE001 - the task's failure is the subject
            outcome["error"] = exc

    thread = threading.Thread(target=task)
    thread.start()
    assert reached.wait(60)
    writer.abort([None])
    resume.set()
    thread.join(60)
    assert not thread.is_alive()
    assert "was aborted" in str(outcome.get("error")), outcome
    assert messages(server.url, "OUT") <= 1000 + 2 * 256     # what it had read, not 10,000


def test_after_a_failed_job_a_rerun_with_its_write_id_lands_each_row_once(spark, server):
    """Partition 0 finishes (its rows are in the stream), then partition 1 fails: the
    failed job leaves what its finished tasks published. Run again with the same write_id
    (and the same partitioning), the stream keeps each row once (Nats-Msg-Id
    de-duplication within the stream's duplicate window)."""
    from pyspark.sql import functions as F    # optional dependency of the test body
    rows, url = 4000, server.url
    add_stream(url, "OUT", ["out.>"])

    @F.udf("binary")
    def data(i, fail):
        if fail and i == rows // 2:          # partition 1's first row: once partition 0 is in
            import time as _time
            from jsstore.spark import natsclient as _nats
            from jsstore.spark.options import SourceOptions as _Options
            options = _Options(url=url, stream="OUT")
            while _nats.stream_info(options, "OUT")["state"]["messages"] < rows // 2:
                _time.sleep(0.05)
            raise ValueError("partition 1 fails")
        return f"v{i}".encode()

    def save(fail):
        spark.range(0, rows, numPartitions=2).select(
            F.concat(F.lit("out."), (F.col("id") % 5).cast("string")).alias("subject"),
            data("id", F.lit(fail)).alias("data")) \
            .write.format("jsstore").option("url", url).option("stream", "OUT") \
            .option("write_id", "nightly-1").mode("append").save()

    with pytest.raises(Exception, match="partition 1 fails"):
        save(True)
    assert messages(url, "OUT") == rows // 2
    save(False)
    assert messages(url, "OUT") == rows
    got = spark.read.format("jsstore").option("url", url).option("stream", "OUT").load() \
        .select("data").collect()
    assert sorted(bytes(r["data"]) for r in got) == sorted(f"v{i}".encode() for i in range(rows))
