"""Password guessing under measurement: how much a flood of failed CONNECTs slows the
other clients, jsstore next to nats-server in one run.

    python bench/bruteforce.py [--seconds 10] [--attackers 4] [--server jsstore|nats-server|both]

Each server runs on the same configuration file (a few users with passwords).  For
--seconds, attacker processes connect, send a CONNECT with a wrong password and read until
the server closes the connection (after its ``-ERR 'Authorization Violation'``), again and
again as fast as they can; meanwhile a bystander, logged in properly, makes request/reply
round trips to a responder (another proper client) and records their latency.

Reported per server: failed attempts per second, the bystander's round trips and their
median and 99th percentile latency, the same measured before the attack (the baseline),
and for jsstore the ratios to nats-server's figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
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

CONF = """
authorization {
  users = [
    {user: app, password: "s3cret-app"}
    {user: svc, password: "s3cret-svc"}
    {user: ops, password: "s3cret-ops", permissions: {publish: ">", subscribe: ">"}}
  ]
}
"""


def _connect(port: int, user: str, password: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.recv(4096)                     # INFO
    sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"user":"%s","pass":"%s"}\r\n'
                 % (user.encode(), password.encode()))
    return sock


def attacker(port: int, stop, attempts) -> None:
    """Guess passwords until told to stop; count the refusals."""
    guess = 0
    while not stop.is_set():
        guess += 1
        try:
            sock = _connect(port, "app", f"guess-{guess}")
            sock.settimeout(5)
            while sock.recv(4096):
                pass
        except OSError:
            pass
        else:
            sock.close()
        with attempts.get_lock():
            attempts.value += 1


def responder(port: int, stop: threading.Event) -> None:
    sock = _connect(port, "svc", "s3cret-svc")
    sock.sendall(b"SUB svc.echo 1\r\n")
    sock.settimeout(0.2)
    buf = b""
    while not stop.is_set():
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        if not chunk:
            break
        buf += chunk
        while b"\r\n" in buf:
            line, rest = buf.split(b"\r\n", 1)
            if line.startswith(b"MSG "):
                words = line.split()
                size = int(words[-1])
                if len(rest) < size + 2:
                    break
                reply = words[3]
                sock.sendall(b"PUB %s %d\r\n%s\r\n" % (reply, size, rest[:size]))
                buf = rest[size + 2:]
            elif line == b"PING":
                sock.sendall(b"PONG\r\n")
                buf = rest
            else:
                buf = rest
    sock.close()


def bystander(port: int, seconds: float) -> dict:
    """Request/reply round trips for `seconds`: their count and latency."""
    sock = _connect(port, "app", "s3cret-app")
    sock.sendall(b"SUB _INBOX.by.* 1\r\nPING\r\n")
    buf = b""
    while b"PONG\r\n" not in buf:
        buf += sock.recv(65536)
    latencies, errors, i = [], 0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        i += 1
        want = b"MSG _INBOX.by.%d " % i
        start = time.perf_counter()
        sock.sendall(b"PUB svc.echo _INBOX.by.%d 2\r\nhi\r\n" % i)
        buf = b""
        while want not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("the bystander was disconnected")
            buf += chunk
            if b"-ERR" in buf:
                errors += 1
        latencies.append(time.perf_counter() - start)
        time.sleep(0.002)
    sock.close()
    latencies.sort()
    return {"round_trips": len(latencies), "errors": errors,
            "median_ms": round(statistics.median(latencies) * 1000, 3),
            "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 3)}


@contextlib.contextmanager
def echo_server(kind: str):
    """A server of `kind` on CONF (a store directory of its own) with the responder the
    bystander's requests go to running; yields the server."""
    with tempfile.TemporaryDirectory(prefix="jsstore-bystander-") as tmp:
        conf = os.path.join(tmp, "server.conf")
        with open(conf, "w") as f:
            f.write(CONF)
        start = start_jsstore_server if kind == "jsstore" else start_nats_server
        server = start(os.path.join(tmp, "store"), ["-c", conf])
        stop_responder = threading.Event()
        echo = threading.Thread(target=responder, args=(server.port, stop_responder))
        try:
            echo.start()
            time.sleep(0.3)
            yield server
        finally:
            stop_responder.set()
            echo.join(5)
            server.stop()


def run(kind: str, seconds: float, attackers: int) -> dict:
    with echo_server(kind) as server:
        baseline = bystander(server.port, min(seconds, 3.0))
        stop = multiprocessing.Event()
        attempts = multiprocessing.Value("q", 0)
        procs = [multiprocessing.Process(target=attacker, args=(server.port, stop, attempts))
                 for _ in range(attackers)]
        for p in procs:
            p.start()
        time.sleep(0.5)                     # the flood is on
        before, began = attempts.value, time.monotonic()
        under_attack = bystander(server.port, seconds)
        failed_per_s = (attempts.value - before) / (time.monotonic() - began)
        stop.set()
        for p in procs:
            p.join(30)
        return {"failed_connects_per_s": round(failed_per_s), "baseline": baseline,
                "under_attack": under_attack}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--attackers", type=int, default=4)
    parser.add_argument("--server", choices=["jsstore", "nats-server", "both"],
                        default="both")
    args = parser.parse_args(argv)
    kinds = ["jsstore", "nats-server"] if args.server == "both" else [args.server]
    found = {}
    for kind in kinds:
        found[kind] = run(kind, args.seconds, args.attackers)
        print(kind, json.dumps(found[kind]), flush=True)
    if len(found) == 2:
        ours, theirs = found["jsstore"], found["nats-server"]
        ratios = {
            "failed_connects_per_s": ours["failed_connects_per_s"]
            / max(theirs["failed_connects_per_s"], 1),
            "median_under_attack": ours["under_attack"]["median_ms"]
            / theirs["under_attack"]["median_ms"],
            "p99_under_attack": ours["under_attack"]["p99_ms"] / theirs["under_attack"]["p99_ms"],
            "median_slowdown_jsstore": ours["under_attack"]["median_ms"]
            / ours["baseline"]["median_ms"],
            "median_slowdown_nats_server": theirs["under_attack"]["median_ms"]
            / theirs["baseline"]["median_ms"],
        }
        print("jsstore/nats-server", json.dumps({k: round(v, 2) for k, v in ratios.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
