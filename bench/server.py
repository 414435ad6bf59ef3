"""`jsstore serve` against nats-server, side by side in one run.

    python bench/server.py [--n N] [--reps R] [--quick] [--json FILE]

Each repetition starts both servers fresh (their own temporary store directories, on free
loopback ports, the order alternating) and measures, for each:

- nats-py ``publish_async`` of N messages of 128 B with at most 1,000 acks outstanding;
- nats-py pull ``fetch(100)`` of those N messages with an explicit ``ack()`` of each;
- nats-py KV ``put`` and ``get`` (N/4 each);
- the server's ceiling: a raw-socket client sends prebuilt ``PUB orders.x <inbox> 128``
  frames into a stream and reads the PubAcks back, keeping up to 1,000 unacknowledged;
- resident memory (VmRSS) idle after start and after the run.

Targets: every nats-py figure >= 1.0x nats-server's (the server issue), the raw ceiling
>= 2x and idle resident memory <= 1.5x (the speed issue).  Ratios are jsstore / nats-server of the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

import nats  # noqa: E402
from jsstoreserver import start_jsstore_server  # noqa: E402
from natsserver import start_nats_server  # noqa: E402

import summary  # noqa: E402

PAYLOAD = b"x" * 128
WINDOW = 1000
RSS_TARGET = 1.5                # idle resident memory: at most this times nats-server's
STALL = 2.0                     # no answer for this long: the outstanding ones are lost


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def client_figures(url: str, n: int) -> dict:
    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.*"])
    start = time.perf_counter()
    pending = []
    for _ in range(n):
        pending.append(await js.publish_async("orders.new", PAYLOAD, wait_stall=30))
        if len(pending) >= WINDOW:
            await asyncio.gather(*pending)
            pending = []
    await asyncio.gather(*pending)
    published = n / (time.perf_counter() - start)

    sub = await js.pull_subscribe("orders.*", "BENCH", stream="ORDERS")
    start = time.perf_counter()
    got = 0
    while got < n:
        msgs = await sub.fetch(100, timeout=10)
        for msg in msgs:
            await msg.ack()
        got += len(msgs)
    fetched = n / (time.perf_counter() - start)

    kv = await js.create_key_value(bucket="bench")
    keys = n // 4
    start = time.perf_counter()
    for i in range(keys):
        await kv.put(f"k{i % 1000}", PAYLOAD)
    put = keys / (time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(keys):
        await kv.get(f"k{i % 1000}")
    get = keys / (time.perf_counter() - start)
    await nc.close()
    return {"publish_async": published, "fetch(100)+ack": fetched, "kv put": put,
            "kv get": get}


def count_msgs(buf: bytes) -> int:
    """How many whole MSG frames `buf` starts with (what they span: count_msgs.consumed)."""
    pos = count = 0
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            break
        line = buf[pos:eol]
        if line.startswith(b"MSG "):
            end = eol + 2 + int(line.rsplit(b" ", 1)[1]) + 2
            if end > len(buf):
                break
            count += 1
            pos = end
        else:
            pos = eol + 2              # PING, +OK and the like
    count_msgs.consumed = pos
    return count


def raw_ceiling(port: int, n: int, label: str = "") -> float:
    """Acked msgs/s for prebuilt PUB frames with up to WINDOW PubAcks outstanding."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.recv(65536)
    config = b'{"name":"RAW","subjects":["raw.>"]}'
    sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\nSUB _R.* 1\r\n'
                 b'PUB $JS.API.STREAM.CREATE.RAW _R.c %d\r\n%s\r\n'
                 % (len(config), config))
    # the stream's answer, not a PONG: nats-server answers JetStream API requests on its
    # own schedule, so a PONG may come before the stream exists (publishes sent then
    # are lost, no stream capturing them)
    buf = b""
    while b"stream_create_response" not in buf:
        buf += sock.recv(65536)
    frames = [b"PUB raw.%d _R.%d 128\r\n%s\r\n" % (i % 100, i % 100, PAYLOAD)
              for i in range(WINDOW)]
    batch = 100
    sent = acked = lost = 0
    idle = 0.0
    stalled = False
    sock.settimeout(STALL)
    start = time.perf_counter()
    last_ack = start - 1.0
    buf = b""
    while acked + lost < n:
        while sent < n and sent - acked - lost < WINDOW:
            chunk = frames[:min(batch, n - sent, WINDOW - (sent - acked - lost))]
            sock.sendall(b"".join(chunk))
            sent += len(chunk)
        try:
            data = sock.recv(1 << 20)
        except TimeoutError:
            # the server left publishes unanswered: count them lost (and report
            # them); the rate is what was acked by the last ack's arrival
            lost += sent - acked - lost
            stalled = True
            continue
        if not data:
            raise RuntimeError(f"server closed the connection after {acked} acks")
        buf += data
        got = count_msgs(buf)
        if got:
            acked += got
            last_ack = time.perf_counter()
            if stalled:                     # the wait is no part of the rate
                idle += STALL
                stalled = False
        buf = buf[count_msgs.consumed:]
    elapsed = last_ack - start - idle
    if lost:
        print(f"  raw client: {label} never acknowledged {lost} publishes", file=sys.stderr)
    sock.close()
    return acked / elapsed


def run_one(kind: str, n: int) -> dict:
    directory = tempfile.mkdtemp(prefix=f"bench-{kind}-")
    server = (start_jsstore_server(directory) if kind == "jsstore"
              else start_nats_server(directory))
    try:
        time.sleep(0.3)
        idle = rss_kib(server.pid)
        # the raw ceiling first, on the fresh server (an empty store directory)
        ceiling = raw_ceiling(server.port, n, kind)
        figures = asyncio.run(client_figures(server.url, n))
        figures["raw PUB ceiling"] = ceiling
        figures["rss idle MiB"] = idle / 1024
        figures["rss loaded MiB"] = rss_kib(server.pid) / 1024
        return figures
    finally:
        server.stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="N = 10,000, 1 rep")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    n, reps = (10_000, 1) if args.quick else (args.n, args.reps)
    runs: dict[str, list[dict]] = {"jsstore": [], "nats-server": []}
    for rep in range(reps):
        order = ["jsstore", "nats-server"] if rep % 2 == 0 else ["nats-server", "jsstore"]
        for kind in order:
            runs[kind].append(run_one(kind, n))
            print(f"  {kind:<12} rep {rep + 1}: " + ", ".join(
                f"{k} {v:,.0f}" for k, v in runs[kind][-1].items()), file=sys.stderr)
    median = {kind: {k: statistics.median(r[k] for r in results) for k in results[0]}
              for kind, results in runs.items()}
    print(f"\n{n:,} messages of 128 B, median of {reps}\n")
    print("| measurement | jsstore | nats-server | ratio | target |")
    print("|---|---|---|---|---|")
    targets = {"publish_async": 1.0, "fetch(100)+ack": 1.0, "kv put": 1.0, "kv get": 1.0,
               "raw PUB ceiling": 2.0}
    for key in median["jsstore"]:
        ours, theirs = median["jsstore"][key], median["nats-server"][key]
        target = targets.get(key)
        print(f"| {key} | {ours:,.1f} | {theirs:,.1f} | {ours / theirs:.2f} | "
              f"{'>= %.1f' % target if target else ''} |")
    if args.json:
        rows = []
        for key, ours in median["jsstore"].items():
            theirs = median["nats-server"][key]
            if key.startswith("rss"):
                rows.append(summary.row("server", key.replace(" MiB", ""), ours, "nats-server",
                                        theirs, RSS_TARGET if key == "rss idle MiB" else None,
                                        unit="MiB", better=summary.LOWER))
            else:
                rows.append(summary.row("server", key, ours, "nats-server", theirs,
                                        targets.get(key)))
        with open(args.json, "w") as f:
            json.dump({"n": n, "reps": reps, "runs": runs, "median": median,
                       "summary": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
