"""The consume ceiling: `jsstore serve` against nats-server, a raw-socket pull consumer.

    python bench/consumeceiling.py [--n N] [--reps R] [--batch B] [--quick] [--json FILE]
                                   [--before SRC]

Each repetition starts both servers fresh (the order alternating), fills a file-storage
stream with N messages of 128 B, adds a durable pull consumer with explicit acks and then
times the loop a pull client runs: ``PUB $JS.API.CONSUMER.MSG.NEXT.C.C <inbox>
{"batch":B,"expires":...}``, read the B messages, ack each (``PUB <reply> 0``, sent
together with the next request), until N are consumed.  The clock stops when the
consumer's info shows an ack floor of N (every message acked); the info must also show
nothing pending or waiting for an ack.

The client (bench/rawframes.py) does no Python work per message.  Its own ceiling is
measured against a stand-in server that answers every pull request at once with a
prebuilt batch (`--client-ceiling`, also in every run's table).

``--before SRC`` adds `jsstore serve` run from another (built) source tree's src directory
as "jsstore before", in the same rotation, so a change is measured against what it
replaces in the same run.

Target (issue 20): jsstore >= 1.5x nats-server.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(ROOT, "src")
for path in (HERE, os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

import jsstoreserver  # noqa: E402
import rawframes  # noqa: E402
from natsserver import start_nats_server  # noqa: E402
from rawframes import ACK_REPLY, acks, complete, connect, pub, request  # noqa: E402

import summary  # noqa: E402
from servercpu import ServerCPU  # noqa: E402

TARGET = 1.5        # the speed issue: consume ceiling >= 1.5x nats-server's

NEXT = "$JS.API.CONSUMER.MSG.NEXT.C.C"
EXPIRES = 30_000_000_000        # ns: a request is always fulfilled long before


def next_request(batch: int) -> bytes:
    return pub(NEXT, b'{"batch":%d,"expires":%d}' % (batch, EXPIRES), "_I.x")


def consume_loop(sock: socket.socket, n: int, batch: int) -> float:
    """Pull and ack `n` messages `batch` at a time; the time the last acks were sent."""
    got = 0
    out = next_request(min(batch, n))
    while got < n:
        sock.sendall(out)
        want = min(batch, n - got)
        buf = b""
        while True:
            data = sock.recv(1 << 20)
            if not data:
                raise RuntimeError(f"server closed the connection after {got} messages")
            buf += data
            if buf.count(b"MSG ") >= want and complete(buf) == len(buf):
                break
        replies = ACK_REPLY.findall(buf)
        if len(replies) != want:
            raise RuntimeError(f"expected {want} deliveries, got {buf[:300]!r}...")
        got += want
        out = acks(replies)
        if got < n:
            out += next_request(min(batch, n - got))
    sock.sendall(out)
    return time.perf_counter()


def consumer_info(sock: socket.socket) -> dict:
    return request(sock, "$JS.API.CONSUMER.INFO.C.C", b"")


def settled(info: dict, n: int) -> bool:
    return (info.get("ack_floor", {}).get("stream_seq") == n and info["num_ack_pending"] == 0
            and info["num_pending"] == 0)


def measure(port: int, n: int, batch: int, pid: int = 0) -> dict:
    api = connect(port)
    rawframes.subscribe_replies(api)
    answer = request(api, "$JS.API.STREAM.CREATE.C", json.dumps(
        {"name": "C", "subjects": ["c.>"], "storage": "file"}).encode())
    if "error" in answer:
        raise RuntimeError(answer)
    rawframes.fill(port, "C", [f"c.{i}" for i in range(100)], n)
    answer = request(api, "$JS.API.CONSUMER.CREATE.C.C", json.dumps(
        {"stream_name": "C", "config": {"durable_name": "C", "ack_policy": "explicit",
                                         "deliver_policy": "all"}}).encode())
    if "error" in answer:
        raise RuntimeError(answer)
    sock = connect(port)
    sock.sendall(b"SUB _I.x 1\r\nPING\r\n")
    buf = b""
    while b"PONG" not in buf:
        buf += sock.recv(65536)
    cpu = ServerCPU(pid) if pid else None
    start = time.perf_counter()
    sent = consume_loop(sock, n, batch)
    info = rawframes.wait_for(lambda: settled(i := consumer_info(api), n) and i, timeout=30,
                              every=0.001)
    done = time.perf_counter()
    if cpu:
        cpu.stop()
    if not info:
        raise RuntimeError(f"not every message acked: {consumer_info(api)}")
    sock.close()
    api.close()
    return {"consume msgs/s": n / (done - start), "loop msgs/s": n / (sent - start),
            "ack_floor": info["ack_floor"]["stream_seq"],
            "num_ack_pending": info["num_ack_pending"],
            "delivered": info["delivered"]["stream_seq"],
            "server cpu us/msg": cpu.us_per_message(n) if cpu else 0.0}


# -- the client's own ceiling ----------------------------------------------------------------
def _stand_in(listener: socket.socket, batch: int) -> None:
    """Answer every pull request on the one connection with a prebuilt batch."""
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sendall(b'INFO {"server_id":"STANDIN","max_payload":1048576}\r\n')
    frames = b"".join(
        b"MSG c.%d 1 $JS.ACK.C.C.1.%d.%d.1700000000000000000.0 128\r\n%s\r\n"
        % (i % 100, i + 1, i + 1, rawframes.PAYLOAD) for i in range(batch))
    while True:
        data = conn.recv(1 << 20)
        if not data:
            return
        answer = b"PONG\r\n" * data.count(b"PING\r\n")
        answer += frames * data.count(b"MSG.NEXT")
        if answer:
            conn.sendall(answer)


def client_ceiling(n: int, batch: int) -> float:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    process = multiprocessing.get_context("fork").Process(target=_stand_in,
                                                         args=(listener, batch))
    process.start()
    try:
        sock = connect(port)
        start = time.perf_counter()
        consume_loop(sock, n, batch)
        elapsed = time.perf_counter() - start
        sock.close()
        return n / elapsed
    finally:
        process.join(5)
        if process.is_alive():
            process.kill()
        listener.close()


def run_one(kind: str, n: int, batch: int, before: str | None = None) -> dict:
    directory = tempfile.mkdtemp(prefix=f"bench-consume-{kind.replace(' ', '-')}-")
    if kind == "nats-server":
        server = start_nats_server(directory)
    else:
        # "jsstore before": the same command from another source tree (its src directory)
        jsstoreserver.SRC = before if kind == "jsstore before" else SRC
        server = jsstoreserver.start_jsstore_server(directory)
    try:
        time.sleep(0.2)
        return measure(server.port, n, batch, server.pid)
    finally:
        server.stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="N = 20,000, 1 rep")
    parser.add_argument("--json", default=None)
    parser.add_argument("--before", default=None, metavar="SRC",
                        help="also run `jsstore serve` from this source tree's src directory, "
                             "as 'jsstore before'")
    args = parser.parse_args(argv)
    n, reps = (20_000, 1) if args.quick else (args.n, args.reps)
    kinds = ["jsstore", "nats-server"]
    if args.before:
        kinds.insert(1, "jsstore before")
    runs: dict[str, list[dict]] = {kind: [] for kind in kinds + ["client"]}
    for rep in range(reps):
        order = kinds[rep % len(kinds):] + kinds[:rep % len(kinds)]
        for kind in order:
            runs[kind].append(run_one(kind, n, args.batch, args.before))
            print(f"  {kind:<14} rep {rep + 1}: " + ", ".join(
                f"{k} {v:,.0f}" for k, v in runs[kind][-1].items()), file=sys.stderr)
        runs["client"].append({"consume msgs/s": client_ceiling(n, args.batch)})
        print(f"  client       rep {rep + 1}: {runs['client'][-1]['consume msgs/s']:,.0f}",
              file=sys.stderr)
    median = {kind: {k: statistics.median(r[k] for r in results) for k in results[0]}
              for kind, results in runs.items()}
    ours, theirs = median["jsstore"], median["nats-server"]
    print(f"\n{n:,} messages of 128 B, pull batches of {args.batch} with an explicit ack "
          f"of each, median of {reps}\n")
    print("| measurement | jsstore | nats-server | ratio | target | client ceiling |")
    print("|---|---|---|---|---|---|")
    print(f"| consume msgs/s (acked) | {ours['consume msgs/s']:,.0f} | "
          f"{theirs['consume msgs/s']:,.0f} | "
          f"{ours['consume msgs/s'] / theirs['consume msgs/s']:.2f} | >= 1.5 | "
          f"{median['client']['consume msgs/s']:,.0f} |")
    cpu = {kind: median[kind]["server cpu us/msg"] for kind in kinds}
    print(f"| server CPU us per msg (lower is better) | {cpu['jsstore']:.2f} | "
          f"{cpu['nats-server']:.2f} | {cpu['nats-server'] / cpu['jsstore']:.2f} | | |")
    if args.before:
        print(f"| server CPU us per msg, jsstore before | {cpu['jsstore before']:.2f} | "
              f"{cpu['nats-server']:.2f} | {cpu['nats-server'] / cpu['jsstore before']:.2f}"
              " | | |")
        earlier = median["jsstore before"]["consume msgs/s"]
        print(f"| consume msgs/s (acked), jsstore before | {earlier:,.0f} | "
              f"{theirs['consume msgs/s']:,.0f} | {earlier / theirs['consume msgs/s']:.2f} | "
              f">= 1.5 | |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": n, "reps": reps, "batch": args.batch, "runs": runs,
                       "median": median, "before": args.before,
                       "ratio": ours["consume msgs/s"] / theirs["consume msgs/s"],
                       "summary": [summary.row(
                           "consumeceiling", f"consume ceiling, pull {args.batch} + ack each",
                           ours["consume msgs/s"], "nats-server", theirs["consume msgs/s"],
                           TARGET)]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
