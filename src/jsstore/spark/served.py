"""Whether another process serves a store directory a Spark write would change.

A jsstore process (jsstore serve, or a store opened in a program) holds an exclusive
record lock on `jsstore.lock` in every stream directory it has open: taking each one for a
moment tells, on any host that shares the locks, whether such a process is there, and who.

nats-server leaves no such signal.  It takes no lock and writes no pid file into its store
directory (it only makes `<dir>/jetstream` at start and probes it with a temporary file),
and it keeps a stream's state in memory, so a stream changed behind it is overwritten or
found corrupt at its next start (nats-server has acked and lost publishes this way).  A
directory with no `jetstream` folder is not being served (nats-server makes it when it
starts); into any other a write needs option `server_stopped` set to true: the user says no
nats-server serves it.
"""

from __future__ import annotations

import fcntl
import os

from jsstore.errors import StoreLocked
from jsstore.spark.options import OptionError, SourceOptions
from jsstore.store.files import LOCK_FILE

JETSTREAM_DIR = "jetstream"
STREAMS_DIR = "streams"


def stream_directories(path: str):
    root = os.path.join(path, JETSTREAM_DIR)
    for account in sorted(os.listdir(root)):
        streams = os.path.join(root, account, STREAMS_DIR)
        if os.path.isdir(streams):
            for name in sorted(os.listdir(streams)):
                directory = os.path.join(streams, name)
                if os.path.isdir(directory):
                    yield directory


def check_unlocked(directory: str) -> None:
    """StoreLocked naming the holder when a jsstore process holds the stream directory's
    lock.  Only probes: nothing is written (a stream no jsstore process ever opened has no
    lock file, and nobody to hold it)."""
    try:
        fd = os.open(os.path.join(directory, LOCK_FILE), os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another process"
        raise StoreLocked(f"store directory {directory} is in use by {holder}") from None
    finally:
        os.close(fd)                 # (releases the probe's lock)


def check_not_served(options: SourceOptions) -> None:
    """Raise (jsstore.errors.StoreLocked naming the holder, or OptionError) unless a write
    into `options.path` can not collide with a process serving it."""
    if not os.path.isdir(os.path.join(options.path, JETSTREAM_DIR)):
        return
    for directory in stream_directories(options.path):
        check_unlocked(directory)
    if not options.server_stopped:
        raise OptionError(
            f"{options.path} is a store directory that nats-server may be serving: "
            f"nats-server takes no lock a writer could see, and a stream changed behind it is "
            f"lost or found corrupt at its next start. Stop any nats-server serving it and set "
            f"option 'server_stopped' to 'true' (jsstore processes are still detected: they "
            f"lock the store)")
