"""A test hook for power loss: what each file is known to hold durably.

Armed (``arm(path)``, or the ``JSSTORE_DURABLE_LOG`` environment variable naming a log file
when the module is imported, which is how a ``jsstore serve`` child gets it), every
successful fsync appends ``<length> <path>`` to the log: the file's first `length` bytes are
on disk.  A file written whole through a rename (``files.write_atomically`` with sync) is
logged with its full length once the rename is durable.  After a crash, `cut_to_durable`
makes a store directory look as it would after losing power at that moment: every file cut
back to its last logged length, every file never logged removed.

Armed, ``JSSTORE_DURABLE_SLOW`` (seconds) makes every group fsync take at least that long
(`slow_disk`): a slow disk, so that a test can kill the server while an fsync is under way.

Disarmed (the default) it costs one check of `LOG` per fsync and nothing else."""

from __future__ import annotations

import os
import threading
import time

ENV = "JSSTORE_DURABLE_LOG"

SLOW_ENV = "JSSTORE_DURABLE_SLOW"

LOG = None                      # the open log file while armed
SLOW = 0.0                      # seconds each group fsync waits first, while armed
_lock = threading.Lock()


def arm(path: str) -> None:
    global LOG
    disarm()
    LOG = open(path, "a", buffering=1)


def disarm() -> None:
    global LOG
    log, LOG = LOG, None
    if log is not None:
        log.close()


def slow_disk() -> None:
    """Called before a group fsync while armed: waits SLOW seconds."""
    if SLOW > 0:
        time.sleep(SLOW)


def record(path: str, length: int) -> None:
    """`path`'s first `length` bytes are durable (call only after the fsync succeeded)."""
    log = LOG
    if log is not None:
        with _lock:
            log.write(f"{length} {os.path.abspath(path)}\n")


def durable_lengths(log_path: str) -> dict[str, int]:
    """{path: durable length} from a log (the last entry of a path wins)."""
    out: dict[str, int] = {}
    with open(log_path) as f:
        for line in f:
            length, _, path = line.rstrip("\n").partition(" ")
            if path:
                out[path] = int(length)
    return out


def cut_to_durable(root: str, log_path: str) -> tuple[int, int]:
    """Cut every file under `root` back to what the log says is durable; remove those it
    never names.  Returns (files cut, files removed)."""
    lengths = durable_lengths(log_path)
    cut = removed = 0
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.abspath(os.path.join(folder, name))
            length = lengths.get(path)
            if length is None:
                os.unlink(path)
                removed += 1
            elif os.path.getsize(path) > length:
                os.truncate(path, length)
                cut += 1
    return cut, removed


if os.environ.get(ENV):
    arm(os.environ[ENV])
    SLOW = float(os.environ.get(SLOW_ENV) or 0)
