"""The directory sink's commit: a write's staged rows land in the stream exactly once or
not at all, across a kill at any step.

Layout, under the store directory:

    .jsstore-staging/<account>/<stream>/<write id>/   one write: a batch job or a micro-batch
        <attempt>/part-<partition>-<n>.arrow.tmp      a task writing its rows
        <attempt>/part-<partition>-<n>.arrow          a task's rows, fsynced and renamed
        commit.json                                   the commit record, replaced atomically

A write is *keyed* when its id comes from the user (option `write_id`) or from a streaming
query (`<sink_id>@<batch id>`): running it again must not append it again.  Otherwise its
id is random and nobody can run it again.

The steps, by the names `step` announces them (a test kills the process at each):

    task.writing      a task has written part of its rows to its .tmp file
    task.written      ... all of them, fsynced, not yet renamed
    task.committed    ... renamed to .arrow: the task's commit message names it
    commit.started    the driver's commit holds the store (recovery done), no record yet
    commit.recorded   the record (state "appending": the files in order, the stream's last
                      sequence before the append) is on disk, nothing appended
    commit.appending  after each staged batch appended
    commit.appended   every row appended, the store not yet synced
    commit.synced     the store synced, the record still says "appending"
    commit.done       the record says "done", the staged files are still there
    commit.cleaned    the staged files are gone (a keyed write keeps its record)
    commit.rolling_back  a refused (or unkeyed, interrupted) commit's record says
                      "rolling_back" with the sequences to delete, none deleted yet
    abort.started     Spark's abort began, nothing removed yet

What recovery does (`recover`, run by every later write to the stream before it stages
anything, under the store's lock) with a record it finds:

- "appending": the commit was interrupted. The stream's messages after the recorded last
  sequence are walked against the staged rows (a message removed since by the stream's
  limits counts as appended; a row whose own Nats-Msg-Id the stream found a duplicate
  has no message).  A keyed write is finished from the first row not appended (roll
  forward); an unkeyed one is taken back: the messages it appended are deleted (its job
  failed as far as its user knows, and will be run again).
- "rolling_back": a commit refused by the stream (a limit, a too-large message) was being
  taken back: the rest of its messages are deleted.
- "done": the staged files are removed (for a keyed write, the record stays: it is how a
  rerun knows the write is in).
- "failed": the record and the staged files are removed.

A commit the stream refuses part-way (discard new, max_msg_size, a bad header) is taken
back the same way before the error is raised, so a failed job leaves the stream as it was
(messages a discard-old limit removed while the rows were appended stay removed).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from jsstore._core.columns.arrowblock import SubjectPredicate
from jsstore.spark.options import OptionError, SourceOptions
from jsstore.spark.rows import batch_rows
from jsstore.store.files import write_atomically
from jsstore.wire import apierrors as api_errors
from jsstore.wire.headers import HeaderError, encode_headers

STAGING_DIR = ".jsstore-staging"
RECORD = "commit.json"
PART_SUFFIX = ".arrow"
TMP_SUFFIX = ".tmp"
MSG_ID_HEADER = "Nats-Msg-Id"
WRITE_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,100}")
APPENDING, ROLLING_BACK, DONE, FAILED = "appending", "rolling_back", "done", "failed"
TASK_STEPS = ("task.writing", "task.written", "task.committed")
COMMIT_STEPS = ("commit.started", "commit.recorded", "commit.appending", "commit.appended",
                "commit.synced", "commit.done", "commit.cleaned")
ROLLBACK_STEPS = ("commit.rolling_back",)
ABORT_STEPS = ("abort.started",)

STEP_HOOK = None     # a test's fault injection: called with each step's name


def step(name: str) -> None:
    if STEP_HOOK is not None:
        STEP_HOOK(name)


class CommitError(RuntimeError):
    """The stream refused a commit's rows (nothing of it stays appended), or an
    interrupted commit can not be finished."""


def check_write_id(name: str, value: str) -> str:
    if not WRITE_ID_PATTERN.fullmatch(value):
        raise OptionError(f"option {name!r}: {value!r} must be 1-100 letters, digits, "
                          f"'_' or '-'")
    return value


def stream_staging(options: SourceOptions) -> str:
    return os.path.join(options.path, STAGING_DIR, options.account, options.stream)


def write_directory(options: SourceOptions, write_id: str) -> str:
    return os.path.join(stream_staging(options), write_id)


# -- tasks ---------------------------------------------------------------------------------

def stage_rows(attempt: str, partition: int, columns, batches, make: bool = False) -> str | None:
    """Write a task's rows to a part file of `attempt` (made when `make`, else it must
    exist: a task of an aborted job fails instead of staging into nothing).  Returns the
    part's path relative to the stream's staging directory, or None for no rows."""
    if make:
        os.makedirs(attempt, exist_ok=True)
    final = os.path.join(attempt, f"part-{partition}-{uuid.uuid4().hex[:12]}{PART_SUFFIX}")
    tmp = final + TMP_SUFFIX
    rows = 0
    try:
        with open(tmp, "xb") as sink:
            writer = None
            for batch in batches:
                batch = batch.select(columns)
                if writer is None:
                    writer = ipc.new_stream(sink, batch.schema)
                writer.write_batch(batch)
                rows += batch.num_rows
                step("task.writing")
            if writer is not None:
                writer.close()
            sink.flush()
            os.fsync(sink.fileno())
        step("task.written")
        if rows == 0:
            os.unlink(tmp)
            return None
        os.rename(tmp, final)
        fd = os.open(attempt, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        for path in (tmp, final):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        raise
    step("task.committed")
    staging = os.path.dirname(os.path.dirname(attempt))
    return os.path.relpath(final, staging)


# -- the record ------------------------------------------------------------------------------

def read_record(directory: str) -> dict | None:
    try:
        with open(os.path.join(directory, RECORD), "rb") as f:
            return json.loads(f.read())
    except FileNotFoundError:
        return None


def save_record(directory: str, record: dict) -> None:
    write_atomically(os.path.join(directory, RECORD), json.dumps(record).encode())


def is_done(options: SourceOptions, write_id: str) -> bool:
    record = read_record(write_directory(options, write_id))
    return record is not None and record["state"] == DONE


# -- appending -------------------------------------------------------------------------------

def staged_batches(staging: str, record: dict):
    for relative in record["files"]:
        with open(os.path.join(staging, relative), "rb") as source:
            yield from ipc.open_stream(source)


def check_subjects(js, stream_name: str, staging: str, files) -> None:
    """Refuse before anything is appended: a null subject or one outside the stream's."""
    subjects = list(js.stream_info(stream_name).config.subjects or [stream_name])
    accepts = SubjectPredicate(wildcards=subjects).accepts
    for batch in staged_batches(staging, {"files": files}):
        for subject in pc.unique(batch.column("subject")).to_pylist():
            if subject is None or not accepts(subject):
                raise OptionError(f"subject {subject!r} is not one of stream "
                                  f"{stream_name!r}'s subjects {subjects}")


def _msg_id(headers) -> str | None:
    if not headers:
        return None
    values = headers.get(MSG_ID_HEADER)
    return values[0] if values else None


def walk_appended(js, stream_name: str, staging: str, record: dict):
    """Match the stream's messages after the record's last sequence to the staged rows in
    order: (rows already appended, the sequences of this write's messages still there).
    CommitError when a message there is not the row it should be (the stream was written
    by someone else after the interruption)."""
    base = record["base_last_seq"]
    last = js.stream_info(stream_name).state.last_seq
    if last < base:
        raise CommitError(f"stream {stream_name!r} ends at sequence {last}, before the "
                          f"{base} write {record['write_id']!r} started from: it was purged "
                          f"or recreated since, so the write can not be finished")
    seq, done, ours = base + 1, 0, []
    if seq > last:
        return 0, ours
    for batch in staged_batches(staging, record):
        for subject, payload, headers in batch_rows(batch):
            if seq > last:
                return done, ours
            try:
                stored = js.get_msg(stream_name, seq)
            except api_errors.JSNoMessageFoundErr:
                stored = None             # removed since (limits): it was appended
            row_id = _msg_id(headers)
            if stored is not None and row_id is not None \
                    and (stored.headers or {}).get(MSG_ID_HEADER) != row_id:
                done += 1                 # a duplicate by its own Msg-Id: no message
                continue
            if stored is not None and bytes(stored.data) != payload:
                raise CommitError(
                    f"stream {stream_name!r}: message {seq} is not row {done} of the "
                    f"interrupted write {record['write_id']!r}; the stream was written after "
                    f"the interruption, so the write can not be finished or taken back")
            if stored is not None:
                ours.append(seq)
            seq += 1
            done += 1
    return done, ours


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


def append_from(js, stream_name: str, staging: str, record: dict, skip: int) -> None:
    """Append every staged row after the first `skip` ones, in order."""
    for batch in staged_batches(staging, record):
        if skip >= batch.num_rows:
            skip -= batch.num_rows
            continue
        append_batch(js, stream_name, batch.slice(skip) if skip else batch)
        skip = 0
        step("commit.appending")


def sync_stream(js, stream_name: str) -> None:
    with js.lock:
        store = js.lookup_stream_locked(stream_name).store
    sync = getattr(store, "sync", None)
    if sync is not None:
        sync()


def delete_seqs(js, stream_name: str, seqs) -> None:
    for seq in seqs:
        try:
            js.delete_msg(stream_name, seq, no_erase=True)
        except api_errors.JSNoMessageFoundErr:
            pass
        except api_errors.ApiError as exc:
            if "not found" not in str(exc).lower():
                raise


def roll_back(js, directory: str, record: dict, seqs) -> None:
    """Delete what the write appended, durably marking the intent first."""
    record = dict(record, state=ROLLING_BACK, delete=sorted(seqs))
    save_record(directory, record)
    step("commit.rolling_back")
    delete_seqs(js, record["stream"], record["delete"])
    sync_stream(js, record["stream"])
    save_record(directory, dict(record, state=FAILED))


def finish(js, options: SourceOptions, directory: str, record: dict) -> None:
    """Take an "appending" record to "done" (or, refused or unkeyed-and-interrupted, to
    "failed" with its messages deleted); the staged files are removed after."""
    stream_name = record["stream"]
    staging = stream_staging(options)
    done_rows, ours = walk_appended(js, stream_name, staging, record)
    if record.get("interrupted") and not record["keyed"]:
        roll_back(js, directory, record, ours)
        clean(directory, dict(record, state=FAILED))
        return
    try:
        append_from(js, stream_name, staging, record, done_rows)
    except (api_errors.ApiError, HeaderError) as exc:
        _done, appended = walk_appended(js, stream_name, staging, record)
        roll_back(js, directory, record, appended)
        clean(directory, dict(record, state=FAILED))
        raise CommitError(f"stream {stream_name!r} refused a row of write "
                          f"{record['write_id']!r}: {exc}; the {len(appended)} of its "
                          f"{sum(record['rows'])} rows appended before it were deleted "
                          f"again") from exc
    step("commit.appended")
    sync_stream(js, stream_name)
    step("commit.synced")
    save_record(directory, dict(record, state=DONE))
    step("commit.done")
    clean(directory, dict(record, state=DONE))
    step("commit.cleaned")


def clean(directory: str, record: dict) -> None:
    """Remove a finished write's staged files; the record stays for a keyed, done write."""
    keep = record["state"] == DONE and record["keyed"]
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif name != RECORD or not keep:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
    if not keep:
        try:
            os.rmdir(directory)
        except OSError:
            pass


def commit(js, options: SourceOptions, write_id: str, keyed: bool, files, rows) -> None:
    """The driver's commit of a write whose tasks staged `files` (relative paths, in task
    order) holding `rows` rows each.  The caller holds the store open (its lock)."""
    directory = write_directory(options, write_id)
    staging = stream_staging(options)
    check_subjects(js, options.stream, staging, files)
    step("commit.started")
    record = {"write_id": write_id, "stream": options.stream, "keyed": keyed,
              "files": list(files), "rows": list(rows), "state": APPENDING,
              "base_last_seq": js.stream_info(options.stream).state.last_seq}
    save_record(directory, record)
    step("commit.recorded")
    finish(js, options, directory, record)


def recover(js, options: SourceOptions) -> None:
    """Finish or take back every interrupted commit of the stream (see the module's doc)."""
    staging = stream_staging(options)
    try:
        names = sorted(os.listdir(staging))
    except FileNotFoundError:
        return
    for name in names:
        directory = os.path.join(staging, name)
        record = read_record(directory) if os.path.isdir(directory) else None
        if record is None:
            continue
        if record["state"] == APPENDING:
            finish(js, options, directory, dict(record, interrupted=True))
        elif record["state"] == ROLLING_BACK:
            delete_seqs(js, record["stream"], record["delete"])
            sync_stream(js, record["stream"])
            failed = dict(record, state=FAILED)
            save_record(directory, failed)
            clean(directory, failed)
        else:
            clean(directory, record)


def needs_recovery(options: SourceOptions) -> bool:
    """Whether `recover` has a record to act on (cheap: no store opened)."""
    staging = stream_staging(options)
    try:
        names = os.listdir(staging)
    except FileNotFoundError:
        return False
    for name in names:
        directory = os.path.join(staging, name)
        record = read_record(directory) if os.path.isdir(directory) else None
        if record is not None and (record["state"] != DONE or len(os.listdir(directory)) > 1):
            return True
    return False


def drop_attempts(options: SourceOptions, write_id: str, keep: str | None = None) -> None:
    """Remove the staged files of earlier attempts of a write that never committed (their
    driver is gone: a write is run by one job at a time)."""
    directory = write_directory(options, write_id)
    if read_record(directory) is not None or not os.path.isdir(directory):
        return
    for name in os.listdir(directory):
        if name != keep:
            shutil.rmtree(os.path.join(directory, name), ignore_errors=True)


def prune_sink(options: SourceOptions, sink_id: str, batch_id: int) -> None:
    """A streaming sink keeps only its newest done record: Spark replays no batch older
    than the last it committed."""
    staging = stream_staging(options)
    prefix = sink_id + "@"
    for name in os.listdir(staging):
        if name.startswith(prefix) and name[len(prefix):].isdigit() \
                and int(name[len(prefix):]) < batch_id:
            shutil.rmtree(os.path.join(staging, name), ignore_errors=True)
