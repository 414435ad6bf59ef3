"""A store's files beside its blocks: writing the small ones (meta.inf, meta.sum, index.db,
thw.db, o.dat, rewritten blocks) so that a reader sees the old file or the new one, never a
torn one, and the lock a process holds on a stream directory while it has the stream open."""

from __future__ import annotations

import fcntl
import os
import sys

from jsstore._core.storage import faults
from jsstore.errors import StoreLocked
from jsstore.store import durablelog

FILE_MODE = 0o600
LOCK_FILE = "jsstore.lock"   # held (POSIX record lock) while a process has the stream open


def write_atomically(path: str, data: bytes, sync: bool = True) -> None:
    """Write `data` to `path` through a temporary file renamed over it; with `sync` the data
    reaches the disk before the rename and the rename is made durable (the folder synced).
    Raises OSError (the temporary file removed)."""
    tmp = path + ".tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        try:
            faults.write_all(fd, data, path)
            if sync:
                faults.fsync(fd, path)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        if sync:
            sync_dir(os.path.dirname(path) or ".")
            if durablelog.LOG is not None:
                durablelog.record(path, len(data))
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def make_dirs(path: str, mode: int, sync: bool) -> None:
    """os.makedirs(path, mode, exist_ok=True); with `sync`, every folder it creates is
    made durable too (the folder holding it synced once it exists), so that a power loss
    after the first synced write inside cannot take the folder away."""
    if not sync:
        os.makedirs(path, mode=mode, exist_ok=True)
        return
    missing = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        current = os.path.dirname(current)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode)
        except FileExistsError:
            continue        # made meanwhile by another store: its maker syncs it
        sync_dir(os.path.dirname(folder))


def sync_dir(directory: str) -> None:
    """fsync a folder: the names created, renamed or removed in it are durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        faults.fsync(fd, directory)
    finally:
        os.close(fd)


def lock_stream_dir(directory: str) -> int:
    """Take the exclusive lock on a stream directory and write who holds it into the lock
    file; returns the descriptor that holds it (closing it releases the lock).  The lock is
    per process (fcntl record lock): a process may reopen a store it has open, another
    process gets StoreLocked naming the holder."""
    fd = os.open(os.path.join(directory, LOCK_FILE), os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another process"
        os.close(fd)
        raise StoreLocked(f"store directory {directory} is in use by {holder}") from None
    command = " ".join([os.path.basename(sys.argv[0] if sys.argv else "python")] + sys.argv[1:])
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} ({command[:200]})\n".encode(), 0)
    return fd


def lock_holder(directory: str) -> str:
    """Who holds a stream directory's lock, found without taking it or writing anything
    ("" when no process does).  Opening and closing the lock file drops this process's own
    lock on it (POSIX record locks are per process), so a process asks only about
    directories it does not have open."""
    try:
        fd = os.open(os.path.join(directory, LOCK_FILE), os.O_RDONLY)
    except FileNotFoundError:
        return ""
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        return os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another process"
    finally:
        os.close(fd)
    return ""
