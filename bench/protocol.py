"""The NATS protocol core on its own: parsing PUB frames and building MSG frames.

    python bench/protocol.py [--n N] [--reps R]

Parses N `PUB orders.<i % 1000> _INBOX.<i> 128` frames fed in 64 KiB chunks (split frames
included), and builds N MSG frames with msg_frames in batches of 1,000. No target: the
server issue's throughput targets are measured end to end against nats-server.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "src"))

from jsstore._core import protocol  # noqa: E402

CHUNK = 64 * 1024


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    payload = b"x" * 128
    wire = b"".join(b"PUB orders.%d _INBOX.%d 128\r\n%s\r\n" % (i % 1000, i, payload)
                    for i in range(args.n))
    chunks = [wire[i:i + CHUNK] for i in range(0, len(wire), CHUNK)]
    deliveries = [(f"orders.{i % 1000}", "1", f"$JS.ACK.S.C.1.{i}.{i}.0.0", None, payload)
                  for i in range(1000)]
    parse_rates, build_rates = [], []
    for _ in range(args.reps):
        p = protocol.Parser()
        count = 0
        start = time.perf_counter()
        for chunk in chunks:
            count += len(p.feed(chunk))
        parse_rates.append(count / (time.perf_counter() - start))
        assert count == args.n and p.error is None
        start = time.perf_counter()
        size = 0
        for _ in range(args.n // 1000):
            size += len(protocol.msg_frames(deliveries))
        build_rates.append(args.n / (time.perf_counter() - start))
    print(f"parse PUB frames: {statistics.median(parse_rates):,.0f} frames/s "
          f"({len(wire) / 1e6:.0f} MB in 64 KiB chunks)")
    print(f"build MSG frames: {statistics.median(build_rates):,.0f} frames/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
