"""The NATS protocol core on its own: parsing PUB frames, building MSG frames, and the
two together as a server's read delivers them.

    python bench/protocol.py [--n N] [--reps R]

Parses N `PUB orders.<i % 1000> _INBOX.<i> 128` frames fed in 64 KiB chunks (split frames
included) into operations; renders N MSG frames into a connection's buffer
(``Conn.deliver_many``, batches of 1,000); and delivers N `PUB core.x 128` frames to one
subscription through the parser's own pass (``Parser`` with an ``Interest``: what a read of
core publishes costs the core, sockets aside).  No target: the server issue's throughput
targets are measured end to end against nats-server (bench/corefanout.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "src"))

from jsstore._core.delivery.plans import Conn, Interest, Plan, Subscription, Totals  # noqa: E402
from jsstore._core.wire import protocol  # noqa: E402
from jsstore.wire.bus import Msg  # noqa: E402

CHUNK = 64 * 1024


class _Sink(Conn):
    """A connection with no socket (dirty and totals as the server's Client sets them)."""


def _conn() -> Conn:
    conn = _Sink()
    conn.dirty = set()
    conn.totals = Totals()
    return conn


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    payload = b"x" * 128
    wire = b"".join(b"PUB orders.%d _INBOX.%d 128\r\n%s\r\n" % (i % 1000, i, payload)
                    for i in range(args.n))
    chunks = [wire[i:i + CHUNK] for i in range(0, len(wire), CHUNK)]
    msgs = [Msg(f"orders.{i % 1000}", payload, None, f"$JS.ACK.S.C.1.{i}.{i}.0.0")
            for i in range(1000)]
    core = b"".join(b"PUB core.x 128\r\n%s\r\n" % payload for _ in range(1000))
    parse_rates, build_rates, core_rates = [], [], []
    for _ in range(args.reps):
        p = protocol.Parser()
        count = 0
        start = time.perf_counter()
        for chunk in chunks:
            count += len(p.feed(chunk))
        parse_rates.append(count / (time.perf_counter() - start))
        assert count == args.n and p.error is None
        sink = _conn()
        sub = Subscription(sink, "orders.*", None, "1")
        start = time.perf_counter()
        for _ in range(args.n // 1000):
            sink.deliver_many(sub, msgs)
            sink.out = bytearray()
        build_rates.append(args.n / (time.perf_counter() - start))
        origin, sink = _conn(), _conn()
        plan = Plan([Subscription(sink, "core.x", None, "1")])
        p = protocol.Parser(origin=origin)
        p.interest = Interest(lambda subject: plan, lambda head: None, None)
        start = time.perf_counter()
        for _ in range(args.n // 1000):
            p.feed(core)
            sink.out = bytearray()
        core_rates.append(args.n / (time.perf_counter() - start))
        assert sink.out_msgs == args.n // 1000 * 1000
    print(f"parse PUB frames: {statistics.median(parse_rates):,.0f} frames/s "
          f"({len(wire) / 1e6:.0f} MB in 64 KiB chunks)")
    print(f"build MSG frames: {statistics.median(build_rates):,.0f} frames/s")
    print(f"deliver core PUBs (parse + render): {statistics.median(core_rates):,.0f} msgs/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
