"""Crash recovery: a writer process is SIGKILLed at random points; every acknowledged
message must survive, acknowledged removals must stay removed, and reopening must
neither raise nor hang.  Also: a clean stop + reopen reads index.db and scans no block."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

import jsstore
from jsstore.store.filestore import FileStore

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import crashwriter  # noqa: E402

CYCLES = 24
REOPEN_TIMEOUT = 60.0


def child_env() -> dict:
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(HERE), "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env


class Ledger:
    """What the parent knows was acknowledged by the writers, over all cycles."""

    def __init__(self):
        self.acked: list[list[int]] = []
        self.removed: set[int] = set()
        self.maybe_removed: set[int] = set()
        self.lines = 0

    def take(self, line: str) -> None:
        parts = line.split()
        if parts[0] == "S":
            self.acked.append([int(parts[1]), int(parts[2])])
        elif parts[0] == "I":
            self.maybe_removed.add(int(parts[1]))
        elif parts[0] == "R":
            self.removed.add(int(parts[1]))
        else:
            raise AssertionError(f"unexpected writer output {line!r}")
        self.lines += 1

    def dump(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump({"acked": self.acked, "removed": sorted(self.removed),
                       "maybe_removed": sorted(self.maybe_removed)}, f)


def run_writer_until_killed(directory: str, seed: int, ledger: Ledger, rng: random.Random) -> int:
    """Start a writer, SIGKILL it after a random time; returns the number of acknowledged lines."""
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "crashwriter.py"), "write", directory,
                             str(seed)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
    lines: list[str] = []
    first_line = threading.Event()

    def reader():
        for raw in proc.stdout:
            if raw.endswith(b"\n"):
                lines.append(raw.decode())
                first_line.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    # wait until the writer is past recovery and writing, then kill it at a random moment
    started = first_line.wait(REOPEN_TIMEOUT)
    if started:
        time.sleep(rng.uniform(0.0, 0.4))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=REOPEN_TIMEOUT)
    thread.join(timeout=REOPEN_TIMEOUT)
    stderr = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    assert started, f"writer produced nothing (reopen hung or failed?): {stderr[-2000:]}"
    assert proc.returncode == -signal.SIGKILL, f"writer ended by itself: {stderr[-2000:]}"
    for line in lines:
        ledger.take(line)
    return len(lines)


def verify(directory: str, ledger: Ledger, tmp_path, mode: str) -> dict:
    path = os.path.join(tmp_path, "ledger.json")
    ledger.dump(path)
    out = subprocess.run([sys.executable, os.path.join(HERE, "crashwriter.py"), "verify", directory, path,
                          mode], capture_output=True, timeout=REOPEN_TIMEOUT, env=child_env())
    assert out.returncode == 0, f"reopen failed ({out.returncode}): {out.stderr.decode()[-3000:]}"
    result = json.loads(out.stdout.decode().strip().splitlines()[-1])
    assert result["errors"] == [], result["errors"]
    return result


def test_sigkill_cycles(tmp_path):
    directory = os.path.join(tmp_path, "stream")
    rng = random.Random(20240611)
    ledger = Ledger()
    total_lines = 0
    for cycle in range(CYCLES):
        total_lines += run_writer_until_killed(directory, 1000 + cycle, ledger, rng)
        # mostly a crash-style reopen (the next writer rebuilds again), sometimes a clean stop
        mode = "clean" if cycle % 4 == 3 else "abandon"
        result = verify(directory, ledger, tmp_path, mode)
        assert result["state"]["last_seq"] >= max((r[1] for r in ledger.acked), default=0)
    assert total_lines > CYCLES * 10, "writers acknowledged too little for the test to mean anything"
    assert len(ledger.removed) > 0
    blocks = [n for n in os.listdir(os.path.join(directory, "msgs")) if n.endswith(".blk")]
    assert len(blocks) > 1, "no block rollover happened"
    # a final in-process reopen agrees with the subprocess checks
    fs = crashwriter.open_store(directory)
    try:
        for first, last in ledger.acked[-50:]:
            for seq in range(first, last + 1):
                if seq not in ledger.removed and seq not in ledger.maybe_removed:
                    assert crashwriter.check_message(fs, seq) is None
        for seq in ledger.removed:
            with pytest.raises(jsstore.errors.MsgNotFound):
                fs.load_msg(seq)
    finally:
        fs.stop()


def fill(directory: str, count: int) -> FileStore:
    fs = crashwriter.open_store(directory)
    for seq in range(1, count + 1):
        assert fs.store_msg(*crashwriter.expected_message(seq))[0] == seq
    for seq in range(3, count, 17):
        assert fs.remove_msg(seq)
    return fs


def test_clean_reopen_scans_no_block(tmp_path, monkeypatch):
    directory = os.path.join(tmp_path, "stream")
    fs = fill(directory, 3000)
    before = fs.state()
    fs.stop()
    assert len(fs.blocks) > 3

    rebuilds = []
    reads = []
    real_rebuild, real_read = FileStore._rebuild, FileStore._read_block
    monkeypatch.setattr(FileStore, "_rebuild", lambda self, *args: rebuilds.append(args) or real_rebuild(self, *args))
    monkeypatch.setattr(FileStore, "_read_block", lambda self, mb: reads.append(mb.index) or real_read(self, mb))

    fs = crashwriter.open_store(directory)
    try:
        assert rebuilds == []
        # only the write block may be loaded (to append to it)
        assert set(reads) <= {fs.lmb.index}
        assert [mb.index for mb in fs.blocks if mb.is_loaded] in ([], [fs.lmb.index])
        assert not os.path.exists(os.path.join(directory, "msgs", "index.db"))
        after = fs.state()
        assert (after.messages, after.bytes, after.first_seq, after.last_seq, after.deleted) == \
            (before.messages, before.bytes, before.first_seq, before.last_seq, before.deleted)
        assert fs.subjects_totals(">") == {f"crash.{i}": n for i, n in
                                            before.subjects.items()} if before.subjects else True
        for seq in (1, 2, 4, 1500, 2999, 3000):
            assert crashwriter.check_message(fs, seq) is None
    finally:
        fs.stop()


def test_crash_reopen_rebuilds_same_state(tmp_path, monkeypatch):
    """Without stop() there is no index.db: the reopen rebuilds and reaches the same state."""
    directory = os.path.join(tmp_path, "stream")
    fs = fill(directory, 2000)
    before = fs.state()
    totals = fs.subjects_totals(">")
    for mb in fs.blocks:  # abandon: close descriptors, write nothing
        mb.close_file()
    del fs

    rebuilds = []
    real_rebuild = FileStore._rebuild
    monkeypatch.setattr(FileStore, "_rebuild", lambda self, *args: rebuilds.append(args) or real_rebuild(self, *args))
    fs = crashwriter.open_store(directory)
    try:
        assert len(rebuilds) == 1
        after = fs.state()
        assert (after.messages, after.bytes, after.first_seq, after.last_seq, after.deleted, after.lost) == \
            (before.messages, before.bytes, before.first_seq, before.last_seq, before.deleted, None)
        assert fs.subjects_totals(">") == totals
    finally:
        fs.stop()
