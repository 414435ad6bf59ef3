"""The streams issue's publish targets, side by side in one run.

    python bench/publish.py [--n N] [--reps R] [--quick] [--dir DIR] [--json FILE] [--check]

Every contender stores the same N messages (``data.py``: 128-byte payloads on
``orders.<i % 1000>``), one call per message, in a fresh store each repetition; the
order of the contenders rotates each repetition and a rate is the median.

- ``js.publish`` into a file stream with default limits (the unlimited rate);
- ``js.publish`` with ``max_msgs_per_subject=100`` (binding from the 100,000th message on:
  every later publish removes its subject's oldest message) and ``max_msgs`` set above it;
- ``js.publish`` with ``max_msgs=100,000`` binding (and ``max_msgs_per_subject`` set above);
- ``js.publish`` into a memory stream (context);
- SQLite, one row per call, 1,000 rows a transaction (the storage issue's baseline).

Targets: each limited rate within 1.5x of the unlimited one (limited / unlimited >= 1/1.5),
and the unlimited file rate >= 3x SQLite's.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
for path in (SRC, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)

import data  # noqa: E402
import summary  # noqa: E402
from workloads import SQLiteDriver  # noqa: E402

STREAM = "ORDERS"
PER_SUBJECT_LIMIT = 100
MAX_MSGS_LIMIT = 100_000
LIMIT_SLOWDOWN = 1.5       # a limited rate may be at most this much slower
SQLITE_RATIO = 3.0

CONTENDERS = {
    # name: (storage, limits)
    "js.publish file": ("file", {}),
    "js.publish file, per-subject limit": (
        "file", {"max_msgs_per_subject": PER_SUBJECT_LIMIT, "max_msgs": 10 * MAX_MSGS_LIMIT}),
    "js.publish file, max_msgs limit": (
        "file", {"max_msgs": MAX_MSGS_LIMIT, "max_msgs_per_subject": 10 * PER_SUBJECT_LIMIT * 1000}),
    "js.publish memory": ("memory", {}),
}


def run_jsstore(name: str, msgs: list, directory: str) -> tuple[float, int]:
    import jsstore
    storage, limits = CONTENDERS[name]
    js = jsstore.open(directory)
    js.add_stream(name=STREAM, subjects=["orders.>"], storage=storage, **limits)
    publish = js.publish
    gc.collect()
    start = time.perf_counter()
    for subject, _hdr, payload in msgs:
        publish(subject, payload)
    js._streams[STREAM].store.flush_all_pending()
    seconds = time.perf_counter() - start
    kept = js.stream_info(STREAM).state.messages
    last = js.stream_info(STREAM).state.last_seq
    js.close()
    if last != len(msgs):
        raise AssertionError(f"{name}: last_seq {last}, expected {len(msgs)}")
    return seconds, kept


def run_sqlite(msgs: list, directory: str) -> tuple[float, int]:
    driver = SQLiteDriver(directory)
    gc.collect()
    start = time.perf_counter()
    driver.store_each(msgs)
    seconds = time.perf_counter() - start
    driver.close()
    return seconds, len(msgs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=int(os.environ.get("JSSTORE_BENCH_N", 1_000_000)))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="N = 50,000")
    parser.add_argument("--dir", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    n = 50_000 if args.quick else args.n
    msgs = data.messages(n)
    names = list(CONTENDERS) + ["sqlite"]
    rates: dict[str, list[float]] = {name: [] for name in names}
    kept: dict[str, int] = {}
    work = tempfile.mkdtemp(prefix="jsstore-publish-", dir=args.dir)
    try:
        for rep in range(args.reps):
            turn = rep % len(names)
            for name in names[turn:] + names[:turn]:
                directory = tempfile.mkdtemp(dir=work)
                if name == "sqlite":
                    seconds, count = run_sqlite(msgs, directory)
                else:
                    seconds, count = run_jsstore(name, msgs, directory)
                shutil.rmtree(directory, ignore_errors=True)
                rates[name].append(n / seconds)
                kept[name] = count
                print(f"  {name:<36} rep {rep + 1}: {n / seconds:>12,.0f} msgs/s", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    median = {name: statistics.median(values) for name, values in rates.items()}
    unlimited = median["js.publish file"]
    print(f"\n{n:,} messages of 128 B on 1,000 subjects, median of {args.reps}\n")
    print("| contender | msgs/s | kept | vs unlimited | vs SQLite |")
    print("|---|---|---|---|---|")
    for name in names:
        print(f"| {name} | {median[name]:,.0f} | {kept[name]:,} | "
              f"{median[name] / unlimited:.2f} | {median[name] / median['sqlite']:.1f}x |")
    checks = {
        "per-subject limit within 1.5x": median["js.publish file, per-subject limit"] * LIMIT_SLOWDOWN >= unlimited,
        "max_msgs limit within 1.5x": median["js.publish file, max_msgs limit"] * LIMIT_SLOWDOWN >= unlimited,
        "js.publish >= 3x SQLite": unlimited >= SQLITE_RATIO * median["sqlite"],
    }
    print()
    for label, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}  {label}")
    if args.json:
        rows = [summary.row("publish", f"js.publish, {name.split(', ')[1]}", median[name],
                            "js.publish unlimited", unlimited, 1 / LIMIT_SLOWDOWN)
                for name in CONTENDERS if name.startswith("js.publish file, ")]
        rows.append(summary.row("publish", "js.publish file", unlimited, "SQLite",
                                median["sqlite"], SQLITE_RATIO))
        with open(args.json, "w") as f:
            json.dump({"n": n, "reps": args.reps, "rates": rates, "median": median,
                       "checks": checks, "summary": rows}, f, indent=1)
    return 0 if (all(checks.values()) or not args.check) else 1


if __name__ == "__main__":
    sys.exit(main())
