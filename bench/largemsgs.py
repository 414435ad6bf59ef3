"""Large messages: the file store's write rate against the disk's own sequential rate.

    python bench/largemsgs.py [--gib G] [--size BYTES] [--reps R] [--dir DIR] [--json FILE] [--check]

Each repetition writes G GiB (default 4) twice into fresh space of DIR, the order
alternating: once with ``dd if=/dev/zero of=FILE bs=1M count=G*1024 conv=fdatasync``
(the disk's sustained sequential write rate, what a store cannot beat), and once as
``FileStore.store_msg`` calls of BYTES-byte payloads (default 64 KiB) followed by
``stop()``, which flushes and fsyncs every block: both figures are the time until every
byte is on the disk.  Each file is deleted as soon as it is measured, so at most G GiB
(plus a block) is in use.  The target is the store's rate ≥ 0.8× dd's, medians of R.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
for path in (SRC, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)

import summary  # noqa: E402
from workloads import stream_config  # noqa: E402

TARGET_RATIO = 0.8
MIB = 1 << 20


def dd_rate(directory: str, total_bytes: int) -> float:
    """Bytes per second of dd writing ``total_bytes`` of zeros and fdatasync'ing them."""
    path = os.path.join(directory, "dd.out")
    start = time.perf_counter()
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={total_bytes // MIB}",
                    "conv=fdatasync"], check=True, capture_output=True)
    seconds = time.perf_counter() - start
    os.unlink(path)
    return total_bytes / seconds


def store_rate(directory: str, total_bytes: int, size: int) -> float:
    """Payload bytes per second of store_msg of ``size``-byte messages until stop() returns
    (every block fsynced); the messages are then checked and the store deleted."""
    import jsstore
    from jsstore.store.config import StoreOptions

    payloads = [os.urandom(size) for _ in range(7)]
    count = total_bytes // size
    store_dir = os.path.join(directory, "store")
    store = jsstore.FileStore(store_dir, stream_config("file"), StoreOptions())
    store_msg = store.store_msg
    start = time.perf_counter()
    for i in range(count):
        store_msg("orders.large", None, payloads[i % 7])
    store.stop()
    seconds = time.perf_counter() - start
    store = jsstore.FileStore(store_dir, stream_config("file"), StoreOptions())
    try:
        state = store.state()
        if (state.messages, state.last_seq) != (count, count):
            raise SystemExit(f"store holds {state.messages} messages, last {state.last_seq}; "
                             f"want {count}")
        for seq in (1, count // 2, count):
            if bytes(store.load_msg(seq).msg) != payloads[(seq - 1) % 7]:
                raise SystemExit(f"message {seq} read back wrong")
    finally:
        store.stop()
        shutil.rmtree(store_dir, ignore_errors=True)
    return count * size / seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=4.0, help="GiB written per measurement")
    parser.add_argument("--size", type=int, default=64 * 1024, help="payload bytes per message")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dir", help="where the files go (default: the system temp dir)")
    parser.add_argument("--json", help="also write the measurements to this file")
    parser.add_argument("--check", action="store_true", help="exit 1 unless the target is met")
    parser.add_argument("--quick", action="store_true", help="0.5 GiB, one repetition")
    args = parser.parse_args(argv)
    if args.quick:
        args.gib, args.reps = 0.5, 1
    total = int(args.gib * 1024) * MIB
    if total <= 0 or args.size <= 0 or args.reps <= 0:
        parser.error("sizes and --reps must be positive")
    work = tempfile.mkdtemp(prefix="jsstore-large-", dir=args.dir)
    rates = {"dd": [], "jsstore": []}
    try:
        for rep in range(args.reps):
            order = ("dd", "jsstore") if rep % 2 == 0 else ("jsstore", "dd")
            for name in order:
                rate = dd_rate(work, total) if name == "dd" else store_rate(work, total, args.size)
                rates[name].append(rate)
                print(f"  {name:<8} rep {rep + 1}: {rate / MIB:8.1f} MiB/s", file=sys.stderr,
                      flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    dd, ours = statistics.median(rates["dd"]), statistics.median(rates["jsstore"])
    ratio = ours / dd
    print(f"large messages: {total / 2**30:g} GiB of {args.size:,}-byte payloads, "
          f"median of {args.reps}")
    print(f"  jsstore store_msg + stop(): {ours / MIB:.1f} MiB/s")
    print(f"  dd bs=1M conv=fdatasync:    {dd / MIB:.1f} MiB/s")
    print(f"  ratio {ratio:.2f}x, target >= {TARGET_RATIO}x: "
          f"{'PASS' if ratio >= TARGET_RATIO else 'FAIL'}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"bytes": total, "size": args.size, "rates": rates, "ratio": ratio,
                       "summary": [summary.row(
                           "largemsgs", f"store_msg of {args.size // 1024} KiB payloads",
                           ours / MIB, "dd conv=fdatasync", dd / MIB, TARGET_RATIO,
                           unit="MiB/s")]}, out, indent=2)
    return 1 if args.check and ratio < TARGET_RATIO else 0


if __name__ == "__main__":
    sys.exit(main())
