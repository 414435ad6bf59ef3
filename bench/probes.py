"""Measurements that need a process of their own; ``report.py`` runs them as children.

    python bench/probes.py reopen-build DIR N    build an N-message FileStore in DIR, clean stop()
    python bench/probes.py reopen-open DIR N     time FileStore(...) + state() on it
    python bench/probes.py memory DIR N          resident memory of N distinct subjects

Each prints one JSON object on stdout.  A fresh process gives the reopen timing the
situation it stands for (a process starting on an existing store, imports already
done before the clock starts) and keeps the memory probe free of anything an earlier
measurement left in the heap.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time

import data
from workloads import STREAM_NAME, stream_config


def rss_anon_bytes() -> int:
    """Anonymous resident memory of this process (``RssAnon`` of /proc/self/status)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("RssAnon not reported by this kernel")


def open_filestore(directory: str, options=None):
    import jsstore
    from jsstore.store.config import StoreOptions

    return jsstore.FileStore(os.path.join(directory, STREAM_NAME), stream_config("file"),
                             options or StoreOptions())


def reopen_build(directory: str, n: int) -> dict:
    """Store ``n`` messages (subjects ``orders.<i % 1000>``, 128 bytes) in batches of 1000."""
    store = open_filestore(directory)
    pool = data.payload_pool()
    names = data.subject_names()
    distinct, pool_size = len(names), len(pool)
    start = time.perf_counter()
    for first in range(0, n, 1000):
        store.store_batch([(names[i % distinct], None, pool[i % pool_size])
                           for i in range(first, min(n, first + 1000))])
    store.flush_all_pending()
    stored = time.perf_counter() - start
    store.stop()
    return {"messages": n, "store_seconds": stored,
            "stop_seconds": time.perf_counter() - start - stored}


def reopen_open(directory: str, n: int) -> dict:
    """Time opening the stopped store and reading its state; check the state is the full store."""
    start = time.perf_counter()
    store = open_filestore(directory)
    state = store.state()
    seconds = time.perf_counter() - start
    store.stop()
    if (state.messages, state.first_seq, state.last_seq) != (n, 1, n):
        raise SystemExit(f"reopened state is wrong: messages={state.messages} "
                         f"first={state.first_seq} last={state.last_seq}, want {n} 1..{n}")
    if state.num_subjects != min(n, data.DISTINCT_SUBJECTS):
        raise SystemExit(f"reopened state has {state.num_subjects} subjects")
    return {"messages": n, "open_seconds": seconds}


def release_free_heap() -> None:
    """Collect garbage and hand free malloc pages back to the OS, so RssAnon counts live memory."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: RssAnon may include freed pages
        pass


def memory(parent: str, n: int) -> dict:
    """RssAnon before/after storing ``n`` messages on ``n`` distinct subjects into a FileStore.

    ``rss_after_store`` is read right after ``flush_all_pending()``, so it includes the
    cached bytes of the blocks just written.  ``rss_after_drop`` is read after the store
    has dropped those caches (``drop_caches()``, when the store has it), leaving the
    per-subject and per-block state a long-running store keeps.
    """
    import shutil
    import tempfile

    directory = tempfile.mkdtemp(prefix="jsstore-mem-", dir=parent)
    try:
        release_free_heap()
        before_open = rss_anon_bytes()
        store = open_filestore(directory)
        release_free_heap()
        after_open = rss_anon_bytes()
        for chunk in data.distinct_subject_chunks(n):
            store.store_batch(chunk)
        del chunk
        store.flush_all_pending()
        gc.collect()
        after_store = rss_anon_bytes()
        after_drop = None
        if hasattr(store, "drop_caches"):
            store.drop_caches()
            release_free_heap()
            after_drop = rss_anon_bytes()
        state = store.state()
        store.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    if state.messages != n or state.num_subjects != n:
        raise SystemExit(f"memory probe stored {state.messages} messages on "
                         f"{state.num_subjects} subjects, want {n} on {n}")
    return {"subjects": n, "rss_before_open": before_open, "rss_after_open": after_open,
            "rss_after_store": after_store, "rss_after_drop": after_drop,
            "bytes_per_subject": (after_store - after_open) / n,
            "bytes_per_subject_caches_dropped":
                None if after_drop is None else (after_drop - after_open) / n}


def main(argv: list[str]) -> None:
    command, args = argv[0], argv[1:]
    if command == "reopen-build":
        result = reopen_build(args[0], int(args[1]))
    elif command == "reopen-open":
        result = reopen_open(args[0], int(args[1]))
    elif command == "memory":
        result = memory(args[0], int(args[1]))
    else:
        raise SystemExit(f"unknown probe {command!r}")
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
