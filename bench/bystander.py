"""One heavy request must not stall the other clients: a bystander's request/reply round
trips measured while another client does something large, jsstore next to nats-server in
one run.

    python bench/bystander.py [--seconds 5] [--subjects 10000] [--subscriptions 50000]
                              [--server jsstore|nats-server|both]

Scenarios (each on a fresh server, the bystander and its responder logged in as in
bench/bruteforce.py):

- ``subscriptions``: another client holds --subscriptions subscriptions ``*.x.N``; the
  bystander's round trips are measured after they are in place (each of its replies goes
  to a new inbox subject, so the subject table is asked anew every time);
- ``stream``: another client creates a stream of --subjects subjects ``orders.rN.item``;
  the bystander's round trips during the request, and the request's own time;
- ``filters``: another client creates a consumer with --subjects filter_subjects.

Reported per server and scenario: the bystander's median, 99th percentile and largest
round trip, the same before the load (the baseline), and the heavy request's time; then
jsstore's figures over nats-server's.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (os.path.join(ROOT, "src"), os.path.join(ROOT, "tests"), HERE):
    if path not in sys.path:
        sys.path.insert(0, path)

from bruteforce import _connect, bystander, echo_server  # noqa: E402


def _read_until(sock: socket.socket, marker: bytes, timeout: float = 600) -> bytes:
    sock.settimeout(timeout)
    buf = b""
    while marker not in buf:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def _request(sock: socket.socket, subject: str, body: bytes) -> float:
    """A JetStream API request on the heavy client; its time to the answer."""
    start = time.perf_counter()
    sock.sendall(b"PUB %s _INBOX.heavy.1 %d\r\n%s\r\n" % (subject.encode(), len(body), body))
    sock.settimeout(600)
    buf = b""
    while b"MSG _INBOX.heavy.1" not in buf or not buf.endswith(b"}\r\n"):
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    elapsed = time.perf_counter() - start
    if b'"error"' in buf:
        raise RuntimeError(f"{subject} failed: {buf[-300:]!r}")
    return elapsed


def _heavy(port: int, scenario: str, count: int, ready: threading.Event, out: dict) -> None:
    sock = _connect(port, "ops", "s3cret-ops")
    sock.sendall(b"SUB _INBOX.heavy.* 1\r\nPING\r\n")
    _read_until(sock, b"PONG\r\n")
    if scenario == "subscriptions":
        frames = b"".join(b"SUB *.x.%d %d\r\n" % (n, n + 10) for n in range(count))
        sock.sendall(frames + b"PING\r\n")
        _read_until(sock, b"PONG\r\n")
        ready.set()
        out["held"] = True
        while not out.get("done"):
            time.sleep(0.05)
    elif scenario == "stream":
        subjects = [f"orders.r{n}.item" for n in range(count)]
        body = json.dumps({"name": "BIG", "subjects": subjects}).encode()
        ready.set()
        out["request_s"] = _request(sock, "$JS.API.STREAM.CREATE.BIG", body)
    else:
        _request(sock, "$JS.API.STREAM.CREATE.F",
                 json.dumps({"name": "F", "subjects": ["f.>"]}).encode())
        body = json.dumps({"stream_name": "F", "config": {
            "durable_name": "C", "ack_policy": "explicit",
            "filter_subjects": [f"f.{n}.x" for n in range(count)]}}).encode()
        ready.set()
        out["request_s"] = _request(sock, "$JS.API.CONSUMER.CREATE.F.C", body)
    sock.close()


def run(kind: str, scenario: str, seconds: float, count: int) -> dict:
    with echo_server(kind) as server:
        baseline = bystander(server.port, min(seconds, 3.0))
        ready, heavy_out = threading.Event(), {}
        heavy = threading.Thread(target=_heavy,
                                 args=(server.port, scenario, count, ready, heavy_out))
        heavy.start()
        ready.wait(600)
        during = bystander(server.port, seconds)
        heavy_out["done"] = True
        heavy.join(600)
        return {"baseline": baseline, "during": during,
                "request_s": round(heavy_out.get("request_s", 0.0), 3)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--subjects", type=int, default=10000)
    parser.add_argument("--subscriptions", type=int, default=50000)
    parser.add_argument("--scenarios", default="subscriptions,stream,filters")
    parser.add_argument("--server", choices=["jsstore", "nats-server", "both"],
                        default="both")
    args = parser.parse_args(argv)
    kinds = ["jsstore", "nats-server"] if args.server == "both" else [args.server]
    for scenario in args.scenarios.split(","):
        count = args.subscriptions if scenario == "subscriptions" else args.subjects
        found = {}
        for kind in kinds:
            found[kind] = run(kind, scenario, args.seconds, count)
            print(scenario, kind, json.dumps(found[kind]), flush=True)
        if len(found) == 2:
            ours, theirs = found["jsstore"], found["nats-server"]
            ratios = {
                "median_during": ours["during"]["median_ms"] / theirs["during"]["median_ms"],
                "p99_during": ours["during"]["p99_ms"] / theirs["during"]["p99_ms"],
                "slowdown_jsstore": ours["during"]["median_ms"] / ours["baseline"]["median_ms"],
                "slowdown_nats_server": theirs["during"]["median_ms"]
                / theirs["baseline"]["median_ms"],
            }
            if theirs["request_s"]:
                ratios["request_time"] = ours["request_s"] / theirs["request_s"]
            print(scenario, "jsstore/nats-server",
                  json.dumps({k: round(v, 2) for k, v in ratios.items()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
