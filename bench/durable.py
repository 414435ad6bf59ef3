"""Durable acknowledgements: acked publishes per second with ``sync_interval: always``.

    python bench/durable.py [--n N] [--reps R] [--quick] [--json FILE]

Each round starts three servers fresh (their own temporary store directories, free
loopback ports, the order rotating) and measures acked publishes per second with the raw
client of bench/server.py: prebuilt ``PUB raw.<k> <inbox> 128`` frames, up to 1,000 PubAcks
outstanding:

- jsstore serve ``--sync_interval always`` (a PubAck only once its message is fsynced; the
  publishes of one event-loop iteration share one fsync per file);
- jsstore serve without it (fsync every 2 minutes in the background);
- nats-server with ``jetstream { sync_interval: always }``.

Figures are medians over the rounds; the ratios printed are of the medians.  Targets (the
issue "Nothing acknowledged is ever lost"): jsstore always >= 20x nats-server always, and
>= 0.5x jsstore without always (within 2x of it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (HERE, os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

from jsstoreserver import start_jsstore_server  # noqa: E402
from natsserver import start_nats_server  # noqa: E402
from server import raw_ceiling  # noqa: E402  (bench/server.py's raw client)

KINDS = ("jsstore always", "jsstore", "nats-server always")


def start(kind: str, directory: str):
    if kind == "jsstore always":
        return start_jsstore_server(directory, ["--sync_interval", "always"])
    if kind == "jsstore":
        return start_jsstore_server(directory)
    conf = os.path.join(directory, "durable.conf")
    with open(conf, "w") as f:
        f.write("jetstream { sync_interval: always }\n")
    return start_nats_server(os.path.join(directory, "store"), ["-c", conf])


def run_one(kind: str, n: int) -> float:
    directory = tempfile.mkdtemp(prefix="bench-durable-")
    server = start(kind, directory)
    try:
        time.sleep(0.3)
        return raw_ceiling(server.port, n, kind)
    finally:
        server.stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000, help="publishes per jsstore run")
    parser.add_argument("--nats-n", type=int, default=0,
                        help="publishes per nats-server run (default: N / 10, it is slow)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="N = 10,000, 3 rounds")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    n, reps = (10_000, 3) if args.quick else (args.n, args.reps)
    nats_n = args.nats_n or max(n // 10, 1000)
    runs: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for rep in range(reps):
        order = KINDS[rep % 3:] + KINDS[:rep % 3]
        for kind in order:
            runs[kind].append(run_one(kind, nats_n if kind.startswith("nats") else n))
            print(f"  {kind:<20} round {rep + 1}: {runs[kind][-1]:,.0f} acked msgs/s",
                  file=sys.stderr)
    median = {kind: statistics.median(values) for kind, values in runs.items()}
    print(f"\nacked publishes/s, 128 B, up to 1,000 outstanding, raw client; median of {reps} "
          f"(jsstore {n:,} msgs a run, nats-server {nats_n:,})\n")
    print("| server | acked msgs/s (median) | rounds |")
    print("|---|---|---|")
    for kind in KINDS:
        print(f"| {kind} | {median[kind]:,.0f} | "
              + ", ".join(f"{v:,.0f}" for v in runs[kind]) + " |")
    versus_nats = median["jsstore always"] / median["nats-server always"]
    versus_own = median["jsstore always"] / median["jsstore"]
    print()
    print("| ratio | value | target |")
    print("|---|---|---|")
    print(f"| jsstore always / nats-server always | {versus_nats:.1f}x | >= 20x |")
    print(f"| jsstore always / jsstore | {versus_own:.2f} | >= 0.5 |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": n, "nats_n": nats_n, "reps": reps, "runs": runs,
                       "median": median}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
