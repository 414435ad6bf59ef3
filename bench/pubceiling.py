"""The acked publish ceiling: `jsstore serve` against nats-server, side by side in one run.

    python bench/pubceiling.py [--n N] [--reps R] [--subjects 1,1000] [--selftest]

A raw-socket client, in a process of its own, sends prebuilt ``PUB raw.<i> _R.<k> 128``
frames into a file-storage stream capturing ``raw.>`` and reads the PubAcks back, keeping
up to 1,000 unanswered.  It counts acks with ``bytes.count`` on whole reads (no Python
per message), keeps what it read, and after the clock stops checks that every publish got
a PubAck and that their sequences run 1..N in order (no error answers).  Each repetition
starts the servers fresh (their own store directories, free loopback ports, the order
rotating); ``--before SRC`` adds `jsstore serve` run from another (built) source tree; the
figures are medians, the ratio jsstore / nats-server.  The CPU seconds the client and the
server used during the run (``/proc/<pid>/stat``) are printed per repetition, and the
server's CPU microseconds per acked publish (bench/servercpu.py, median) is in the table.

``--selftest`` measures the client against a stand-in server that answers every PUB with a
PubAck at once (bytes operations only): the client's own ceiling.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

import jsstoreserver  # noqa: E402
from natsserver import start_nats_server  # noqa: E402

import summary  # noqa: E402
from servercpu import ServerCPU  # noqa: E402

TARGET = 2.0        # the speed issue: acked publish ceiling >= 2x nats-server's

SRC = jsstoreserver.SRC
PAYLOAD = b"x" * 128
WINDOW = 1000
BATCH = 100                     # frames per write
REPLIES = 100                   # reply subjects _R.0 .. _R.99
STALL = 5.0                     # no answer for this long: the run failed
CONFIG = b'{"name":"RAW%s","subjects":["raw%s.>"],"storage":"file"}'  # % (tag, tag)
SEQ = re.compile(rb'"seq":(\d+)\}\r\n')


def batches(subjects: int, tag: bytes = b"") -> list[bytes]:
    """The prebuilt writes, BATCH frames each, cycling over `subjects` subjects (of stream
    RAW<tag>, answered on _R<tag>.*: several publishers, each with a tag of its own, share
    a server without sharing a stream or answers)."""
    count = max(1, subjects // BATCH) if subjects >= BATCH else 1
    out = []
    for b in range(count):
        frames = []
        for j in range(BATCH):
            i = b * BATCH + j
            frames.append(b"PUB raw%s.%d _R%s.%d %d\r\n%s\r\n"
                          % (tag, i % subjects, tag, i % REPLIES, len(PAYLOAD), PAYLOAD))
        out.append(b"".join(frames))
    return out


def connect(port: int, tag: bytes = b"") -> socket.socket:
    """Connected, subscribed to the answers, the stream RAW<tag> created (its answer
    read)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.recv(65536)
    config = CONFIG % (tag, tag)
    sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\n'
                 b'SUB _R%s.* 1\r\nPUB $JS.API.STREAM.CREATE.RAW%s _R%s.c %d\r\n%s\r\n'
                 % (tag, tag, tag, len(config), config))
    # the stream's answer, not a PONG: nats-server answers JetStream API requests on its
    # own schedule, so a PONG may come before the stream exists
    buf = b""
    while b"stream_create_response" not in buf:
        data = sock.recv(65536)
        if not data:
            raise RuntimeError("server closed the connection")
        buf += data
    if b'"error"' in buf:
        raise RuntimeError(f"stream create failed: {buf!r}")
    return sock


def client(port: int, n: int, subjects: int) -> dict:
    """The measurement (runs in the client process)."""
    return publish(connect(port), n, subjects)


def publish(sock: socket.socket, n: int, subjects: int, tag: bytes = b"") -> dict:
    """n acked publishes on a socket `connect` made (with the same tag), then the check;
    the socket is closed.  `start` and `end` are time.perf_counter() (one clock for every
    process of the machine), for runs of several clients at once."""
    writes = batches(subjects, tag)
    nwrites = len(writes)
    sock.settimeout(STALL)
    received = []
    sent = acked = w = 0
    tail = b""
    cpu0 = time.process_time()
    start = time.perf_counter()
    while acked < n:
        while sent < n and sent - acked <= WINDOW - BATCH:
            sock.sendall(writes[w])
            w = w + 1 if w + 1 < nwrites else 0
            sent += BATCH
        data = sock.recv(1 << 20)
        if not data:
            raise RuntimeError(f"server closed the connection after {acked} acks")
        received.append(data)
        # an answer ends "}\r\n"; what follows the last one is not whole yet
        chunk = tail + data
        cut = chunk.rfind(b"}\r\n") + 3
        acked += chunk.count(b"MSG ", 0, cut)
        tail = chunk[cut:]
    end = time.perf_counter()
    elapsed = end - start
    cpu = time.process_time() - cpu0
    sock.close()
    # the acks are real: one per publish, sequences 1..n in order, no errors
    everything = b"".join(received)
    seqs = [int(s) for s in SEQ.findall(everything)]
    errors = everything.count(b'"error"')
    ok = errors == 0 and seqs == list(range(1, n + 1))
    return {"rate": n / elapsed, "elapsed": elapsed, "start": start, "end": end,
            "client_cpu": cpu, "ok": ok,
            "errors": errors, "acks": len(seqs),
            "contiguous": seqs == list(range(1, len(seqs) + 1))}


def run_client(port: int, n: int, subjects: int, server_pid: int | None) -> dict:
    """The client in a process of its own; the server's CPU seconds over its run."""
    cpu = ServerCPU(server_pid) if server_pid else None
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--client", str(port),
                          "--n", str(n), "--subjects", str(subjects)],
                         check=True, capture_output=True, text=True)
    result = json.loads(out.stdout)
    if cpu:
        result["server_cpu"] = cpu.stop()
        result["server_cpu_us"] = cpu.us_per_message(n)
    return result


def run_one(kind: str, n: int, subjects: int, before: str | None = None) -> dict:
    directory = tempfile.mkdtemp(prefix=f"pubceiling-{kind}-")
    if kind == "nats-server":
        server = start_nats_server(directory)
    else:
        # "jsstore before": the same command from another source tree (its src directory)
        jsstoreserver.SRC = before if kind == "jsstore before" else SRC
        server = jsstoreserver.start_jsstore_server(directory)
    try:
        time.sleep(0.3)
        return run_client(server.port, n, subjects, server.pid)
    finally:
        server.stop()


# -- the stand-in server of --selftest -------------------------------------------------------
def instant_server(listener: socket.socket) -> None:
    """Answer one connection: the stream create, then a PubAck for every PUB at once."""
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sendall(b'INFO {"server_id":"instant","headers":true,"max_payload":1048576}\r\n')
    data = b""
    while b"STREAM.CREATE" not in data or not data.endswith(b"}\r\n"):
        data += conn.recv(65536)
    answer = b'{"type":"io.nats.jetstream.api.v1.stream_create_response"}'
    conn.sendall(b"MSG _R.c 1 %d\r\n%s\r\n" % (len(answer), answer))
    seq = 0
    pending = b""
    while True:
        data = conn.recv(1 << 20)
        if not data:
            break
        pending += data
        cut = pending.rfind(b"\r\n" + PAYLOAD + b"\r\n")
        if cut < 0:
            continue
        cut += len(PAYLOAD) + 4
        count = pending.count(b"PUB ", 0, cut)
        pending = pending[cut:]
        conn.sendall(b"".join([b'MSG _R.0 1 %d\r\n{"stream":"RAW","seq":%d}\r\n'
                               % (22 + len(str(s)), s) for s in range(seq + 1, seq + count + 1)]))
        seq += count
    conn.close()


def selftest(n: int, subjects: int) -> dict:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    child = os.fork()
    if child == 0:
        try:
            instant_server(listener)
        finally:
            os._exit(0)
    listener.close()
    try:
        return run_client(port, n, subjects, child)
    finally:
        os.waitpid(child, 0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--subjects", default="1,1000")
    parser.add_argument("--selftest", action="store_true")
    parser.add_argument("--before", default=None, metavar="SRC",
                        help="also run `jsstore serve` from this src directory (built), "
                             "as 'jsstore before'")
    parser.add_argument("--quick", action="store_true", help="N = 50,000, 3 reps")
    parser.add_argument("--json", default=None, help="also write the medians to this file")
    parser.add_argument("--client", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.n = 50_000
    if args.client:
        print(json.dumps(client(args.client, args.n, int(args.subjects))))
        return 0
    counts = [int(s) for s in args.subjects.split(",")]
    kinds = ["selftest"] if args.selftest else ["jsstore", "nats-server"]
    if args.before and not args.selftest:
        kinds.insert(1, "jsstore before")
    failed = False
    rows = []
    for subjects in counts:
        runs: dict[str, list[dict]] = {kind: [] for kind in kinds}
        for rep in range(args.reps):
            order = kinds[rep % len(kinds):] + kinds[:rep % len(kinds)]
            for kind in order:
                result = (selftest(args.n, subjects) if kind == "selftest"
                          else run_one(kind, args.n, subjects, args.before))
                runs[kind].append(result)
                failed |= not result["ok"]
                print(f"  {subjects} subject(s) {kind:<14} rep {rep + 1}: "
                      f"{result['rate']:,.0f} msgs/s, client cpu {result['client_cpu']:.2f} s"
                      f" server cpu {result.get('server_cpu', 0):.2f} s of "
                      f"{result['elapsed']:.2f} s, acks ok {result['ok']}", file=sys.stderr)
        medians = {kind: statistics.median(r["rate"] for r in results)
                   for kind, results in runs.items()}
        cpu = {kind: statistics.median(r["server_cpu_us"] for r in results)
               for kind, results in runs.items() if kind != "selftest"}
        rows.append((subjects, medians, cpu))
    print(f"\n{args.n:,} acked publishes of {len(PAYLOAD)} B, {WINDOW} outstanding, "
          f"median of {args.reps}\n")
    if args.selftest:
        print("| subjects | client vs instant stand-in |\n|---|---|")
        for subjects, medians, _ in rows:
            print(f"| {subjects:,} | {medians['selftest']:,.0f} |")
    else:
        before = "jsstore before" in kinds
        print("| subjects | jsstore | nats-server | ratio |"
              + (" jsstore before | ratio before |" if before else "")
              + " jsstore CPU us/msg | nats-server CPU us/msg |"
              + (" jsstore before CPU us/msg |" if before else "")
              + "\n|---|---|---|---|" + ("---|---|" if before else "")
              + "---|---|" + ("---|" if before else ""))
        for subjects, medians, cpu in rows:
            theirs = medians["nats-server"]
            print(f"| {subjects:,} | {medians['jsstore']:,.0f} | {theirs:,.0f} | "
                  f"{medians['jsstore'] / theirs:.2f} |" + (
                      f" {medians['jsstore before']:,.0f} | "
                      f"{medians['jsstore before'] / theirs:.2f} |" if before else "")
                  + f" {cpu['jsstore']:.2f} | {cpu['nats-server']:.2f} |"
                  + (f" {cpu['jsstore before']:.2f} |" if before else ""))
    if failed:
        print("SOME RUNS LOST OR MISNUMBERED ACKS", file=sys.stderr)
    if args.json and not args.selftest:
        table = [summary.row("pubceiling", f"acked publish ceiling, {subjects:,} subject(s)",
                             None if failed else medians["jsstore"], "nats-server",
                             medians["nats-server"], TARGET)
                 for subjects, medians, _ in rows]
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "reps": args.reps, "medians": dict(
                (str(subjects), medians) for subjects, medians, _ in rows),
                "server cpu us/msg": dict((str(subjects), cpu) for subjects, _, cpu in rows),
                "failed": failed,
                "summary": table}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
