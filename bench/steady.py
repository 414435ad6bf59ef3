"""Is store_msg steady over a long run? One file store (and one memory store), N messages
(default 10M) through ``store_msg``, the rate printed per slice of S messages (default 1M).

    python bench/steady.py [--n N] [--slice S] [--stores file,memory] [--dir DIR] [--json FILE]

The workload is report.py's (``data.py``: 128-byte payloads from the pool, subjects
``orders.<i % 1000>``), generated one slice at a time outside the timed loop so that the
input does not grow with N.  Each slice is timed on the wall clock and in CPU seconds of
the process (with the system time and page faults of the slice, where a dip comes from);
the summary gives the spread of the slices (slowest / median and fastest /
median).  The store is stopped and deleted after the run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
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
from workloads import DRIVERS  # noqa: E402

# steady: no slice slower than this fraction of the median slice (the 1.5x the speed
# issue allows its growth curves)
STEADY_TARGET = 1 / 1.5


def run(store: str, n: int, slice_n: int, work: str) -> dict:
    directory = tempfile.mkdtemp(prefix=store + "-", dir=work)
    driver = DRIVERS["jsstore-" + store](directory)
    names = data.subject_names()
    pool = data.payload_pool()
    store_msg = driver.store.store_msg
    walls, cpus, systems = [], [], []
    try:
        for first in range(0, n, slice_n):
            count = min(slice_n, n - first)
            msgs = [(names[i % len(names)], pool[i % len(pool)]) for i in range(first, first + count)]
            gc.collect()
            usage = resource.getrusage(resource.RUSAGE_SELF)
            start, start_cpu = time.perf_counter(), time.process_time()
            for subject, payload in msgs:
                store_msg(subject, None, payload)
            driver.store.flush_all_pending()
            walls.append(count / (time.perf_counter() - start))
            cpus.append(count / max(time.process_time() - start_cpu, 1e-9))
            after = resource.getrusage(resource.RUSAGE_SELF)
            systems.append(after.ru_stime - usage.ru_stime)
            print(f"  {store:<7} msgs {first + 1:>11,}-{first + count:<11,} {walls[-1]:>12,.0f} msgs/s "
                  f"({cpus[-1]:,.0f} per CPU s; system {systems[-1]:.2f} s, "
                  f"{after.ru_minflt - usage.ru_minflt:,} page faults)", file=sys.stderr, flush=True)
        state = driver.store.state()
        if (state.messages, state.last_seq) != (n, n):
            raise SystemExit(f"{store} store holds {state.messages} messages, want {n}")
    finally:
        driver.close()
        shutil.rmtree(directory, ignore_errors=True)
    return {"wall": walls, "cpu": cpus, "system_seconds": systems}


def spread(rates: list[float]) -> str:
    mid = statistics.median(rates)
    return (f"median {mid:,.0f} msgs/s, slowest {min(rates) / mid:.2f}x, "
            f"fastest {max(rates) / mid:.2f}x of the median")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--slice", type=int, default=1_000_000)
    parser.add_argument("--stores", default="file,memory",
                        help="stores measured one after the other (a name may repeat)")
    parser.add_argument("--dir", help="where the store goes (default: the system temp dir)")
    parser.add_argument("--json", help="also write the per-slice rates to this file")
    parser.add_argument("--quick", action="store_true", help="2M messages in 200,000 slices")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.slice = 2_000_000, 200_000
    if args.n <= 0 or args.slice <= 0:
        parser.error("--n and --slice must be positive")
    work = tempfile.mkdtemp(prefix="jsstore-steady-", dir=args.dir)
    results = {}
    try:
        for k, store in enumerate(args.stores.split(",")):
            name = store if store not in results else f"{store}#{k + 1}"
            results[name] = run(store, args.n, args.slice, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"store_msg, {args.n:,} messages of {data.PAYLOAD_SIZE} B, per {args.slice:,}-message slice")
    for store, rates in results.items():
        print(f"  {store:<7} wall: {spread(rates['wall'])}")
        print(f"  {store:<7} cpu:  {spread(rates['cpu'])}")
        print(f"  {store:<7} slices (wall, M/s): " + " ".join(f"{r / 1e6:.2f}" for r in rates["wall"]))
        print(f"  {store:<7} slices (cpu, M/s):  " + " ".join(f"{r / 1e6:.2f}" for r in rates["cpu"]))
        print(f"  {store:<7} system s a slice: " + " ".join(f"{r:.2f}" for r in rates["system_seconds"]))
    if args.json:
        with open(args.json, "w") as out:
            # make bench's rows: each store's slowest slice against its median (CPU rates)
            rows = [summary.row("steady", f"store_msg slowest {args.slice:,} slice, {store}",
                                min(rates["cpu"]), "median slice",
                                statistics.median(rates["cpu"]), STEADY_TARGET)
                    for store, rates in results.items()]
            json.dump({"n": args.n, "slice": args.slice, "rates": results, "summary": rows},
                      out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
