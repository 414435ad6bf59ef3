"""The directory sink across a kill at every step of its commit protocol: a child process
runs one write as Spark runs it (tests/sinkcrash.py) and is SIGKILLed when the protocol
reaches a step; then the write is run again (or another write recovers it) and every row
must be in the stream exactly once (or, for a write nobody can name again, not at all),
the messages already there untouched, and no staged file left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

import jsstore
from jsstore.wire.apierrors import JSNoMessageFoundErr

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from jsstore.spark import staged  # noqa: E402  (needs pyarrow)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
SRC = os.path.join(os.path.dirname(HERE), "src")
ROWS, PARTITIONS = 900, 3            # 3 tasks of 3 staged batches each
BEFORE = 3
# every step, mid-write and mid-append at more than one point
CASES = [("task.writing", 1), ("task.writing", 5), ("task.written", 2), ("task.committed", 3),
         ("commit.started", 1), ("commit.recorded", 1), ("commit.appending", 1),
         ("commit.appending", 5), ("commit.appended", 1), ("commit.synced", 1),
         ("commit.done", 1), ("commit.cleaned", 1)]
IDS = [f"{step}-{nth}" for step, nth in CASES]


def test_the_cases_cover_every_step():
    assert {step for step, _ in CASES} == set(staged.TASK_STEPS + staged.COMMIT_STEPS)


def run(store, kind, write_id, step="-", nth=0, fail=False,
        ids=False) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    args = [sys.executable, os.path.join(HERE, "sinkcrash.py"), store, kind, write_id,
            str(ROWS), str(PARTITIONS), step, str(nth)] + (["fail"] if fail else []) \
        + (["ids"] if ids else [])
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)


def killed(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == -signal.SIGKILL, (done.returncode, done.stderr[-2000:])


def finished(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def make_store(tmp_path, name="store", **config) -> str:
    store = str(tmp_path / name)
    with jsstore.open(store) as js:
        js.add_stream(name="OUT", subjects=["in.>"], **config)
        for i in range(BEFORE):
            js.publish("in.x", f"before-{i}".encode())
    return store


def stored(store) -> list[tuple[int, bytes]]:
    out = []
    with jsstore.open(store) as js:
        state = js.stream_info("OUT").state
        for seq in range(state.first_seq, state.last_seq + 1):
            try:
                out.append((seq, js.get_msg("OUT", seq).data))
            except JSNoMessageFoundErr:
                continue
    return out


def payload_counts(store) -> dict[bytes, int]:
    counts: dict[bytes, int] = {}
    with jsstore.open(store) as js:
        state = js.stream_info("OUT").state
        for seq in range(state.first_seq, state.last_seq + 1):
            try:
                data = js.get_msg("OUT", seq).data
            except JSNoMessageFoundErr:      # a deleted sequence
                continue
            counts[data] = counts.get(data, 0) + 1
    return counts


def rows_of(tag: str) -> set[bytes]:
    return {f"{tag}-{i}".encode() for i in range(ROWS)}


def staged_files(store) -> list[str]:
    """Every file under the staging directory but a done write's record."""
    out = []
    for root, _dirs, files in os.walk(os.path.join(store, staged.STAGING_DIR)):
        for name in files:
            path = os.path.join(root, name)
            if name == staged.RECORD and staged.read_record(root)["state"] == staged.DONE:
                continue
            out.append(os.path.relpath(path, store))
    return out


def assert_once(store, tags=("row",)) -> None:
    counts = payload_counts(store)
    expected = {f"before-{i}".encode() for i in range(BEFORE)}
    for tag in tags:
        expected |= rows_of(tag)
    wrong = {k: v for k, v in counts.items() if v != 1}
    assert not wrong, f"{len(wrong)} payloads stored more than once, e.g. {list(wrong.items())[:3]}"
    assert set(counts) == expected, (len(counts), len(expected),
                                     sorted(expected - set(counts))[:5])


@pytest.mark.parametrize("step,nth", CASES, ids=IDS)
def test_a_keyed_write_killed_at_a_step_and_run_again_lands_once(tmp_path, step, nth):
    store = make_store(tmp_path)
    killed(run(store, "batch", "job-7", step, nth))
    finished(run(store, "batch", "job-7"))
    assert_once(store)
    assert staged_files(store) == []
    finished(run(store, "batch", "job-7"))          # once in, a rerun appends nothing
    assert_once(store)


@pytest.mark.parametrize("step,nth", CASES, ids=IDS)
def test_a_sink_batch_killed_at_a_step_and_replayed_lands_once(tmp_path, step, nth):
    store = make_store(tmp_path)
    killed(run(store, "sink", "4", step, nth))
    finished(run(store, "sink", "4"))               # Spark replays the batch on restart
    assert_once(store)
    assert staged_files(store) == []


@pytest.mark.parametrize("step,nth", CASES, ids=IDS)
def test_an_unkeyed_write_killed_at_a_step_is_all_or_nothing(tmp_path, step, nth):
    """Nobody can run an unkeyed write again, so the next write takes back what an
    interrupted commit appended; a write whose record said done before the kill stays."""
    store = make_store(tmp_path)
    killed(run(store, "batch", "-row", step, nth))
    finished(run(store, "batch", "-other"))         # the next write recovers
    landed = step in ("commit.done", "commit.cleaned")
    assert_once(store, ("row", "other") if landed else ("other",))
    recorded = staged.COMMIT_STEPS.index(step) >= staged.COMMIT_STEPS.index("commit.recorded") \
        if step in staged.COMMIT_STEPS else False
    left = staged_files(store)
    if recorded:
        assert left == []
    else:                            # a driver killed before its commit: documented leftovers
        assert all(staged.STAGING_DIR in path and staged.RECORD not in path for path in left)


def test_an_abort_killed_half_way_and_a_rerun_lands_once(tmp_path):
    store = make_store(tmp_path)
    killed(run(store, "batch", "job-9", "abort.started", 1, fail=True))
    assert_once(store, ())
    finished(run(store, "batch", "job-9"))
    assert_once(store)
    assert staged_files(store) == []


def test_a_failed_job_leaves_the_stream_and_the_staging_as_they_were(tmp_path):
    store = make_store(tmp_path)
    finished(run(store, "batch", "job-3", fail=True))
    assert_once(store, ())
    assert staged_files(store) == []


@pytest.mark.parametrize("step,nth", [("commit.recorded", 1), ("commit.appending", 2),
                                      ("commit.appending", 7), ("commit.appended", 1)],
                         ids=["recorded", "appending-2", "appending-7", "appended"])
@pytest.mark.parametrize("shape", ["limits", "msg-ids"])
def test_a_keyed_write_finished_after_a_kill_leaves_what_an_uninterrupted_one_does(
        tmp_path, step, nth, shape):
    """Limits that remove messages while the rows are appended (the walk counts a removed
    message as appended), or rows whose own Nats-Msg-Id the stream drops as a duplicate
    (no message): the finished write leaves the stream exactly as the same write run
    without a kill, the same sequences holding the same rows."""
    config = {"max_msgs_per_subject": 40, "max_msgs": 200} if shape == "limits" else {}
    ids = shape == "msg-ids"
    reference = make_store(tmp_path, "reference", **config)
    finished(run(reference, "batch", "job-1", ids=ids))
    if ids:                                   # one row in ten was a duplicate
        assert len(stored(reference)) == BEFORE + ROWS - ROWS // 10
    store = make_store(tmp_path, "store", **config)
    killed(run(store, "batch", "job-1", step, nth, ids=ids))
    finished(run(store, "batch", "job-1", ids=ids))
    assert stored(store) == stored(reference)
    assert staged_files(store) == []


def test_a_refused_commit_killed_while_taking_its_rows_back_is_taken_back(tmp_path):
    """The stream refuses the write part-way (discard new); killed after its record says
    what to delete and before anything is deleted, the next run deletes it (and is itself
    refused and taken back): the stream is as it was."""
    store = make_store(tmp_path, max_msgs=BEFORE + 500, discard="new")
    killed(run(store, "batch", "job-5", "commit.rolling_back", 1))
    again = run(store, "batch", "job-5")
    assert again.returncode != 0 and "maximum messages exceeded" in again.stderr
    assert_once(store, ())
    assert staged_files(store) == []


@pytest.mark.parametrize("step,nth", [("commit.appending", 4), ("commit.done", 1)],
                         ids=["mid-append", "done"])
def test_a_spark_driver_killed_in_its_commit_and_run_again_lands_once(tmp_path, step, nth):
    """The reported case, with Spark: the job's driver is killed in the middle of the
    write's commit (the commit's Python worker kills the driver, then itself); the job run
    again with the same write_id leaves every row once and no staged file."""
    from sparkjob import ROWS as JOB_ROWS      # the job's own size
    store = make_store(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.join(HERE, "sparkkill"), SRC, os.environ.get("PYTHONPATH", "")])}
    job = [sys.executable, os.path.join(HERE, "sparkjob.py"), store, "nightly"]
    first = subprocess.run(job, capture_output=True, text=True, timeout=300,
                           env={**env, "JSSTORE_TEST_KILL_AT": f"{step}:{nth}"})
    killed(first)
    partial = payload_counts(store)
    if step == "commit.appending":           # the kill left a half-appended commit
        assert BEFORE < len(partial) < BEFORE + JOB_ROWS
    finished(subprocess.run(job, capture_output=True, text=True, timeout=300, env=env))
    counts = payload_counts(store)
    assert {k: v for k, v in counts.items() if v != 1} == {}
    assert set(counts) == {f"before-{i}".encode() for i in range(BEFORE)} | {
        f"row-{i}".encode() for i in range(JOB_ROWS)}
    assert staged_files(store) == []
