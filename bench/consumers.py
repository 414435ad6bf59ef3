"""The consumers issue's targets, side by side in one run.

    python bench/consumers.py [--n N] [--reps R] [--quick] [--dir DIR] [--json FILE] [--check]

1. Embedded pull: a durable explicit-ack consumer on a file stream of N messages
   (``data.py``: 128-byte payloads on ``orders.<i % 1000>``) is drained with
   ``sub.fetch(100)`` and ``msg.ack()`` of every message.  Beside it, in the same run, the
   store's own read loop over the same stream (``load_next_msg``, no consumer at all):
   the ceiling a consumer can approach.  Target: fetch + ack >= 200,000 msgs/s.
2. Redelivery bookkeeping: a consumer holding P unacknowledged deliveries (P = 1,000 and
   100,000) acks, naks and naks-with-delay OPS randomly chosen pending messages; the
   per-operation cost is the median over TRIALS batches (the consumer is topped up to P
   pending between batches, untimed).  Target: cost at 100k / cost at 1k <= 1.5 for each.

Setup (publishing, topping up) is never timed; every rate or cost is a median.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
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

STREAM = "ORDERS"
BATCH = 100
PULL_TARGET = 200_000           # msgs/s
PENDING_SIZES = (1_000, 100_000)
PENDING_RATIO = 1.5
OPS = 200                       # operations per timed batch
TRIALS = 15


def _filled_stream(directory: str, msgs: list):
    import jsstore
    js = jsstore.open(directory)
    js.add_stream(name=STREAM, subjects=["orders.>"])
    publish = js.publish
    for subject, _hdr, payload in msgs:
        publish(subject, payload)
    return js


def pull_rate(directory: str, msgs: list) -> float:
    """fetch(100) + ack of every message, msgs/s."""
    js = _filled_stream(directory, msgs)
    js.add_consumer(STREAM, durable_name="DRAIN", ack_policy="explicit")
    sub = js.pull_subscribe("orders.>", "DRAIN", stream=STREAM)
    n = len(msgs)
    got = 0
    gc.collect()
    start = time.perf_counter()
    while got < n:
        batch = sub.fetch(BATCH, timeout=0)
        for msg in batch:
            msg.ack()
        got += len(batch)
    seconds = time.perf_counter() - start
    info = js.consumer_info(STREAM, "DRAIN")
    js.close()
    if (info.num_ack_pending, info.num_pending, info.ack_floor.stream_seq) != (0, 0, n):
        raise AssertionError(f"consumer not drained: {info}")
    return n / seconds


def store_read_rate(directory: str, msgs: list) -> float:
    """The store's own sequential read of the same stream, msgs/s."""
    js = _filled_stream(directory, msgs)
    store = js._streams[STREAM].store
    seq, n = 1, len(msgs)
    gc.collect()
    start = time.perf_counter()
    for _ in range(n):
        _msg, found = store.load_next_msg(">", seq)
        seq = found + 1
    seconds = time.perf_counter() - start
    js.close()
    if seq != n + 1:
        raise AssertionError("store read stopped early")
    return n / seconds


def pending_costs(directory: str, pending: int, rng: random.Random) -> dict[str, float]:
    """Median ns per ack, nak and delayed nak with `pending` deliveries outstanding."""
    import jsstore
    js = jsstore.open(directory)
    js.add_stream(name=STREAM, subjects=["orders.>"], storage="memory")
    payload = b"x" * 128
    for i in range(pending + 2 * OPS * TRIALS + BATCH):
        js.publish(f"orders.{i % 1000}", payload)
    js.add_consumer(STREAM, durable_name="HOLD", ack_policy="explicit", max_ack_pending=-1,
                    ack_wait=3600 * 1_000_000_000)
    sub = js.pull_subscribe("orders.>", "HOLD", stream=STREAM)
    held: list = []

    def top_up() -> None:
        while len(held) < pending:
            held.extend(sub.fetch(min(BATCH, pending - len(held)), timeout=0))

    costs: dict[str, list[float]] = {"ack": [], "nak": [], "nak delay": []}
    for _ in range(TRIALS):
        for kind in costs:
            top_up()
            picks = rng.sample(range(len(held)), OPS)
            chosen = [held[i] for i in picks]
            for i in sorted(picks, reverse=True):
                held[i] = held[-1]
                held.pop()
            gc.collect()
            start = time.perf_counter_ns()
            if kind == "ack":
                for msg in chosen:
                    msg.ack()
            elif kind == "nak":
                for msg in chosen:
                    msg.nak()
            else:
                for msg in chosen:
                    msg.nak(delay=3600.0)
            costs[kind].append((time.perf_counter_ns() - start) / OPS)
            if kind == "nak":
                # the naked messages come back first: take them again (untimed)
                top_up()
            elif kind == "nak delay":
                # settle the delayed ones so that P stays what is pending (untimed)
                with js.lock:
                    for msg in chosen:
                        msg._consumer.acknowledgements.ack(msg._stream_seq, msg._delivery_seq,
                                                           msg._deliveries)
        info = js.consumer_info(STREAM, "HOLD")
        if not pending - OPS <= info.num_ack_pending <= pending:
            raise AssertionError(f"pending fell to {info.num_ack_pending}")
    js.close()
    return {kind: statistics.median(values) for kind, values in costs.items()}


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
    rng = random.Random(4)
    work = tempfile.mkdtemp(prefix="jsstore-consumers-", dir=args.dir)
    rates: dict[str, list[float]] = {"fetch(100) + ack": [], "store read": []}
    costs: dict[int, list[dict[str, float]]] = {p: [] for p in PENDING_SIZES}
    try:
        for rep in range(args.reps):
            order = list(rates) if rep % 2 == 0 else list(reversed(rates))
            for name in order:
                directory = tempfile.mkdtemp(dir=work)
                rate = (pull_rate if name == "fetch(100) + ack" else store_read_rate)(
                    directory, msgs)
                shutil.rmtree(directory, ignore_errors=True)
                rates[name].append(rate)
                print(f"  {name:<20} rep {rep + 1}: {rate:>12,.0f} msgs/s", file=sys.stderr)
            sizes = PENDING_SIZES if rep % 2 == 0 else tuple(reversed(PENDING_SIZES))
            for pending in sizes:
                directory = tempfile.mkdtemp(dir=work)
                costs[pending].append(pending_costs(directory, pending, rng))
                shutil.rmtree(directory, ignore_errors=True)
                print(f"  {pending:>7,} pending rep {rep + 1}: " + ", ".join(
                    f"{k} {v:,.0f} ns" for k, v in costs[pending][-1].items()), file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    median = {name: statistics.median(values) for name, values in rates.items()}
    per_op = {p: {kind: statistics.median(c[kind] for c in costs[p]) for kind in costs[p][0]}
              for p in PENDING_SIZES}
    small, large = PENDING_SIZES
    print(f"\nEmbedded pull, {n:,} messages of 128 B, median of {args.reps}\n")
    print("| contender | msgs/s | vs store read |")
    print("|---|---|---|")
    for name, rate in median.items():
        print(f"| {name} | {rate:,.0f} | {rate / median['store read']:.2f} |")
    print(f"\nPer-operation cost with P deliveries pending ({OPS} ops x {TRIALS} trials, "
          f"median of {args.reps})\n")
    print(f"| operation | {small:,} pending | {large:,} pending | ratio |")
    print("|---|---|---|---|")
    for kind in per_op[small]:
        a, b = per_op[small][kind], per_op[large][kind]
        print(f"| {kind} | {a:,.0f} ns | {b:,.0f} ns | {b / a:.2f} |")
    checks = {f"fetch(100) + ack >= {PULL_TARGET:,} msgs/s": median["fetch(100) + ack"] >= PULL_TARGET}
    for kind in per_op[small]:
        checks[f"{kind} cost at {large:,} / {small:,} pending <= {PENDING_RATIO}"] = (
            per_op[large][kind] <= PENDING_RATIO * per_op[small][kind])
    print()
    for label, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}  {label}")
    if args.json:
        rows = [summary.row("consumers", "embedded fetch(100) + ack", median["fetch(100) + ack"],
                            "absolute", None, PULL_TARGET)]
        rows += [summary.row("consumers", f"{kind} at {large:,} pending", per_op[large][kind],
                             f"{small:,} pending", per_op[small][kind], PENDING_RATIO,
                             unit="ns", better=summary.LOWER) for kind in per_op[small]]
        with open(args.json, "w") as f:
            json.dump({"n": n, "reps": args.reps, "rates": rates, "median": median,
                       "per_op_ns": {str(k): v for k, v in per_op.items()}, "checks": checks,
                       "summary": rows}, f, indent=1)
    return 0 if (all(checks.values()) or not args.check) else 1


if __name__ == "__main__":
    sys.exit(main())
