"""Load: many concurrent loopback connections publishing into a stream and consuming.

    python bench/load.py [--connections 1000] [--seconds 10] [--server jsstore|nats-server|both]

Each connection is a bare asyncio protocol client: CONNECT, a SUB on its own subject
``load.<i>`` (it consumes what it publishes) and on its own inbox, then PUBs of 128 B on
``load.<i>`` with a reply subject, one PubAck awaited at a time, until the time is up.  The
stream ``LOAD`` captures ``load.>``.  Reported per server: connections, acked messages,
errors (-ERR lines, error PubAcks, connections lost, acks missing), messages consumed,
resident memory (VmRSS) at start and its peak (sampled every 0.2 s), and whether every
acked message is stored (the stream's message count after the run equals the acks).
The descriptor limit is raised to what the connections need (both servers inherit it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

from jsstoreserver import start_jsstore_server  # noqa: E402
from natsserver import start_nats_server  # noqa: E402

PAYLOAD = b"x" * 128
ACK_TIMEOUT = 10.0


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def raise_descriptor_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


class Conn(asyncio.Protocol):
    """One connection: frames out, MSG and -ERR lines in."""

    def __init__(self, index: int, stats: dict):
        self.index = index
        self.stats = stats
        self.buf = b""
        self.transport = None
        self.waiting: asyncio.Future | None = None
        self.ready = asyncio.get_running_loop().create_future()
        self.lost = False

    def connection_made(self, transport):
        self.transport = transport
        i = self.index
        transport.write(b'CONNECT {"verbose":false,"pedantic":false}\r\n'
                        b"SUB load.%d 1\r\nSUB _I.%d.* 2\r\nPING\r\n" % (i, i))

    def connection_lost(self, exc):
        self.lost = True
        self.stats["lost"] += 1
        if self.waiting is not None and not self.waiting.done():
            self.waiting.set_exception(ConnectionError("lost"))

    def data_received(self, data):
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n")
            if end < 0:
                return
            line = self.buf[:end]
            if line.startswith(b"MSG "):
                size = int(line.rsplit(b" ", 1)[1])
                if len(self.buf) < end + 2 + size + 2:
                    return
                payload = self.buf[end + 2:end + 2 + size]
                self.buf = self.buf[end + 2 + size + 2:]
                sid = line.split(b" ")[2]
                if sid == b"1":
                    self.stats["consumed"] += 1
                elif self.waiting is not None and not self.waiting.done():
                    self.waiting.set_result(payload)
                continue
            self.buf = self.buf[end + 2:]
            if line == b"PONG" and not self.ready.done():
                self.ready.set_result(None)
            elif line == b"PING":
                self.transport.write(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                self.stats["errors"] += 1
                self.stats["error_lines"].append(line.decode(errors="replace"))

    async def publish(self, n: int) -> bytes:
        self.waiting = asyncio.get_running_loop().create_future()
        self.transport.write(b"PUB load.%d _I.%d.%d %d\r\n%s\r\n"
                             % (self.index, self.index, n, len(PAYLOAD), PAYLOAD))
        return await asyncio.wait_for(self.waiting, ACK_TIMEOUT)


async def request(port: int, subject: str, body: bytes) -> dict:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    await reader.readline()
    writer.write(b'CONNECT {"verbose":false}\r\nSUB _R 1\r\nPUB %s _R %d\r\n%s\r\n'
                 % (subject.encode(), len(body), body))
    await writer.drain()
    while True:
        line = await reader.readline()
        if line.startswith(b"MSG"):
            size = int(line.split()[-1])
            data = await reader.readexactly(size + 2)
            writer.close()
            return json.loads(data[:size])


async def drive(port: int, pid: int, connections: int, seconds: float) -> dict:
    stats = {"errors": 0, "error_lines": [], "lost": 0, "consumed": 0, "acked": 0,
             "bad_acks": 0, "missing_acks": 0}
    created = await request(port, "$JS.API.STREAM.CREATE.LOAD",
                            json.dumps({"name": "LOAD", "subjects": ["load.>"]}).encode())
    assert "error" not in created, created
    loop = asyncio.get_running_loop()
    rss = {"start": rss_kib(pid), "peak": 0}
    conns = []
    for i in range(connections):
        _, conn = await loop.create_connection(lambda i=i: Conn(i, stats), "127.0.0.1", port)
        conns.append(conn)
    await asyncio.gather(*(c.ready for c in conns))
    rss["connected"] = rss_kib(pid)
    done = False

    async def sample():
        while not done:
            rss["peak"] = max(rss["peak"], rss_kib(pid))
            await asyncio.sleep(0.2)

    async def work(conn: Conn, deadline: float):
        n = 0
        while time.monotonic() < deadline and not conn.lost:
            n += 1
            try:
                ack = await conn.publish(n)
            except (asyncio.TimeoutError, ConnectionError):
                stats["missing_acks"] += 1
                return
            if b'"error"' in ack:
                stats["bad_acks"] += 1
            else:
                stats["acked"] += 1

    sampler = asyncio.ensure_future(sample())
    started = time.monotonic()
    deadline = started + seconds
    await asyncio.gather(*(work(c, deadline) for c in conns))
    elapsed = time.monotonic() - started
    done = True
    await sampler
    await asyncio.sleep(0.5)            # the last echoes
    info = await request(port, "$JS.API.STREAM.INFO.LOAD", b"")
    for c in conns:
        c.transport.close()
    stored = info["state"]["messages"]
    return {"connections": connections, "seconds": round(elapsed, 1),
            "acked": stats["acked"], "acked_per_s": round(stats["acked"] / elapsed),
            "stored": stored, "all_acked_stored": stored == stats["acked"],
            "consumed": stats["consumed"],
            "errors": stats["errors"] + stats["bad_acks"] + stats["missing_acks"]
            + stats["lost"], "error_lines": stats["error_lines"][:5],
            "rss_start_mib": round(rss["start"] / 1024, 1),
            "rss_connected_mib": round(rss["connected"] / 1024, 1),
            "rss_peak_mib": round(rss["peak"] / 1024, 1)}


def run(kind: str, connections: int, seconds: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="jsstore-load-") as tmp:
        start = start_jsstore_server if kind == "jsstore" else start_nats_server
        server = start(os.path.join(tmp, "store"))
        try:
            return asyncio.run(drive(server.port, server.pid, connections, seconds))
        finally:
            server.stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--server", choices=["jsstore", "nats-server", "both"],
                        default="both")
    parser.add_argument("--json", help="write the figures here as well")
    args = parser.parse_args(argv)
    raise_descriptor_limit(2 * args.connections + 256)
    kinds = ["jsstore", "nats-server"] if args.server == "both" else [args.server]
    results = {}
    for kind in kinds:
        results[kind] = run(kind, args.connections, args.seconds)
        print(kind, json.dumps(results[kind]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    good = all(r["errors"] == 0 and r["all_acked_stored"] for r in results.values())
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
