"""Protocol abuse under measurement: what a well-behaved client sees, and the server's memory.

    python bench/abuse.py [--seconds 10] [--server jsstore|nats-server|both]

While it runs, for each server:

- abusers connect again and again and send what tests/test_server_abuse.py sends (control
  lines over 4096 bytes, payloads over max_payload, unknown verbs, bad sizes), each closed
  by the server;
- a slow consumer subscribes to ``flood`` and never reads, while a publisher sends 128 KiB
  messages on ``flood`` as fast as it can: the server must cut the slow consumer off
  (nats-server at its max_pending, 64 MiB) instead of buffering without end;
- a bystander publishes to its own subscription and sends PING, waiting for the message
  and the PONG each time: the round trip's latency is recorded.

Reported: the bystander's round trips, their median, 99th percentile and maximum latency,
errors it saw, how many abusive connections were closed, whether (and how) the slow
consumer was cut off, and the server's resident memory (VmRSS) at start and at its peak.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

from jsstoreserver import start_jsstore_server  # noqa: E402
from natsserver import start_nats_server  # noqa: E402

ABUSE = [b"PUB " + b"a" * 5000 + b" 1\r\nx\r\n", b"SUB " + b"a" * 5000,
         b"FOO bar\r\n", b"\x00\x01\x02\r\n", b"PUB a x\r\nhi\r\n",
         b"PUB a 99999999999999999999\r\n", b"PUB a 2\r\nhello\r\n",
         b"PUB a 1048577\r\n" + b"x" * 65536]


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.recv(4096)                     # INFO
    return sock


def abuser(port: int, stop: threading.Event, counts: dict) -> None:
    i = 0
    while not stop.is_set():
        sock = connect(port)
        try:
            sock.sendall(b'CONNECT {"verbose":false}\r\n' + ABUSE[i % len(ABUSE)])
            sock.settimeout(5)
            while sock.recv(65536):
                pass
            counts["closed"] += 1
        except OSError:
            counts["closed"] += 1
        finally:
            sock.close()
        i += 1


def slow_consumer(port: int, stop: threading.Event, result: dict) -> None:
    sock = connect(port)
    sock.sendall(b'CONNECT {"verbose":false}\r\nSUB flood 1\r\nPING\r\n')
    time.sleep(0.5)                     # ... and never read again until the end
    pub = connect(port)
    frame = b"PUB flood %d\r\n%s\r\n" % (128 * 1024, b"f" * 128 * 1024)
    sent = 0
    pub.settimeout(1)
    while not stop.is_set():
        try:
            pub.sendall(frame * 8)
            sent += 8 * 128 * 1024
        except OSError:
            break
    pub.close()
    # nats-server gives a connection it cannot write to 10 s (its write deadline)
    stalled = time.monotonic()
    sock.settimeout(15)
    tail = b""
    try:
        while True:
            chunk = sock.recv(1 << 20)
            if not chunk:
                result["cut_off"] = True
                result["closed_after_s"] = round(time.monotonic() - stalled, 1)
                break
            tail = (tail + chunk)[-4096:]
    except OSError as exc:
        result["cut_off"] = not isinstance(exc, TimeoutError)
    result.setdefault("cut_off", False)
    result["err"] = [line.decode(errors="replace") for line in tail.split(b"\r\n")
                     if line.startswith(b"-ERR")]
    result["published_mib"] = sent >> 20       # what the publisher got through
    sock.close()


def bystander(port: int, stop: threading.Event, result: dict) -> None:
    sock = connect(port)
    sock.sendall(b'CONNECT {"verbose":false}\r\nSUB by 1\r\n')
    latencies, errors = [], []
    buf = b""
    while not stop.is_set():
        start = time.perf_counter()
        sock.sendall(b"PUB by 2\r\nok\r\nPING\r\n")
        while b"PONG\r\n" not in buf:
            buf += sock.recv(65536)
        latencies.append(time.perf_counter() - start)
        if b"-ERR" in buf or b"MSG by 1 2" not in buf:
            errors.append(buf[:200].decode(errors="replace"))
        buf = b""
        time.sleep(0.005)
    sock.close()
    latencies.sort()
    result.update(round_trips=len(latencies), errors=errors[:3],
                  median_ms=round(statistics.median(latencies) * 1000, 2),
                  p99_ms=round(latencies[int(len(latencies) * 0.99)] * 1000, 2),
                  max_ms=round(latencies[-1] * 1000, 2))


def run(kind: str, seconds: float, abusers: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="jsstore-abuse-") as tmp:
        start = start_jsstore_server if kind == "jsstore" else start_nats_server
        server = start(os.path.join(tmp, "store"))
        try:
            stop = threading.Event()
            counts = {"closed": 0}
            slow, seen = {}, {}
            rss = {"start": rss_kib(server.pid), "peak": 0}
            threads = [threading.Thread(target=abuser, args=(server.port, stop, counts))
                       for _ in range(abusers)]
            threads.append(threading.Thread(target=slow_consumer,
                                            args=(server.port, stop, slow)))
            threads.append(threading.Thread(target=bystander, args=(server.port, stop, seen)))
            for t in threads:
                t.start()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                rss["peak"] = max(rss["peak"], rss_kib(server.pid))
                time.sleep(0.1)
            stop.set()
            for t in threads:
                t.join(30)
            return {"bystander": seen, "abusive_connections_closed": counts["closed"],
                    "slow_consumer": slow, "rss_start_mib": round(rss["start"] / 1024, 1),
                    "rss_peak_mib": round(rss["peak"] / 1024, 1)}
        finally:
            server.stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--abusers", type=int, default=4)
    parser.add_argument("--server", choices=["jsstore", "nats-server", "both"],
                        default="both")
    args = parser.parse_args(argv)
    kinds = ["jsstore", "nats-server"] if args.server == "both" else [args.server]
    for kind in kinds:
        print(kind, json.dumps(run(kind, args.seconds, args.abusers)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
