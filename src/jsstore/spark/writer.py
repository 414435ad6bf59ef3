"""Writing DataFrames into streams: batch writes to a store directory or over NATS, and the
streaming sink.  The input columns and their checks are jsstore.spark.rows'.

Directory: tasks stage their rows, the driver's commit appends them through the embedded
JetStream API (the stream's subjects, limits and Msg-Id de-duplication apply; sequences
are contiguous), exactly once across a kill at any step (jsstore.spark.staged).  A
directory another process may be serving is refused (jsstore.spark.served).

NATS: the driver checks the target stream (STREAM.INFO) before any task runs; tasks
publish and wait for every PubAck, which must name the target stream.  Each message
carries Nats-Msg-Id `<write id>-<partition>-<row>` (a row's own Nats-Msg-Id is kept): a
task Spark retries, or a job rerun with the same `write_id`, is de-duplicated by the
stream within its duplicate window.
When the job fails, its abort tells the tasks still publishing to stop.
"""

from __future__ import annotations

import os
import shutil
import uuid

from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from jsstore.jetstream import account as jetstream
from jsstore.spark import natsclient, staged
from jsstore.spark.options import OptionError, SourceOptions
from jsstore.spark.rows import batch_rows, check_batch, check_input
from jsstore.spark.served import check_not_served
from jsstore.wire import apierrors as api_errors

MSG_ID_HEADER = staged.MSG_ID_HEADER
BATCH_ID_PROPERTY = "streaming.sql.batchId"   # set by Spark on every task of a micro-batch
CONNECTION_OPTIONS = ("path", "url", "user", "password", "token", "stream", "account")
DIRECTORY_OPTIONS = ("create", "subjects", "compression", "server_stopped")
WRITE_OPTIONS = CONNECTION_OPTIONS + DIRECTORY_OPTIONS + ("write_id",)
SINK_OPTIONS = CONNECTION_OPTIONS + DIRECTORY_OPTIONS + ("sink_id", "checkpointlocation")


def check_options(options: SourceOptions, allowed) -> None:
    """Refuse, naming it, an option a write does not take (a misspelled `write_id` would
    otherwise make a write that must not repeat an unkeyed one)."""
    if not options.stream:
        raise OptionError("writing needs option 'stream'")
    unknown = [name for name in options.given if name not in allowed]
    if unknown:
        raise OptionError(f"option(s) {unknown} are not taken by a write; it takes "
                          f"{', '.join(allowed)}")
    if options.over_nats:
        local = [name for name in options.given if name in DIRECTORY_OPTIONS]
        if local:
            raise OptionError(f"option(s) {local} are taken by directory writes only; over "
                              f"NATS the stream must exist")


def checked_batches(batches):
    """A task's batches, each checked (rows.check_batch) before it is used."""
    row = 0
    for batch in batches:
        check_batch(batch, row)
        row += batch.num_rows
        yield batch


def partition_id() -> int:
    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


# -- into a store directory ------------------------------------------------------------------

class StagedPart(WriterCommitMessage):
    def __init__(self, path: str | None, rows: int):
        self.path = path           # relative to the stream's staging directory; None: no rows
        self.rows = rows


def stage_part(attempt: str, columns, iterator, make: bool = False) -> StagedPart:
    """This task's rows, checked, staged in `attempt` (made first with `make`): its part."""
    rows = 0

    def counted():
        nonlocal rows
        for batch in checked_batches(iterator):
            rows += batch.num_rows
            yield batch

    path = staged.stage_rows(attempt, partition_id(), columns, counted(), make=make)
    return StagedPart(path, rows)


def ensure_stream(js, options: SourceOptions) -> None:
    """Create the stream when asked and missing; an existing stream must have the subjects
    and compression the options name (they would otherwise be dropped without a word)."""
    try:
        config = js.stream_info(options.stream).config
    except api_errors.JSStreamNotFoundErr:
        if not options.create:
            raise OptionError(f"no stream {options.stream!r} in {options.path}; "
                              f"set option 'create' to 'true' to create it") from None
        params = {"name": options.stream, "subjects": options.subjects or [f"{options.stream}.>"]}
        if options.compression:
            params["compression"] = options.compression
        js.add_stream(**params)
        return
    if options.subjects and sorted(options.subjects) != sorted(config.subjects or []):
        raise OptionError(f"option 'subjects' {options.subjects}: stream {options.stream!r} "
                          f"has subjects {list(config.subjects or [])} (the option only "
                          f"applies to a stream the write creates)")
    compression = str(getattr(config.compression, "value", config.compression) or "none")
    if options.compression and options.compression != compression:
        raise OptionError(f"option 'compression' {options.compression!r}: stream "
                          f"{options.stream!r} has compression {compression!r} (the option "
                          f"only applies to a stream the write creates)")


def open_store(options: SourceOptions):
    return jetstream.open(options.path, account=options.account)


def prepare_directory(options: SourceOptions) -> None:
    """On the driver, before any task: refuse a served directory, and finish or take back
    what interrupted writes left (jsstore.spark.staged.recover)."""
    check_not_served(options)
    if staged.needs_recovery(options):
        with open_store(options) as js:
            staged.recover(js, options)


def commit_write(options: SourceOptions, write_id: str, keyed: bool, messages) -> None:
    parts = [m for m in messages if m is not None and m.path]
    with open_store(options) as js:
        ensure_stream(js, options)
        staged.recover(js, options)
        if keyed and staged.is_done(options, write_id):
            return
        if parts:
            staged.commit(js, options, write_id, keyed, [m.path for m in parts],
                          [m.rows for m in parts])
    if not parts:
        abandon(options, write_id)


def abandon(options: SourceOptions, write_id: str) -> None:
    """Spark's abort, or a commit with nothing to append: remove the write's staged files,
    unless its commit got as far as its record (recovery decides then)."""
    staged.step("abort.started")
    directory = staged.write_directory(options, write_id)
    if staged.read_record(directory) is None:
        shutil.rmtree(directory, ignore_errors=True)


class DirectoryWriter(DataSourceArrowWriter):
    def __init__(self, options: SourceOptions, schema: StructType):
        check_options(options, WRITE_OPTIONS)
        self.options = options
        self.columns = check_input(schema)
        self.keyed = options.write_id is not None
        self.write_id = (staged.check_write_id("write_id", options.write_id) if self.keyed
                         else uuid.uuid4().hex)
        prepare_directory(options)
        # a keyed write already in: its tasks stage nothing and its commit appends nothing
        self.done = self.keyed and staged.is_done(options, self.write_id)
        # this attempt's staging directory, made here on the driver before any task runs
        # (a task of an aborted job, its directory removed, fails instead of staging)
        attempt = uuid.uuid4().hex[:12]
        self.attempt = os.path.join(staged.write_directory(options, self.write_id), attempt)
        if not self.done:
            staged.drop_attempts(options, self.write_id)
            os.makedirs(self.attempt)

    def write(self, iterator):
        if self.done:
            return StagedPart(None, 0)
        return stage_part(self.attempt, self.columns, iterator)

    def commit(self, messages):
        if not self.done:
            commit_write(self.options, self.write_id, self.keyed, messages)

    def abort(self, messages):
        if not self.done:
            abandon(self.options, self.write_id)


# -- over NATS --------------------------------------------------------------------------------

class PublishedRows(WriterCommitMessage):
    def __init__(self, rows: int, duplicates: int):
        self.rows = rows
        self.duplicates = duplicates


def publish_partition(options: SourceOptions, job_id: str, batches,
                      target: natsclient.WriteTarget | None = None) -> PublishedRows:
    partition = partition_id()

    def messages():
        row = 0
        for batch in checked_batches(batches):
            for subject, payload, headers in batch_rows(batch):
                headers = dict(headers) if headers else {}
                headers.setdefault(MSG_ID_HEADER, [f"{job_id}-{partition}-{row}"])
                row += 1
                yield subject, payload, headers

    rows, duplicates = natsclient.publish_all(options, options.stream, messages(),
                                              job_id=job_id, target=target)
    return PublishedRows(rows, duplicates)


class NatsWriter(DataSourceArrowWriter):
    def __init__(self, options: SourceOptions, schema: StructType):
        check_options(options, WRITE_OPTIONS)
        self.options = options
        self.columns = check_input(schema)
        self.job_id = (staged.check_write_id("write_id", options.write_id)
                       if options.write_id else uuid.uuid4().hex[:16])
        self.target = natsclient.WriteTarget(options, options.stream)

    def write(self, iterator):
        return publish_partition(self.options, self.job_id, iterator, self.target)

    def abort(self, messages):
        natsclient.announce_abort(self.options, self.job_id)


# -- streaming sink ---------------------------------------------------------------------------

class StreamSink(DataSourceStreamArrowWriter):
    """Each micro-batch is a write keyed `<sink_id>@<batch id>`: a batch Spark replays
    after a restart is not appended again.  Directory sinks stage and commit as a keyed
    batch write does (the newest done record of the sink is kept); NATS sinks publish with
    Nats-Msg-Id `<sink_id>-<batch>-<partition>-<row>`, de-duplicated by the stream within
    its duplicate window."""

    def __init__(self, options: SourceOptions, schema: StructType):
        check_options(options, SINK_OPTIONS)
        self.options = options
        self.columns = check_input(schema)
        self.sink_id = staged.check_write_id("sink_id", options.sink_id or "sink")
        self.attempt = uuid.uuid4().hex[:12]
        if options.over_nats:
            self.target = natsclient.WriteTarget(options, options.stream)
        else:
            prepare_directory(options)

    def write_id(self, batch) -> str:
        return f"{self.sink_id}@{batch}"

    def write(self, iterator):
        context = TaskContext.get()
        batch = context.getLocalProperty(BATCH_ID_PROPERTY) if context else None
        if batch is None:
            raise RuntimeError(f"the task has no {BATCH_ID_PROPERTY}: the sink can not tell "
                               f"which micro-batch it writes")
        if self.options.over_nats:
            return publish_partition(self.options, f"{self.sink_id}-{batch}", iterator,
                                     self.target)
        write_id = self.write_id(batch)
        if staged.is_done(self.options, write_id):
            return StagedPart(None, 0)         # a replayed batch already in the stream
        attempt = os.path.join(staged.write_directory(self.options, write_id), self.attempt)
        return stage_part(attempt, self.columns, iterator, make=True)

    def commit(self, messages, batchId):
        if self.options.over_nats:
            return
        commit_write(self.options, self.write_id(batchId), True, messages)
        staged.prune_sink(self.options, self.sink_id, batchId)

    def abort(self, messages, batchId):
        if self.options.over_nats:
            natsclient.announce_abort(self.options, f"{self.sink_id}-{batchId}")
        else:
            abandon(self.options, self.write_id(batchId))
