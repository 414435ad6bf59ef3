"""Group commit for a server: writes go to the OS at once, their fsync comes later, off the
thread that wrote them, one per file for everything written meanwhile.

A file store opened with ``StoreOptions(sync="always", group=SyncGroup())`` writes each
message without syncing and puts itself on its group's dirty list.  The owner of the group
(the server, once per event-loop iteration) takes the files to sync with `collect` -- under
the JetStream lock the stores run under, so no block is rolled meanwhile -- and hands them
to `run` on another thread; what was written before `collect` is durable once `run` returns
without an error.  Descriptors are duplicated by `collect`, so a block sealed or removed in
the meantime is still synced through its own descriptor."""

from __future__ import annotations

import os

from jsstore._core.storage import faults
from jsstore.store import durablelog


class SyncTarget:
    """One fsync: a duplicated descriptor, the file's path, the length known written when
    it was taken (None for a folder), and the store it is for (told when it fails)."""
    __slots__ = ("fd", "path", "length", "store")

    def __init__(self, fd: int, path: str, length: int | None, store=None):
        self.fd = fd
        self.path = path
        self.length = length
        self.store = store


class SyncGroup:
    def __init__(self):
        self.dirty: list = []           # stores written since the last collect
        self.fsyncs = 0                 # fsync calls made by run()

    def collect(self) -> list[SyncTarget]:
        """The fsyncs that make every write so far durable; the dirty list is emptied."""
        stores, self.dirty = self.dirty, []
        targets: list[SyncTarget] = []
        for store in stores:
            targets.extend(store.sync_targets())
        return targets

    def run(self, targets: list[SyncTarget]) -> str | None:
        """fsync every target (any thread); None when all succeeded, else the first error as
        Go's os.File.Sync words it.  The descriptors are closed either way.  The store of
        the target that failed keeps the error and refuses every later write with it (once
        an fsync has failed, what the kernel held for that file may be gone while a later
        fsync succeeds)."""
        error = None
        for target in targets:
            try:
                if error is None:
                    if durablelog.LOG is None:
                        faults.fsync(target.fd, target.path)
                    else:
                        durablelog.slow_disk()
                        faults.fsync(target.fd, target.path)
                        if target.length is not None:
                            durablelog.record(target.path, target.length)
                    self.fsyncs += 1
            except OSError as exc:
                text = faults.errno_text(exc.errno) if exc.errno else str(exc)
                error = f"sync {target.path}: {text}"
                if target.store is not None:
                    target.store.sync_failed(target.path, exc)
            finally:
                os.close(target.fd)
        return error

    @staticmethod
    def discard(targets: list[SyncTarget]) -> None:
        for target in targets:
            os.close(target.fd)
