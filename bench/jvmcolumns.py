"""The JVM reader's record walk (Java BlockColumns into Spark's OnHeapColumnVectors) beside
the core's Cython BlockColumns (Arrow buffers), on the same 8 MiB block.

    python bench/jvmcolumns.py [--rounds 5] [--reps 20] [--batch 4096]

Workload (bench/data.py): 128-byte payloads on 1,000 subjects, stored by jsstore's FileStore
with 8 MiB blocks; the first (full) block is read.  Projections: every column and
seq + subject (the figures asked for), then seq alone, data alone and no column at all (the
walk and its filters only) to show where the time goes.  One JVM (jsstore.spark.ColumnsInspect) stays up for the whole run; each round
runs, in alternating order, the Java side (its own JIT warm-up passes, then --reps timed
passes) and the Cython side (one warm-up pass, then --reps timed passes).  A figure is rows
per second of the walking thread's CPU time (wall time beside it), median over the passes
of a round, then median over the rounds.  No Spark session; no timing assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

from data import payloads, subjects  # noqa: E402

import jsstore  # noqa: E402
from jsstore import StoreOptions, StreamConfig  # noqa: E402
from jsstore._core.columns.arrowblock import BlockColumns, SubjectPredicate  # noqa: E402
from jsstore.spark import jvmjar  # noqa: E402
from jsstore.spark.arrow import STREAM_COLUMNS, column_bits  # noqa: E402
from jvminspect import driver_classpath, java_binary  # noqa: E402

BLOCK_SIZE = 8 * 1024 * 1024
PROJECTIONS = {"all": list(STREAM_COLUMNS), "seq+subject": ["seq", "subject"], "seq": ["seq"],
               "data": ["data"], "none": []}
# a query: one subject of the 1,000 (every record walked, 1 in 1,000 a row); its figure is
# records walked per second, not rows
QUERY = ("subject=orders.7", {"exact": ["orders.7"]})


def first_block(directory: str) -> str:
    """Fill one 8 MiB block (and start a second) and return the first block's path."""
    n = BLOCK_SIZE // 150 + 2000              # > one block of ~170-byte records
    fs = jsstore.FileStore(jsstore.stream_dir(directory, "S"),
                           StreamConfig(name="S", subjects=["orders.>"]),
                           StoreOptions(sync_interval=0, block_size=BLOCK_SIZE))
    for subject, payload in zip(subjects(n), payloads(n)):
        fs.store_msg(subject, None, payload)
    fs.stop()
    msgs = os.path.join(jsstore.stream_dir(directory, "S"), "msgs")
    return os.path.join(msgs, "1.blk")


def cython_pass(data: bytes, bits: int, batch: int, exact=None) -> tuple[int, float, float]:
    walker = BlockColumns(data, bits, predicate=SubjectPredicate(exact) if exact else None)
    rows = 0
    c0, t0 = time.process_time(), time.perf_counter()
    while (out := walker.next_batch(batch)) is not None:
        rows += out[0]
    return rows, walker.records_walked, time.process_time() - c0, time.perf_counter() - t0


def cython_side(data: bytes, columns, batch: int, reps: int, exact=None) -> dict:
    bits = column_bits(columns)
    cython_pass(data, bits, batch, exact)
    cpu, wall = [], []
    for _ in range(reps):
        rows, walked, c, w = cython_pass(data, bits, batch, exact)
        cpu.append(rows / c if c > 0 else float("inf"))
        wall.append(rows / w)
    return {"rows": rows, "walked": walked, "cpu_rows_per_s": statistics.median(cpu),
            "wall_rows_per_s": statistics.median(wall)}


class JavaSide:
    def __init__(self, classpath: str):
        self.proc = subprocess.Popen([java_binary(), "-cp", classpath,
                                      "jsstore.spark.ColumnsInspect"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, command: dict) -> dict:
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("ColumnsInspect exited")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=4096)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jsstore-jvmcolumns-") as work:
        os.environ.setdefault("JSSTORE_JAR_CACHE", os.path.join(work, "jar"))
        jar = jvmjar.jar_path()
        path = first_block(work)
        with open(path, "rb") as f:
            data = f.read()
        java = JavaSide(driver_classpath(jar, tempfile.mkdtemp(dir=work)))
        try:
            cases = {name: (columns, {}) for name, columns in PROJECTIONS.items()}
            cases[QUERY[0]] = (list(STREAM_COLUMNS), QUERY[1])
            results = {name: {"java": [], "cython": []} for name in cases}
            for r in range(args.rounds):
                for name, (columns, filters) in cases.items():
                    sides = ["java", "cython"] if r % 2 == 0 else ["cython", "java"]
                    for side in sides:
                        if side == "java":
                            out = java.ask({"op": "bench", "path": path, "columns": columns,
                                            "reps": args.reps, "batch": args.batch, **filters})
                        else:
                            out = cython_side(data, columns, args.batch, args.reps,
                                              filters.get("exact"))
                        results[name][side].append(out)
        finally:
            java.close()
    rows = results["all"]["java"][0]["rows"]
    for side in results.values():
        counts = {(o["rows"], o["walked"]) for outs in side.values() for o in outs}
        assert len(counts) == 1, f"the two sides read different rows: {counts}"
    print(f"block {len(data) / 2**20:.2f} MiB, {rows} rows of 128-byte payloads on 1,000 "
          f"subjects, batch {args.batch}, {args.rounds} rounds x {args.reps} passes")
    print(f"{'projection':<12} {'java Mrows/s cpu':>17} {'cython Mrows/s cpu':>19} "
          f"{'java/cython':>12} {'java wall':>10} {'cython wall':>12}")
    for name, sides in results.items():
        # rows/s; records walked/s for the query (rows are 1 in 1,000 of the records)
        scale = sides["java"][0]["walked"] / sides["java"][0]["rows"] if name == QUERY[0] else 1

        def rate(side, key):
            return statistics.median(o[key] for o in sides[side]) * scale / 1e6  # noqa: B023

        jc, cc = rate("java", "cpu_rows_per_s"), rate("cython", "cpu_rows_per_s")
        jw, cw = rate("java", "wall_rows_per_s"), rate("cython", "wall_rows_per_s")
        print(f"{name:<12} {jc:>17.2f} {cc:>19.2f} {jc / cc:>11.2f}x {jw:>10.2f} {cw:>12.2f}")


if __name__ == "__main__":
    main()
