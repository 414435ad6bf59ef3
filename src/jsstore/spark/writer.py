"""Writing DataFrames into streams: batch writes to a store directory or over NATS, and the
streaming sink.

Input columns: `subject` STRING and `data` BINARY (or STRING, written as UTF-8) are
required; `headers` MAP<STRING, ARRAY<STRING>> (or MAP<STRING, STRING>) is optional.  Other
columns (seq, time, ... of a DataFrame read from a stream) are ignored.

Directory: each task stages its rows in an Arrow IPC file under
`<store>/.jsstore-staging/<stream>/`; the driver's commit() opens the store (taking its
lock: a store a running server owns is refused, naming it), creates the stream when asked,
and publishes the staged rows in task order through the embedded JetStream API, so the
stream's subjects, limits and Msg-Id de-duplication apply and sequences are contiguous.
abort() only deletes the staged files: the stream is untouched.

NATS: tasks publish themselves, waiting for every PubAck; each message carries a
Nats-Msg-Id made of the job id, the partition and the row number, so a task Spark retries
is de-duplicated by the stream (within its duplicate window) instead of appended twice.
"""

from __future__ import annotations

import os
import shutil
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from jsstore._core.arrowblock import SubjectPredicate
from jsstore.jetstream import account as jetstream
from jsstore.spark import natsclient
from jsstore.spark.options import OptionError, SourceOptions
from jsstore.store.files import lock_stream_dir
from jsstore.wire import apierrors as api_errors
from jsstore.wire.headers import encode_headers

STAGING_DIR = ".jsstore-staging"
WRITE_COLUMNS = ("subject", "data", "headers")
MSG_ID_HEADER = "Nats-Msg-Id"
BATCH_ID_PROPERTY = "streaming.sql.batchId"   # set by Spark on every task of a micro-batch


def check_input(schema: StructType) -> list[str]:
    names = schema.fieldNames()
    for required in ("subject", "data"):
        if required not in names:
            raise OptionError(f"writing needs a {required!r} column; the DataFrame has {names}")
    return [n for n in WRITE_COLUMNS if n in names]


def _headers_dict(value):
    """A headers cell (list of (key, value or values) pairs from Arrow) as a dict."""
    if not value:
        return None
    out: dict[str, list[str]] = {}
    for key, item in value:
        if item is None:
            continue
        values = item if isinstance(item, list) else [item]
        out.setdefault(key, []).extend(v for v in values if v is not None)
    return out or None


def batch_rows(batch: pa.RecordBatch):
    """(subject, payload bytes, headers dict or None) for every row of a batch."""
    subjects = batch.column("subject").to_pylist()
    data = batch.column("data")
    payloads = data.to_pylist()
    if pa.types.is_string(data.type) or pa.types.is_large_string(data.type):
        payloads = [p.encode() if p is not None else b"" for p in payloads]
    else:
        payloads = [p if p is not None else b"" for p in payloads]
    column = batch.column("headers") if "headers" in batch.schema.names else None
    if column is not None and column.null_count < len(column):
        headers = [_headers_dict(h) for h in column.to_pylist()]
    else:
        headers = [None] * len(subjects)
    return zip(subjects, payloads, headers)


# -- staged commit into a store directory ---------------------------------------------------

class StagedFile(WriterCommitMessage):
    def __init__(self, path: str, rows: int):
        self.path = path
        self.rows = rows


def staging_dir(options: SourceOptions) -> str:
    return os.path.join(options.path, STAGING_DIR, options.stream)


def stage_batches(options: SourceOptions, columns, batches,
                  directory: str | None = None) -> StagedFile:
    """Stage a task's rows in a file of their own. With `directory` (a batch job's, made
    by the driver) the file goes there and the task fails if the job was aborted
    meanwhile (its directory removed), so nothing staged outlives an aborted job."""
    if directory is None:
        directory = staging_dir(options)
        os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{uuid.uuid4().hex}.arrow")
    rows = 0
    writer = None
    try:
        with open(path, "xb") as sink:
            for batch in batches:
                batch = batch.select(columns)
                if writer is None:
                    writer = ipc.new_stream(sink, batch.schema)
                writer.write_batch(batch)
                rows += batch.num_rows
            if writer is not None:
                writer.close()
    except BaseException:
        discard([path])
        raise
    return StagedFile(path, rows)


def discard(paths) -> None:
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def check_not_owned(options: SourceOptions) -> None:
    """Fail fast (before any task runs) when a running server owns the stream's directory."""
    directory = options.stream_directory()
    if os.path.isdir(directory):
        os.close(lock_stream_dir(directory))


def publish_staged(options: SourceOptions, messages) -> int:
    """Append every staged file's rows in order; returns how many were appended."""
    appended = 0
    with jetstream.open(options.path) as js:
        try:
            js.stream_info(options.stream)
        except api_errors.JSStreamNotFoundErr:
            if not options.create:
                raise OptionError(f"no stream {options.stream!r} in {options.path}; "
                                  f"set option 'create' to 'true' to create it") from None
            params = {"name": options.stream, "subjects": options.subjects or [f"{options.stream}.>"]}
            if options.compression:
                params["compression"] = options.compression
            js.add_stream(**params)
        subjects = list(js.stream_info(options.stream).config.subjects or [options.stream])
        accepts = SubjectPredicate(wildcards=subjects).accepts
        staged = [m for m in messages if m is not None and m.rows]
        for message in staged:          # refuse before anything is appended
            with open(message.path, "rb") as source:
                for batch in ipc.open_stream(source):
                    for subject in pc.unique(batch.column("subject")).to_pylist():
                        if subject is None or not accepts(subject):
                            raise OptionError(f"subject {subject!r} is not one of stream "
                                              f"{options.stream!r}'s subjects {subjects}")
        for message in staged:
            with open(message.path, "rb") as source:
                for batch in ipc.open_stream(source):
                    appended += append_batch(js, options.stream, batch)
    return appended


def append_batch(js, stream_name: str, batch: pa.RecordBatch) -> int:
    """Publish a batch's rows into the stream, in order, under the JetStream's lock: a row
    without headers takes the path jsstore serve takes for such a publish
    (Stream.publish_plain), every other row (and every row that path declines) the full
    publish, so the stream's checks, limits and de-duplication apply to each."""
    appended = 0
    with js.lock:
        stream = js.lookup_stream_locked(stream_name)
        plain = stream.publish_plain
        routed: dict[str, bool] = {}
        for subject, payload, headers in batch_rows(batch):
            ours = routed.get(subject)
            if ours is None:
                ours = routed[subject] = js.capturing_stream_locked(subject) is stream
            if not ours:
                js.publish(subject, payload, headers=headers)    # raises what a publish would
            elif headers is not None or plain(subject, payload) is None:
                js.publish_locked(stream, subject, encode_headers(headers), payload)
            appended += 1
    return appended


class DirectoryWriter(DataSourceArrowWriter):
    def __init__(self, options: SourceOptions, schema: StructType):
        if not options.stream:
            raise OptionError("writing needs option 'stream'")
        self.options = options
        self.columns = check_input(schema)
        check_not_owned(options)
        # this job's staging directory: made here on the driver before any task runs, and
        # removed whole by commit or abort (a task still running after an abort fails)
        self.job_directory = os.path.join(staging_dir(options), uuid.uuid4().hex)
        os.makedirs(self.job_directory)

    def write(self, iterator):
        return stage_batches(self.options, self.columns, iterator, self.job_directory)

    def commit(self, messages):
        try:
            publish_staged(self.options, messages)
        finally:
            shutil.rmtree(self.job_directory, ignore_errors=True)

    def abort(self, messages):
        shutil.rmtree(self.job_directory, ignore_errors=True)


# -- over NATS --------------------------------------------------------------------------------

class PublishedRows(WriterCommitMessage):
    def __init__(self, rows: int, duplicates: int):
        self.rows = rows
        self.duplicates = duplicates


def publish_partition(options: SourceOptions, job_id: str, batches) -> PublishedRows:
    context = TaskContext.get()
    partition = context.partitionId() if context is not None else 0

    def messages():
        row = 0
        for batch in batches:
            for subject, payload, headers in batch_rows(batch):
                headers = dict(headers) if headers else {}
                headers[MSG_ID_HEADER] = [f"{job_id}-{partition}-{row}"]
                row += 1
                yield subject, payload, headers

    rows, duplicates = natsclient.publish_all(options, options.stream, messages())
    return PublishedRows(rows, duplicates)


class NatsWriter(DataSourceArrowWriter):
    def __init__(self, options: SourceOptions, schema: StructType):
        if not options.stream:
            raise OptionError("writing needs option 'stream'")
        self.options = options
        self.columns = check_input(schema)
        self.job_id = uuid.uuid4().hex[:16]

    def write(self, iterator):
        return publish_partition(self.options, self.job_id, iterator)


# -- streaming sink ---------------------------------------------------------------------------

class StreamSink(DataSourceStreamArrowWriter):
    """Each micro-batch is written as a batch write would be; message ids derived from the
    query's checkpointed batch id make a replayed batch a duplicate, not new messages.
    Directory sinks stage and append on commit (a batch id already appended is skipped:
    the last one is remembered in the staging directory, per `sink_id`); NATS sinks publish
    with Nats-Msg-Id `<sink_id>-<batch>-<partition>-<row>`, de-duplicated by the stream
    within its duplicate window."""

    def __init__(self, options: SourceOptions, schema: StructType):
        if not options.stream:
            raise OptionError("writing needs option 'stream'")
        self.options = options
        self.columns = check_input(schema)
        self.sink_id = options.sink_id or "sink"
        if not options.over_nats:
            check_not_owned(options)

    def write(self, iterator):
        if self.options.over_nats:
            # the batch id is not known in a task: ids come from the epoch Spark gives
            context = TaskContext.get()
            batch = context.getLocalProperty(BATCH_ID_PROPERTY) if context else None
            if batch is None:      # no batch id to derive from: unique ids, no de-duplication
                batch = uuid.uuid4().hex
            return publish_partition(self.options, f"{self.sink_id}-{batch}", iterator)
        return stage_batches(self.options, self.columns, iterator)

    def commit(self, messages, batchId):
        if self.options.over_nats:
            return
        marker = os.path.join(staging_dir(self.options), f"{self.sink_id}.committed")
        try:
            if os.path.exists(marker) and int(open(marker).read().strip() or -1) >= batchId:
                return         # this batch was appended before a restart: do not repeat it
            publish_staged(self.options, messages)
            with open(marker + ".tmp", "w") as f:
                f.write(str(batchId))
            os.replace(marker + ".tmp", marker)
        finally:
            discard(m.path for m in messages if m is not None)

    def abort(self, messages, batchId):
        if not self.options.over_nats:
            discard(m.path for m in messages if m is not None)
