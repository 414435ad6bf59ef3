"""Fan-out: `jsstore serve` against nats-server, one publisher, push consumers and
filtered pull consumers on one stream: 10 + 990 and 10 + 10.

    python bench/fanout.py [--n N] [--reps R] [--pulls P] [--pushes Q] [--quick] [--json FILE]

Each repetition starts both servers fresh (the order alternating) and sets up a
file-storage stream FAN on ``fan.>``, Q push consumers (explicit ack, deliver subject
``d.<k>``, every message) and P pull consumers (explicit ack, filter ``fan.<i>``); the
cases (CASES) are 10 + 990, the 1,000 consumers nats-server allows a stream by default, and
10 + 10, where nats-server is not slowed down by its consumer count.  Three
client processes (bench/rawframes.py, no Python work per message) then run at once:

- the publisher sends N messages of 128 B round ``fan.0`` .. ``fan.<P-1>``, up to 1,000
  PubAcks outstanding;
- the push client acks every delivery it gets on ``d.<k>`` as it reads it;
- the pull client keeps a request (``{"batch":B}``, no expiry) outstanding on every pull
  consumer, acks every delivery and asks again when a consumer's batch is used up.

The rate is deliveries (N for each push and N over all the pull consumers: (Q + 1) N) per
second from the first publish until the clients had them all; afterwards every consumer's
info must show each delivery acked (ack floor = delivered, nothing pending).  The server's
CPU time over the same window, per delivery, is reported too (bench/servercpu.py), and
the publisher's own rate during it.

Targets (issue 29): delivered msgs/s >= 2x nats-server's with 10 + 990 consumers, >= 1.5x
with 10 + 10.
"""

from __future__ import annotations

import argparse
import collections
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
for path in (HERE, os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

import rawframes  # noqa: E402
from jsstoreserver import start_jsstore_server  # noqa: E402
from natsserver import start_nats_server  # noqa: E402
from rawframes import (ACK_REPLY, PULL_ACK, acks, after_pong,  # noqa: E402
                       complete, connect, pub, request)

import summary  # noqa: E402
from summary import LOWER  # noqa: E402
from servercpu import ServerCPU  # noqa: E402

# (push consumers, pull consumers, target: delivered msgs/s against nats-server's)
CASES = ((10, 990, 2.0), (10, 10, 1.5))

WINDOW = 1000


def setup(port: int, pulls: int, pushes: int) -> None:
    api = connect(port)
    rawframes.subscribe_replies(api)
    answer = request(api, "$JS.API.STREAM.CREATE.FAN", json.dumps(
        {"name": "FAN", "subjects": ["fan.>"], "storage": "file"}).encode())
    if "error" in answer:
        raise RuntimeError(answer)
    for k in range(pushes):
        answer = request(api, f"$JS.API.CONSUMER.CREATE.FAN.H{k}", json.dumps(
            {"stream_name": "FAN", "config": {
                "durable_name": f"H{k}", "deliver_subject": f"d.{k}",
                "ack_policy": "explicit"}}).encode())
        if "error" in answer:
            raise RuntimeError(answer)
    # the pull consumers' creations pipelined, their answers counted
    frames = b"".join(pub(f"$JS.API.CONSUMER.CREATE.FAN.P{i}", json.dumps(
        {"stream_name": "FAN", "config": {
            "durable_name": f"P{i}", "filter_subject": f"fan.{i}",
            "ack_policy": "explicit"}}).encode(), "_R.p") for i in range(pulls))
    api.sendall(frames)
    buf = b""
    api.settimeout(60)
    while buf.count(b"MSG _R.p ") < pulls or complete(buf) != len(buf):
        buf += api.recv(1 << 20)
    if b'"error"' in buf:
        raise RuntimeError(buf[buf.find(b'"error"'):][:300])
    api.close()


def publisher(port: int, n: int, pulls: int, go, out) -> None:
    sock = connect(port)
    sock.sendall(b"SUB _F.* 1\r\nPING\r\n")
    buf = b""
    while b"PONG" not in buf:
        buf += sock.recv(65536)
    frames = [pub(f"fan.{i % pulls}", rawframes.PAYLOAD, "_F.a") for i in range(n)]
    go.wait()
    out.put(("start", time.perf_counter()))
    sent = acked = 0
    buf = b""
    while acked < n:
        if sent < n and sent - acked < WINDOW:
            upto = min(n, acked + WINDOW)
            sock.sendall(b"".join(frames[sent:upto]))
            sent = upto
        data = sock.recv(1 << 20)
        if not data:
            raise RuntimeError("server closed the publisher's connection")
        buf += data
        cut = complete(buf)
        acked += buf.count(b"MSG _F.a ", 0, cut)
        buf = buf[cut:]
    out.put(("published", time.perf_counter()))
    sock.close()


def push_client(port: int, want: int, pushes: int, ready, go, out) -> None:
    sock = connect(port)
    # (one subscription per deliver subject: nats-server's push consumers see the
    # interest of literal subscriptions only)
    sock.sendall(b"".join(b"SUB d.%d %d\r\n" % (k, k + 1) for k in range(pushes))
                 + b"PING\r\n")
    buf = after_pong(sock)
    ready.set()
    go.wait()
    got = 0
    while got < want:
        data = sock.recv(1 << 20)
        if not data:
            raise RuntimeError(f"server closed the push client's connection after {got}")
        buf += data
        cut = complete(buf)
        replies = ACK_REPLY.findall(buf, 0, cut)
        if b"PING\r\n" in buf[:cut]:
            sock.sendall(b"PONG\r\n")
        buf = buf[cut:]
        got += len(replies)
        sock.sendall(acks(replies))
    out.put(("push", time.perf_counter()))
    time.sleep(0.2)
    sock.close()


def pull_client(port: int, want: int, pulls: int, batch: int, ready, go, out) -> None:
    sock = connect(port)
    sock.sendall(b"SUB _P.* 1\r\n")
    requests = [pub(f"$JS.API.CONSUMER.MSG.NEXT.FAN.P{i}", b'{"batch":%d}' % batch,
                    f"_P.{i}") for i in range(pulls)]
    left = [batch] * pulls
    sock.sendall(b"".join(requests) + b"PING\r\n")
    buf = after_pong(sock)
    ready.set()
    go.wait()
    got = 0
    while got < want:
        data = sock.recv(1 << 20)
        if not data:
            raise RuntimeError(f"server closed the pull client's connection after {got}")
        buf += data
        cut = complete(buf)
        found = PULL_ACK.findall(buf, 0, cut)
        if b"PING\r\n" in buf[:cut]:
            sock.sendall(b"PONG\r\n")
        buf = buf[cut:]
        if not found:
            continue
        got += len(found)
        frame = acks([reply for reply, _ in found])
        for name, count in collections.Counter(name for _, name in found).items():
            i = int(name)
            left[i] -= count
            if left[i] <= 0:
                left[i] += batch
                frame += requests[i]
        sock.sendall(frame)
    out.put(("pull", time.perf_counter()))
    time.sleep(0.2)
    sock.close()


def check(port: int, n: int, pulls: int, pushes: int) -> dict:
    """Every consumer's info once it settled: each delivery acked."""
    api = connect(port)
    rawframes.subscribe_replies(api)
    per_filter = collections.Counter(i % pulls for i in range(n))
    infos = {}

    def settled() -> bool:
        for name in [f"H{k}" for k in range(pushes)] + [f"P{i}" for i in range(pulls)]:
            if name in infos:
                continue
            info = request(api, f"$JS.API.CONSUMER.INFO.FAN.{name}", b"")
            wanted = n if name[0] == "H" else per_filter[int(name[1:])]
            if (info["delivered"]["consumer_seq"] == wanted
                    and info["ack_floor"]["consumer_seq"] == wanted
                    and info["num_ack_pending"] == 0 and info["num_pending"] == 0
                    and info["num_redelivered"] == 0):
                infos[name] = info
            else:
                return False
        return True
    ok = rawframes.wait_for(settled, timeout=30, every=0.05)
    api.close()
    if not ok:
        raise RuntimeError(f"consumers not settled: {len(infos)} of {pulls + pushes} were")
    return {"consumers settled": len(infos)}


def measure(port: int, n: int, pulls: int = 990, pushes: int = 10, batch: int = 10,
            pid: int = 0) -> dict:
    setup(port, pulls, pushes)
    ctx = multiprocessing.get_context("fork")
    go, out = ctx.Event(), ctx.Queue()
    ready = [ctx.Event(), ctx.Event()]
    processes = [ctx.Process(target=push_client, args=(port, n * pushes, pushes, ready[0], go, out)),
                 ctx.Process(target=pull_client,
                             args=(port, n, pulls, batch, ready[1], go, out)),
                 ctx.Process(target=publisher, args=(port, n, pulls, go, out))]
    for process in processes:
        process.start()
    try:
        for event in ready:
            if not event.wait(60):
                raise RuntimeError("a client did not get ready")
        cpu = ServerCPU(pid) if pid else None
        go.set()
        times = {}
        while len(times) < 4:
            key, value = out.get(timeout=120)
            times[key] = value
        if cpu:
            cpu.stop()
    finally:
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.kill()
    done = max(times["push"], times["pull"])
    figures = {"delivered msgs/s": (pushes + 1) * n / (done - times["start"]),
               "publish msgs/s": n / (times["published"] - times["start"])}
    if cpu:
        figures["server cpu us/msg"] = cpu.us_per_message((pushes + 1) * n)
    figures.update(check(port, n, pulls, pushes))
    return figures


def run_one(kind: str, n: int, pulls: int, pushes: int, batch: int) -> dict:
    directory = tempfile.mkdtemp(prefix=f"bench-fanout-{kind}-")
    server = (start_jsstore_server(directory) if kind == "jsstore"
              else start_nats_server(directory))
    try:
        time.sleep(0.2)
        return measure(server.port, n, pulls, pushes, batch, server.pid)
    finally:
        server.stop()


def client_ceiling(n: int, pushes: int) -> float:
    """The push client's own rate: a stand-in server streams prebuilt deliveries."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    frames = b"".join(
        b"MSG d.%d 1 $JS.ACK.FAN.H%d.1.%d.%d.1700000000000000000.0 128\r\n%s\r\n"
        % (i % pushes, i % pushes, i + 1, i + 1, rawframes.PAYLOAD) for i in range(1000))

    def stand_in() -> None:
        conn, _ = listener.accept()
        conn.sendall(b'INFO {"server_id":"STANDIN"}\r\n')
        conn.recv(65536)
        conn.sendall(b"PONG\r\n")
        conn.recv(65536)
        conn.sendall(b"PONG\r\n")

        def drain() -> None:        # the acks, read as they come until the client closes
            try:
                while conn.recv(1 << 20):
                    pass
            except OSError:
                pass
        reader = threading.Thread(target=drain)
        reader.start()
        sent = 0
        while sent < n * pushes:
            conn.sendall(frames)
            sent += 1000
        reader.join()
        conn.close()

    ctx = multiprocessing.get_context("fork")
    process = ctx.Process(target=stand_in)
    process.start()
    go, out, ready = ctx.Event(), ctx.Queue(), ctx.Event()
    go.set()
    start = time.perf_counter()
    push_client(port, n * pushes, pushes, ready, go, out)
    _, done = out.get()
    process.join(10)
    listener.close()
    return n * pushes / (done - start)


def run_case(n: int, reps: int, pushes: int, pulls: int, batch: int,
             target: float | None) -> tuple[dict, list[dict]]:
    """Both servers `reps` times (the first alternating) and the push client's ceiling:
    the case's figures and its summary rows."""
    runs: dict[str, list[dict]] = {"jsstore": [], "nats-server": [], "client": []}
    for rep in range(reps):
        order = ["jsstore", "nats-server"] if rep % 2 == 0 else ["nats-server", "jsstore"]
        for kind in order:
            runs[kind].append(run_one(kind, n, pulls, pushes, batch))
            print(f"  {kind:<12} rep {rep + 1}: " + ", ".join(
                f"{k} {v:,.0f}" for k, v in runs[kind][-1].items()), file=sys.stderr)
        runs["client"].append({"delivered msgs/s": client_ceiling(n, pushes)})
        print(f"  push client  rep {rep + 1}: {runs['client'][-1]['delivered msgs/s']:,.0f}",
              file=sys.stderr)
    median = {kind: {k: statistics.median(r[k] for r in results) for k in results[0]}
              for kind, results in runs.items()}
    ours, theirs = median["jsstore"], median["nats-server"]
    wanted = f">= {target}" if target else ""
    print(f"\n{n:,} messages of 128 B, {pushes} push + {pulls} filtered pull "
          f"consumers (explicit acks), median of {reps}\n")
    print("| measurement | jsstore | nats-server | ratio | target |")
    print("|---|---|---|---|---|")
    for key, goal in (("delivered msgs/s", wanted), ("publish msgs/s", "")):
        print(f"| {key} | {ours[key]:,.0f} | {theirs[key]:,.0f} | "
              f"{ours[key] / theirs[key]:.2f} | {goal} |")
    key = "server cpu us/msg"
    print(f"| server CPU us per delivered msg (lower is better) | {ours[key]:.2f} | "
          f"{theirs[key]:.2f} | {theirs[key] / ours[key]:.2f} | |")
    print(f"\npush client's own ceiling: {median['client']['delivered msgs/s']:,.0f} msgs/s")
    name = f"{pushes} push + {pulls} pull consumers"
    rows = [summary.row("fanout", f"delivered, {name}", ours["delivered msgs/s"],
                        "nats-server", theirs["delivered msgs/s"], target),
            summary.row("fanout", f"publishes during it, {name}", ours["publish msgs/s"],
                        "nats-server", theirs["publish msgs/s"], None),
            summary.row("fanout", f"server CPU per delivery, {name}", ours[key],
                        "nats-server", theirs[key], None, unit="us", better=LOWER)]
    return {"pushes": pushes, "pulls": pulls, "runs": runs, "median": median,
            "ratio": ours["delivered msgs/s"] / theirs["delivered msgs/s"]}, rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--pulls", type=int, default=None,
                        help="one case of P pull consumers (default: every case of CASES)")
    parser.add_argument("--pushes", type=int, default=10)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="N = 5,000, 1 rep")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    n, reps = (5_000, 1) if args.quick else (args.n, args.reps)
    cases = (CASES if args.pulls is None else
             [(args.pushes, args.pulls, dict(((q, p), t) for q, p, t in CASES).get(
                 (args.pushes, args.pulls)))])
    results, rows = [], []
    for pushes, pulls, target in cases:
        result, case_rows = run_case(n, reps, pushes, pulls, args.batch, target)
        results.append(result)
        rows += case_rows
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": n, "reps": reps, "batch": args.batch, "cases": results,
                       "summary": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
