"""Writing a store's small files (meta.inf, meta.sum, index.db, thw.db, o.dat, rewritten
blocks) so that a reader sees the old file or the new one, never a torn one."""

from __future__ import annotations

import os

FILE_MODE = 0o600


def write_atomically(path: str, data: bytes, sync: bool = True) -> None:
    """Write `data` to `path` through a temporary file renamed over it; with `sync` the data
    reaches the disk before the rename. Raises OSError (the temporary file removed)."""
    tmp = path + ".tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
