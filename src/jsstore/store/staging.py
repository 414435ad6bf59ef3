"""A restore's staging beside the streams (an upload's spool, a snapshot's extracted
stream): named for the process making it, so that what a restore killed half way left is
told from what a live one is using, and removed when a JetStream opens the directory."""

from __future__ import annotations

import os

from jsstore.deferred import deferred

shutil = deferred("shutil")     # (it loads bz2, lzma, fnmatch): only with stale staging to remove

STAGING = "js-restore-"     # js-restore-<pid>-...


def staging_prefix() -> str:
    """The name prefix of this process's restore staging files and folders (an upload's
    spool, a snapshot's extracted stream) beside the streams: its pid in it, so that
    what a killed process left is told from what a live one is using."""
    return f"{STAGING}{os.getpid()}-"


def remove_stale_staging(parent: str) -> list[str]:
    """Remove the restore staging files and folders in `parent` whose process is gone (a
    restore killed half way); the names removed."""
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(STAGING):
            continue
        pid = name[len(STAGING):].split("-", 1)[0]
        if pid.isdigit() and process_alive(int(pid)):
            continue
        path = os.path.join(parent, name)
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                continue
        removed.append(name)
    return removed


def process_alive(pid: int) -> bool:
    """Whether process `pid` exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
