"""The server soak, a hundred cycles: `jsstore serve` SIGKILLed at random moments while
nats-py publishes (acked) and a durable pull consumer fetches and acks, started again each
time on the same port and store directory, and checked after every restart (tests/soak.py
has the schedule and the checks; tests/test_server_soak.py runs ten cycles of it).

    python bench/soak.py [--cycles 100] [--seed S] [--server jsstore|nats-server]
                         [--full-every N] [--pace SECONDS] [--max-payload BYTES]
                         [--kill-after FROM TO] [--server-args ARGS] [--dir DIR]
                         [--quiet]

Prints one report line (cycles, messages published and acked, messages checked, losses,
redeliveries, ack floor regressions, the seed) and exits 1 if anything was lost or moved
backwards; the problems are listed with the seed that replays them.  `--server
nats-server` runs the same soak against the reference server, which checks the checker.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

from bothservers import Restartable  # noqa: E402
from soak import Settings, Soak  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None, help="default: a random one")
    parser.add_argument("--server", choices=["jsstore", "nats-server"], default="jsstore")
    parser.add_argument("--full-every", type=int, default=20,
                        help="read every stored message back every N-th cycle (and after "
                             "the last); otherwise the recent ones and a sample")
    parser.add_argument("--pace", type=float, default=0.005,
                        help="seconds each publisher waits after a PubAck (0: flat out)")
    parser.add_argument("--kill-after", type=float, nargs=2, default=(0.3, 1.5),
                        metavar=("FROM", "TO"),
                        help="the kill comes this many seconds into a cycle's traffic, "
                             "drawn uniformly")
    parser.add_argument("--max-payload", type=int, default=300,
                        help="payloads carry up to this many random bytes after their id")
    parser.add_argument("--server-args", default="",
                        help="more of the server's command line, e.g. '--sync_interval always'")
    parser.add_argument("--dir", default=None, help="where the store directory goes")
    parser.add_argument("--quiet", action="store_true", help="no line per cycle")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    print(f"soak: server={args.server} cycles={args.cycles} seed={seed}", flush=True)
    # a SIGTERM ends the run through the finally below (the child server is stopped)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = tempfile.mkdtemp(prefix="jsstore-soak-", dir=args.dir)
    servers = None
    try:
        servers = Restartable(args.server, os.path.join(work, "store"),
                              args.server_args.split())
        soak = Soak(servers, seed, Settings(pace=args.pace, full_check_every=args.full_every,
                                             kill_after=tuple(args.kill_after),
                                             max_payload=args.max_payload),
                    log=None if args.quiet else (lambda line: print(line, flush=True)))
        report = soak.run(args.cycles)
    finally:
        if servers is not None:
            servers.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(report.line(), flush=True)
    if report.problems:
        print(report.describe(), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
