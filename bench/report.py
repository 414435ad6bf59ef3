"""Measure every performance target of jsstore in one run and print the ratios.

    python bench/report.py [--quick] [--n N] [--reps R] [--reopen-n M] [--memory-n K]
                           [--skip-reopen] [--skip-memory] [--dir DIR] [--json FILE] [--check]
                           [--plot FILE.png]

The store workloads (``workloads.py``) run in this process, the stores of one
operation one after the other in an order that rotates each repetition; a rate is
the median over the repetitions.  The reopen and memory measurements run in child
processes (``probes.py``).  ``--check`` makes the exit status 1 when a target is not
met; without it the script only reports.  ``--plot`` draws each operation's ratio beside
its target (bench/plot.py, matplotlib).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
for path in (SRC, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)

import data  # noqa: E402
import summary  # noqa: E402
from workloads import DRIVERS, split_batches, verify  # noqa: E402


@dataclass(frozen=True)
class Operation:
    name: str            # the jsstore call measured
    method: str          # driver method that runs the whole workload
    contenders: tuple    # DRIVERS keys, all measured side by side
    baseline: str        # the contender the target ratio is against
    target_ratio: float  # jsstore file store rate / baseline rate must reach this
    aim: float | None    # the jsstore file store rate aimed for (msgs/s), if one is set


OPERATIONS = [
    Operation("store_msg", "store_each", ("jsstore-file", "jsstore-memory", "sqlite", "lmdb"),
              "sqlite", 4.0, 1_000_000),
    Operation("store_batch", "store_batches", ("jsstore-file", "jsstore-memory", "sqlite", "lmdb"),
              "lmdb", 3.0, 2_500_000),
    Operation("load_msg", "load_points", ("jsstore-file", "jsstore-memory", "sqlite", "lmdb"),
              "lmdb", 1.5, None),
    Operation("load_last_msg", "load_lasts", ("jsstore-file", "jsstore-memory", "sqlite"),
              "sqlite", 5.0, None),
    Operation("num_pending", "pending_counts", ("jsstore-file", "jsstore-memory", "sqlite"),
              "sqlite", 5.0, None),
]
WRITE_OPERATIONS = ("store_msg", "store_batch")
REOPEN_LIMIT_SECONDS = 0.5
MEMORY_LIMIT_BYTES = 32     # at 10M distinct subjects (--memory-n)
MEMORY_STORE_RATIO = 1.0    # memory store rate / file store rate, every operation


def jsstore_missing() -> str | None:
    """Why the jsstore stores cannot be measured, or None when they can."""
    try:
        import jsstore
    except ImportError as error:
        return f"jsstore does not import ({error})"
    absent = [name for name in ("FileStore", "MemStore") if not hasattr(jsstore, name)]
    return f"jsstore has no {', '.join(absent)} yet" if absent else None


def rotated(items: tuple, turn: int) -> list:
    turn %= len(items)
    return list(items[turn:] + items[:turn])


class Runner:
    def __init__(self, args, work_dir: str, unavailable: set[str]):
        self.args = args
        self.work_dir = work_dir
        self.unavailable = unavailable
        self.rates: dict[tuple[str, str], list[float]] = {}      # ops per wall-clock second
        self.cpu_rates: dict[tuple[str, str], list[float]] = {}  # ops per CPU second of this process

    def new_driver(self, name: str):
        directory = tempfile.mkdtemp(prefix=name + "-", dir=self.work_dir)
        driver = DRIVERS[name](directory)
        driver.bench_dir = directory
        return driver

    @staticmethod
    def discard(driver) -> None:
        """Close a measured store and delete its files at once: the page cache of every
        repetition's files kept to the end of the run made each later store write into
        memory the machine had never touched, whose page faults cost 3-4x more (see
        README.md, "The embedded store: memory against file, and steadiness")."""
        driver.close()
        shutil.rmtree(driver.bench_dir, ignore_errors=True)

    def timed(self, driver, method: str, workload) -> tuple[float, float]:
        """Wall-clock and process CPU seconds of one whole workload."""
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        getattr(driver, method)(workload)
        return time.perf_counter() - start, time.process_time() - start_cpu

    def record(self, operation: str, name: str, ops: int, seconds: tuple[float, float]) -> float:
        wall, cpu = seconds
        self.rates.setdefault((operation, name), []).append(ops / wall)
        self.cpu_rates.setdefault((operation, name), []).append(ops / max(cpu, 1e-9))
        return ops / wall

    def run_writes(self, msgs: list, batches: list) -> dict:
        """Both write operations; then one store per contender is built, untimed, for the
        reads. (Keeping the last round's stores instead left each store of that round
        writing into memory the machine had not touched lately: the ones measured before
        it in the round were kept, not freed.)"""
        kept = {}
        workloads = {"store_each": msgs, "store_batches": batches}
        for op in (o for o in OPERATIONS if o.name in WRITE_OPERATIONS):
            names = tuple(c for c in op.contenders if c not in self.unavailable)
            for rep in range(self.args.reps):
                for name in rotated(names, rep):
                    driver = self.new_driver(name)
                    seconds = self.timed(driver, op.method, workloads[op.method])
                    verify(driver, msgs, data.DISTINCT_SUBJECTS)
                    rate = self.record(op.name, name, len(msgs), seconds)
                    progress(f"{op.name:<14} {name:<15} rep {rep + 1}: {rate:>12,.0f} msgs/s")
                    self.discard(driver)
                    del driver
        for name in next(o for o in OPERATIONS if o.name == "store_batch").contenders:
            if name not in self.unavailable:
                kept[name] = self.new_driver(name)
                kept[name].store_batches(batches)
                verify(kept[name], msgs, data.DISTINCT_SUBJECTS)
        return kept

    def run_reads(self, stores: dict, n: int) -> None:
        workloads = {
            "load_points": data.random_seqs(min(n, 200_000), 1, n),
            "load_lasts": data.random_subject_queries(min(n, 100_000)),
            "pending_counts": data.random_pending_queries(min(n, 20_000), n),
        }
        for rep in range(self.args.reps):
            for op in (o for o in OPERATIONS if o.name not in WRITE_OPERATIONS):
                names = tuple(c for c in op.contenders if c not in self.unavailable)
                for name in rotated(names, rep):
                    workload = workloads[op.method]
                    seconds = self.timed(stores[name], op.method, workload)
                    rate = self.record(op.name, name, len(workload), seconds)
                    progress(f"{op.name:<14} {name:<15} rep {rep + 1}: {rate:>12,.0f} ops/s")

    def median(self, operation: str, name: str, cpu: bool = False) -> float | None:
        rates = (self.cpu_rates if cpu else self.rates).get((operation, name))
        return statistics.median(rates) if rates else None


def progress(line: str) -> None:
    print("  " + line, file=sys.stderr, flush=True)


def run_probe(*args: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, HERE, env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, os.path.join(HERE, "probes.py"), *args], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"probe {args[0]} failed:\n{done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_reopen(args, work_dir: str) -> dict:
    directory = tempfile.mkdtemp(prefix="jsstore-reopen-", dir=work_dir)
    progress(f"reopen: storing {args.reopen_n:,} messages ...")
    built = run_probe("reopen-build", directory, str(args.reopen_n))
    progress(f"reopen: stored at {args.reopen_n / built['store_seconds']:,.0f} msgs/s, "
             f"stop() took {built['stop_seconds']:.2f} s")
    opens = []
    for rep in range(args.reps):
        opens.append(run_probe("reopen-open", directory, str(args.reopen_n))["open_seconds"])
        progress(f"reopen: rep {rep + 1}: open + state() {opens[-1]:.3f} s")
    shutil.rmtree(directory, ignore_errors=True)
    return {"messages": args.reopen_n, "build": built, "open_seconds": opens,
            "median_seconds": statistics.median(opens)}


def fmt_rate(rate: float | None) -> str:
    if rate is None:
        return "n/a"
    if rate >= 1e6:
        return f"{rate / 1e6:.2f}M/s"
    return f"{rate / 1e3:.1f}k/s"


def print_report(args, runner: Runner, reopen: dict | None, mem: dict | None,
                 missing: str | None) -> list[dict]:
    rows = []
    for op in OPERATIONS:
        ours, theirs = runner.median(op.name, "jsstore-file"), runner.median(op.name, op.baseline)
        ratio = ours / theirs if ours and theirs else None
        ours_cpu, theirs_cpu = (runner.median(op.name, "jsstore-file", cpu=True),
                                runner.median(op.name, op.baseline, cpu=True))
        cpu_ratio = ours_cpu / theirs_cpu if ours_cpu and theirs_cpu else None
        aim = "" if op.aim is None or ours is None else (
            f"{fmt_rate(op.aim)} ({'met' if ours >= op.aim else 'not met'})")
        rows.append({"operation": op.name, "jsstore": fmt_rate(ours),
                     "baseline": f"{op.baseline} {fmt_rate(theirs)}",
                     "ratio": f"{ratio:.2f}x" if ratio else "n/a",
                     "cpu ratio": f"{cpu_ratio:.2f}x" if cpu_ratio else "n/a",
                     "target": f">= {op.target_ratio:g}x", "aim": aim,
                     "result": "MISSING" if ratio is None else ("PASS" if ratio >= op.target_ratio else "FAIL")})
    for op in OPERATIONS:
        # the memory store must be at least as fast as the file store on every operation
        if "jsstore-memory" not in op.contenders:
            continue
        memory_rate, file_rate = runner.median(op.name, "jsstore-memory"), runner.median(op.name, "jsstore-file")
        memory_cpu, file_cpu = (runner.median(op.name, "jsstore-memory", cpu=True),
                            runner.median(op.name, "jsstore-file", cpu=True))
        ratio = memory_rate / file_rate if memory_rate and file_rate else None
        cpu_ratio = memory_cpu / file_cpu if memory_cpu and file_cpu else None
        rows.append({"operation": f"{op.name}, memory store", "jsstore": fmt_rate(memory_rate),
                     "baseline": f"file {fmt_rate(file_rate)}", "ratio": f"{ratio:.2f}x" if ratio else "n/a",
                     "cpu ratio": f"{cpu_ratio:.2f}x" if cpu_ratio else "n/a",
                     "target": f">= {MEMORY_STORE_RATIO:g}x", "aim": "",
                     "result": "MISSING" if ratio is None else
                               ("PASS" if ratio >= MEMORY_STORE_RATIO else "FAIL")})
    if reopen is not None:
        seconds = reopen["median_seconds"]
        rows.append({"operation": f"reopen {reopen['messages']:,} msgs", "jsstore": f"{seconds:.3f} s",
                     "baseline": "-", "ratio": "-", "cpu ratio": "-", "target": f"< {REOPEN_LIMIT_SECONDS} s", "aim": "",
                     "result": "PASS" if seconds < REOPEN_LIMIT_SECONDS else "FAIL"})
    elif not args.skip_reopen:
        rows.append({"operation": "reopen", "jsstore": "n/a", "baseline": "-", "ratio": "-",
                     "target": f"< {REOPEN_LIMIT_SECONDS} s", "aim": "", "result": "MISSING"})
    if mem is not None:
        # The target is the memory that grows with the number of subjects: the subject
        # index and per-block state, measured once the block caches are released. With the
        # caches held, the figure also counts the cached message bytes, which are bounded by
        # StoreOptions.cache_budget rather than by the subject count: shown for information.
        for label, key, judged in (("with block caches", "bytes_per_subject", False),
                                   ("subject index (caches dropped)", "bytes_per_subject_caches_dropped", True)):
            per_subject = mem[key]
            rows.append({"operation": f"memory {mem['subjects']:,} subj, {label}",
                         "jsstore": "n/a" if per_subject is None else f"{per_subject:.1f} B/subj",
                         "baseline": "-", "ratio": "-", "cpu ratio": "-",
                         "target": f"<= {MEMORY_LIMIT_BYTES} B" if judged else "info", "aim": "",
                         "result": "MISSING" if per_subject is None else
                                   ("info" if not judged else
                                    "PASS" if per_subject <= MEMORY_LIMIT_BYTES else "FAIL")})
    elif not args.skip_memory:
        rows.append({"operation": "memory", "jsstore": "n/a", "baseline": "-", "ratio": "-",
                     "target": f"<= {MEMORY_LIMIT_BYTES} B", "aim": "", "result": "MISSING"})

    columns = ["operation", "jsstore", "baseline", "ratio", "cpu ratio", "target", "aim", "result"]
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in columns}
    print()
    print(f"jsstore performance targets: {args.n:,} messages of {data.PAYLOAD_SIZE} bytes on "
          f"{data.DISTINCT_SUBJECTS} subjects, median of {args.reps} reps (jsstore = file store)")
    print("ratio: of wall-clock rates (decides the result); cpu ratio: of rates per CPU second of "
          "the process, steadier on a busy machine")
    if missing:
        print(f"jsstore not measured: {missing}")
    print("  ".join(c.ljust(widths[c]) for c in columns))
    print("  ".join("-" * widths[c] for c in columns))
    for row in rows:
        print("  ".join(row[c].ljust(widths[c]) for c in columns))

    names = list(DRIVERS)
    print()
    print("all stores, median rate: ops per wall-clock second (ops per CPU second of the process)")
    print("operation".ljust(15) + "".join(n.rjust(22) for n in names))
    for op in OPERATIONS:
        cells = [f"{fmt_rate(runner.median(op.name, n))} ({fmt_rate(runner.median(op.name, n, cpu=True))})"
                 if n in op.contenders else "-" for n in names]
        print(op.name.ljust(15) + "".join(c.rjust(22) for c in cells))
    if reopen is not None:
        build = reopen["build"]
        print(f"\nreopen store built by store_batch at {reopen['messages'] / build['store_seconds']:,.0f} msgs/s; "
              f"open + state() runs: {', '.join(f'{s:.3f}' for s in reopen['open_seconds'])} s")
    if mem is not None:
        print(f"memory: RssAnon {mem['rss_before_open'] / 2**20:.1f} MiB before open, "
              f"{mem['rss_after_open'] / 2**20:.1f} MiB open and empty, "
              f"{mem['rss_after_store'] / 2**20:.1f} MiB after {mem['subjects']:,} subjects and "
              f"flush_all_pending()"
              + ("" if mem["rss_after_drop"] is None else
                 f", {mem['rss_after_drop'] / 2**20:.1f} MiB after drop_caches()"))
    return rows


def summary_rows(runner: Runner, reopen: dict | None, mem: dict | None) -> list[dict]:
    """make bench's rows (bench/summary.py): each operation against its baseline, the memory
    store against the file store, the reopen time and the memory per subject."""
    rows = [summary.row("store", f"{op.name} (file store)", runner.median(op.name, "jsstore-file"),
                        op.baseline, runner.median(op.name, op.baseline), op.target_ratio,
                        unit="ops/s") for op in OPERATIONS]
    rows += [summary.row("store", f"{op.name}, memory store", runner.median(op.name, "jsstore-memory"),
                         "file store", runner.median(op.name, "jsstore-file"), MEMORY_STORE_RATIO,
                         unit="ops/s") for op in OPERATIONS if "jsstore-memory" in op.contenders]
    if reopen is not None:
        rows.append(summary.row("store", f"reopen {reopen['messages']:,} msgs",
                                reopen["median_seconds"], "absolute", None, REOPEN_LIMIT_SECONDS,
                                unit="s", better=summary.LOWER))
    if mem is not None:
        rows.append(summary.row("store", f"memory per subject at {mem['subjects']:,} subjects",
                                mem["bytes_per_subject_caches_dropped"], "absolute", None,
                                MEMORY_LIMIT_BYTES, unit="B", better=summary.LOWER))
    return rows


def plot_targets(args, runner: Runner) -> None:
    from plot import plot_ratios
    points = []
    for op in OPERATIONS:
        ours, theirs = runner.median(op.name, "jsstore-file"), runner.median(op.name, op.baseline)
        if ours and theirs:
            points.append((f"{op.name} vs {op.baseline}", ours / theirs, op.target_ratio))
    plot_ratios(points, args.plot, f"jsstore file store, {args.n:,} messages, "
                                   f"median of {args.reps} (bars: measured, ticks: target)")
    progress(f"plot written to {args.plot}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a fast look")
    parser.add_argument("--n", type=int, help="messages per store (default 1M, or JSSTORE_BENCH_N)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per measurement")
    parser.add_argument("--reopen-n", type=int, help="messages in the reopen test (default 10M)")
    parser.add_argument("--memory-n", type=int, help="distinct subjects in the memory test (default 10M)")
    parser.add_argument("--skip-reopen", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--dir", help="where the temporary stores go (default: the system temp dir)")
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every target passes")
    parser.add_argument("--plot", help="draw the ratios against their targets into this PNG file")
    args = parser.parse_args(argv)
    args.n = args.n or data.bench_n(args.quick)
    args.reopen_n = args.reopen_n or (200_000 if args.quick else 10_000_000)
    args.memory_n = args.memory_n or (100_000 if args.quick else 10_000_000)
    if min(args.n, args.reps, args.reopen_n, args.memory_n) <= 0:
        parser.error("sizes and --reps must be positive")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    missing = jsstore_missing()
    unavailable = {"jsstore-file", "jsstore-memory"} if missing else set()
    print(f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
          f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    work_dir = tempfile.mkdtemp(prefix="jsstore-bench-", dir=args.dir)
    try:
        msgs = data.messages(args.n)
        batches = split_batches(msgs)
        gc.collect()
        gc.freeze()  # the inputs are long-lived: keep them out of every later collection
        runner = Runner(args, work_dir, unavailable)
        stores = runner.run_writes(msgs, batches)
        runner.run_reads(stores, args.n)
        for driver in stores.values():
            driver.close()
        reopen = mem = None
        if not missing and not args.skip_reopen:
            reopen = measure_reopen(args, work_dir)
        if not missing and not args.skip_memory:
            progress(f"memory: {args.memory_n:,} distinct subjects ...")
            mem = run_probe("memory", work_dir, str(args.memory_n))
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    rows = print_report(args, runner, reopen, mem, missing)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"n": args.n, "reps": args.reps, "table": rows, "reopen": reopen, "memory": mem,
                       "summary": summary_rows(runner, reopen, mem),
                       "rates": {f"{op} {name}": r for (op, name), r in runner.rates.items()},
                       "cpu_rates": {f"{op} {name}": r for (op, name), r in runner.cpu_rates.items()}},
                      out, indent=2)
    if args.plot:
        plot_targets(args, runner)
    failed = any(row["result"] != "PASS" for row in rows)
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
