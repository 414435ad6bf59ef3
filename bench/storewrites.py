"""The store writes of this tree against an earlier commit: store_msg and store_batch into
the file and the memory store, each tree in its own processes, alternated.

    python bench/storewrites.py BASE [--rounds R] [--n N] [--reps K]

BASE is exported and built as ``versus.py`` does. Each round runs, for every store and
operation, one child process per tree (the order alternating from round to round). A child
stores N messages (``data.messages``) K times, each time into a new store that it closes
and deletes at once, so every store starts from the same memory (README.md, "The embedded
store: memory against file, and steadiness"). A figure is the median CPU rate of the
child processes (time.process_time) over all the rounds; the ratio is this tree / BASE.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASES = [(method, store) for method in ("store_each", "store_batches")
         for store in ("jsstore-file", "jsstore-memory")]


def child(store: str, method: str, n: int, reps: int) -> list[float]:
    """CPU rates (msgs/s) of `reps` fresh stores of the tree measured."""
    import gc
    import shutil
    import time

    root = os.environ.get("JSSTORE_WRITES_ROOT", ROOT)   # the tree measured
    sys.path[:0] = [os.path.join(root, "src"), os.path.join(root, "bench")]
    import data
    from workloads import DRIVERS, split_batches

    msgs = data.messages(n)
    work = msgs if method == "store_each" else split_batches(msgs)
    rates = []
    for _ in range(reps):
        directory = tempfile.mkdtemp(prefix="jsstore-writes-")
        driver = DRIVERS[store](directory)
        gc.collect()
        start = time.process_time()
        getattr(driver, method)(work)
        rates.append(n / max(time.process_time() - start, 1e-9))
        driver.close()
        del driver
        shutil.rmtree(directory, ignore_errors=True)
    return rates


def run_child(tree: str, store: str, method: str, n: int, reps: int) -> list[float]:
    script = os.path.join(tree, "bench", "storewrites.py")
    if not os.path.exists(script):   # a base older than this script: run this one there
        script = os.path.abspath(__file__)
    env = dict(os.environ, JSSTORE_WRITES_ROOT=tree)
    out = subprocess.run([sys.executable, script, "--child", store, method, str(n), str(reps)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", nargs="?")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--child", nargs=4, metavar=("STORE", "METHOD", "N", "REPS"))
    args = parser.parse_args(argv)
    if args.child:
        store, method, n, reps = args.child
        print(json.dumps(child(store, method, int(n), int(reps))))
        return 0
    if not args.base:
        parser.error("BASE is required")
    from versus import export_base

    with tempfile.TemporaryDirectory(prefix="jsstore-writes-") as scratch:
        trees = {"base": export_base(args.base, scratch), "this": ROOT}
        rates: dict[tuple, list[float]] = {}
        for round_no in range(args.rounds):
            order = ["base", "this"] if round_no % 2 == 0 else ["this", "base"]
            for method, store in CASES:
                for which in order:
                    got = run_child(trees[which], store, method, args.n, args.reps)
                    rates.setdefault((method, store, which), []).extend(got)
                    print(f"round {round_no + 1} {method} {store} {which}: "
                          + ", ".join(f"{r / 1e6:.2f}M/s" for r in got), file=sys.stderr)
    print(f"\nmedian CPU rates, {args.rounds} rounds x {args.reps} stores of {args.n:,} messages; "
          f"ratio = this tree / {args.base}\n")
    print("| operation | store | base | this | ratio |")
    print("|---|---|---|---|---|")
    for method, store in CASES:
        base = statistics.median(rates[(method, store, "base")])
        this = statistics.median(rates[(method, store, "this")])
        print(f"| {method} | {store} | {base / 1e6:.2f}M/s | {this / 1e6:.2f}M/s | {this / base:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
