"""Core NATS delivery (no JetStream): `jsstore serve` against nats-server, side by side.

    python bench/corefanout.py [--reps R] [--scale F] [--cases NAME ...] [--quick]
                               [--json FILE] [--before SRC]

Each round starts both servers fresh (JetStream on, as the tests start them, but unused)
and runs every case on each, the order of the servers alternating from round to round; the
figures are medians over the rounds, the ratio jsstore / nats-server of the medians.
``--before SRC`` adds `jsstore serve` run from another (built) source tree's src directory
as "jsstore before", in the same rotation.  Every client is a raw socket in a process of
its own (bench/rawframes.py), with no Python work per delivered message in the fan-out and
queue cases:

- ``fanout-1``, ``fanout-4``, ``fanout-16``: one publisher sends N ``PUB core.fan 128``
  frames (prebuilt, 1,000 to a write) to 1, 4 or 16 subscribers of ``core.fan``; the rate
  is the deliveries (N for each subscriber) per second from the first publish until the
  last subscriber has all N.
- ``queue-4``: the same publisher, 4 subscribers in one queue group; each message goes to
  one member, and the members' deliveries must add up to N exactly.
- ``request-reply``: 4 responders in a queue group on ``svc.echo`` answer each request
  (128 B) with 128 B on its reply subject, a read's answers in one write (the reply
  subjects found by one regular expression over the read); a requester (inbox
  ``_INBOX.x.*``) keeps 100 requests in flight.  Requests per second, and each request's
  latency (send to answer) at the 50th and 99th percentile.

A subscriber counts frames without looking at each (every MSG frame of its subscription
has the same length: a read that ends where whole frames would end adds them at once,
FrameCounter) and writes the count to memory shared with the publisher; at the end every
subscriber must have N messages (fan-out), or the members N between them (queue group),
and no part of a frame left over.

Flow control: core NATS has none, and a server cuts off a subscriber that falls too far
behind.  The publisher therefore keeps at most WINDOW messages between what it sent and
what the slowest subscriber has read (in the queue case, all the members together),
reading the shared counts before each write and sleeping 0.2 ms while the window is full.
The same end-to-end window for both servers: at most about 3 MB queued for any subscriber,
well under the 64 MB either server allows a client.

Each case also reports the server's CPU time over its measured window per delivered
message (bench/servercpu.py); a request counts as two messages (the request delivered to a
responder and the answer delivered to the requester).

Targets (the core delivery issue): fan-out to 1, 4 and 16 subscribers and the queue group
>= 1.5x nats-server's delivered msgs/s; request/reply with 100 in flight >= 1.0x (its p99
latency shown beside it).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (HERE, os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

import jsstoreserver  # noqa: E402
from natsserver import start_nats_server  # noqa: E402
from rawframes import PAYLOAD, after_pong, complete, connect, pub  # noqa: E402

import summary  # noqa: E402
from servercpu import ServerCPU  # noqa: E402

SUBJECT = b"core.fan"
SERVICE = b"svc.echo"
CHUNK = 1000                # messages in one write of the publisher
WINDOW = 20_000             # messages sent but not yet read by the slowest subscriber
POLL = 0.0002               # s: the publisher's sleep while the window is full
STALL = 20.0                # s without progress: the run failed
INFLIGHT = 100              # requests in flight

# name: (kind, subscribers or responders, messages or requests of a full run: about 2 s on
# nats-server on a 2-core machine)
CASES = {
    "fanout-1": ("fanout", 1, 2_000_000),
    "fanout-4": ("fanout", 4, 500_000),
    "fanout-16": ("fanout", 16, 300_000),
    "queue-4": ("queue", 4, 2_000_000),
    "request-reply": ("request", 4, 150_000),
}
TARGETS = {"fanout": 1.5, "queue": 1.5, "request": 1.0}

# a request as a responder gets it: its reply subject
REQUEST = re.compile(rb"MSG svc\.echo \d+ ([^ \r\n]+) \d+\r\n")
# an answer as the requester gets it: the inbox subject it came on
ANSWER = re.compile(rb"MSG (_INBOX\.x\.\d+) \d+ \d+\r\n")


def delivery_length(subject: bytes, sid: int) -> int:
    """The length of each MSG frame a subscription `sid` of `subject` gets (PAYLOAD)."""
    return len(b"MSG %s %d %d\r\n" % (subject, sid, len(PAYLOAD))) + len(PAYLOAD) + 2


class FrameCounter:
    """Counts the MSG frames of a stream in which every MSG frame is `length` bytes long
    without looking at each: a read whose last whole frame ends where the frame length says
    (its last bytes are the payload's end, and what follows starts a frame) adds the whole
    frames at once.  Anything else between the frames (a server's PING, say) puts the frame
    ends elsewhere; such a read and what is left of the one before it are taken apart frame
    by frame."""

    TAIL = PAYLOAD[-2:] + b"\r\n"         # the last bytes of every MSG frame

    def __init__(self, length: int):
        self.length = length
        self.frames = 0
        self.carry = b""            # the bytes after the last frame counted

    def feed(self, view: bytearray, size: int) -> bytes:
        """Count the frames `view[:size]` completes; what to answer (PONGs) if anything."""
        held = len(self.carry)
        whole = (held + size) // self.length * self.length
        end = whole - held              # where the last whole frame ends in view
        if (end >= len(self.TAIL) and view[end - len(self.TAIL):end] == self.TAIL
                and b"MSG ".startswith(view[end:min(size, end + 4)])):
            self.frames += whole // self.length
            self.carry = bytes(view[end:size])
            return b""
        buf = self.carry + bytes(view[:size])
        cut = complete(buf)
        if b"-ERR" in buf[:cut]:
            raise RuntimeError(buf[buf.find(b"-ERR"):][:200].decode(errors="replace"))
        self.frames += buf.count(b"MSG ", 0, cut)
        self.carry = buf[cut:]
        return b"PONG\r\n" * buf.count(b"PING\r\n", 0, cut)


# -- the clients, each in a process of its own -----------------------------------------------
def subscriber(port: int, slot: int, queue: bytes, counts, last, ready, stop, out,
               subject: bytes = SUBJECT) -> None:
    """Read and count frames until told to stop; counts[slot] is the running count and
    last[slot] when the latest read came."""
    sock = connect(port)
    sock.sendall(b"SUB %s %s1\r\nPING\r\n" % (subject, queue + b" " if queue else b""))
    counter = FrameCounter(delivery_length(subject, 1))
    view = bytearray(1 << 20)
    early = after_pong(sock)
    view[:len(early)] = early
    counter.feed(view, len(early))
    counts[slot] = counter.frames
    sock.settimeout(0.05)
    ready.set()
    try:
        while not stop.is_set():
            try:
                size = sock.recv_into(view)
            except TimeoutError:
                continue
            if not size:
                raise RuntimeError(f"server closed the connection after {counter.frames} "
                                   "messages")
            answer = counter.feed(view, size)
            counts[slot] = counter.frames
            last[slot] = time.perf_counter()
            if answer:
                sock.sendall(answer)
        if b"MSG" in counter.carry:
            raise RuntimeError(f"a part of a frame was left: {counter.carry[:200]!r}")
        out.put(("subscriber", slot))
    except Exception as e:
        out.put(("error", f"subscriber {slot}: {e}"))
    finally:
        sock.close()


def publisher(port: int, n: int, everyone: bool, counts, start, ready, go, stop,
              out, subject: bytes = SUBJECT) -> None:
    """Send n messages CHUNK at a time within the window; set `stop` once the subscribers
    have read them all (every subscriber all n when `everyone`, else n between them)."""
    sock = connect(port)
    write = pub(subject, PAYLOAD) * CHUNK

    def read() -> int:
        """Messages the subscribers have read: the slowest one's, or all of them together."""
        return min(counts) if everyone else sum(counts)

    ready.set()
    go.wait()
    start.value = time.perf_counter()
    sent = 0
    progress, seen = time.monotonic(), 0
    try:
        while True:
            done = read()
            if done >= n:
                break
            if done != seen:
                progress, seen = time.monotonic(), done
            elif time.monotonic() - progress > STALL:
                raise RuntimeError(f"no delivery for {STALL} s: {seen:,} of {n:,} read, "
                                   f"{sent:,} sent, counts {list(counts)}")
            if sent < n and sent + CHUNK - done <= WINDOW:
                size = min(CHUNK, n - sent)
                sock.sendall(write if size == CHUNK else write[:size * len(write) // CHUNK])
                sent += size
            else:
                time.sleep(POLL)
        out.put(("publisher", None))
    except Exception as e:
        out.put(("error", f"publisher: {e}"))
    finally:
        stop.set()
        sock.close()


def responder(port: int, slot: int, answered, ready, stop, out) -> None:
    """Answer every request with PAYLOAD on its reply subject, a read's answers in one
    write; answered[slot] counts them."""
    sock = connect(port)
    sock.sendall(b"SUB %s svc 1\r\nPING\r\n" % SERVICE)
    buf = after_pong(sock)
    # PUB <reply> 128\r\n<payload>\r\n for each reply subject, by one join
    between = b" %d\r\n%s\r\nPUB " % (len(PAYLOAD), PAYLOAD)
    tail = b" %d\r\n%s\r\n" % (len(PAYLOAD), PAYLOAD)
    sock.settimeout(0.05)
    ready.set()
    count = 0
    while not stop.is_set():
        try:
            data = sock.recv(1 << 20)
        except TimeoutError:
            continue
        if not data:
            out.put(("error", f"server closed responder {slot}'s connection"))
            return
        buf += data
        cut = complete(buf)
        replies = REQUEST.findall(buf, 0, cut)
        if b"PING\r\n" in buf[:cut]:
            sock.sendall(b"PONG\r\n")
        buf = buf[cut:]
        if replies:
            sock.sendall(b"PUB " + between.join(replies) + tail)
            count += len(replies)
            answered[slot] = count
    out.put(("responder", slot))
    sock.close()


def requester(port: int, n: int, ready, go, stop, out) -> None:
    """n requests, INFLIGHT at a time: a slot's next request goes when its answer came."""
    sock = connect(port)
    sock.sendall(b"SUB _INBOX.x.* 1\r\nPING\r\n")
    buf = after_pong(sock)
    inboxes = [b"_INBOX.x.%d" % slot for slot in range(INFLIGHT)]
    frames = [pub(SERVICE, PAYLOAD, inbox) for inbox in inboxes]
    slot_of = {inbox: slot for slot, inbox in enumerate(inboxes)}
    sent_at = [0.0] * INFLIGHT
    latencies = []
    sock.settimeout(STALL)
    ready.set()
    go.wait()
    try:
        start = time.perf_counter()
        first = min(n, INFLIGHT)
        sock.sendall(b"".join(frames[:first]))
        sent_at[:first] = [start] * first
        sent = first
        answered = 0
        while answered < n:
            data = sock.recv(1 << 20)
            now = time.perf_counter()
            if not data:
                raise RuntimeError(f"server closed the connection after {answered} answers")
            buf += data
            cut = complete(buf)
            found = ANSWER.findall(buf, 0, cut)
            if b"PING\r\n" in buf[:cut]:
                sock.sendall(b"PONG\r\n")
            buf = buf[cut:]
            answered += len(found)
            again = []
            for inbox in found:
                slot = slot_of[inbox]
                latencies.append(now - sent_at[slot])
                if sent < n:
                    again.append(slot)
                    sent += 1
            if again:
                now = time.perf_counter()
                sock.sendall(b"".join([frames[slot] for slot in again]))
                for slot in again:
                    sent_at[slot] = now
        done = time.perf_counter()
        latencies.sort()
        out.put(("requester", {"start": start, "done": done, "answers": answered,
                               "p50": latencies[len(latencies) // 2],
                               "p99": latencies[min(len(latencies) - 1,
                                                    int(len(latencies) * 0.99))]}))
    except Exception as e:
        out.put(("error", f"requester: {e}"))
    finally:
        stop.set()
        sock.close()


# -- one case on one server ------------------------------------------------------------------
def _run_processes(processes, readies, go, out, pid: int, expected: int) -> tuple[dict, float]:
    """Start the clients, open the CPU window, let them go; their reports and the server's
    CPU seconds."""
    for process in processes:
        process.start()
    reports: dict = {}
    try:
        for event in readies:
            if not event.wait(60):
                raise RuntimeError("a client did not get ready")
        cpu = ServerCPU(pid) if pid else None
        go.set()
        for _ in range(expected):
            key, value = out.get(timeout=STALL * 3)
            if key == "error":
                raise RuntimeError(value)
            reports.setdefault(key, []).append(value)
        seconds = cpu.stop() if cpu else 0.0
    finally:
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.kill()
    return reports, seconds


def measure_delivery(port: int, n: int, subscribers: int, queue: bool, pid: int = 0) -> dict:
    """Fan-out (every subscriber gets every message) or a queue group (each message goes to
    one member): delivered msgs/s and the checked counts."""
    ctx = multiprocessing.get_context("fork")
    counts = ctx.RawArray("q", subscribers)
    last = ctx.RawArray("d", subscribers)
    start = ctx.RawValue("d", 0.0)
    go, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
    readies = [ctx.Event() for _ in range(subscribers + 1)]
    processes = [ctx.Process(target=subscriber, args=(
        port, slot, b"q" if queue else b"", counts, last, readies[slot], stop, out))
        for slot in range(subscribers)]
    processes.append(ctx.Process(target=publisher, args=(
        port, n, not queue, counts, start, readies[-1], go, stop, out)))
    _, seconds = _run_processes(processes, readies, go, out, pid, subscribers + 1)
    got = list(counts)
    delivered = sum(got)
    wanted = n if queue else n * subscribers
    if delivered != wanted or (not queue and set(got) != {n}):
        raise RuntimeError(f"delivered {delivered:,}, expected {wanted:,}: {got}")
    elapsed = max(last) - start.value
    return {"msgs/s": delivered / elapsed, "delivered": delivered, "seconds": elapsed,
            "cpu us/msg": seconds * 1e6 / delivered if pid else 0.0, "per member": got}


def measure_requests(port: int, n: int, responders: int, pid: int = 0) -> dict:
    """Request/reply through a queue group of `responders`: requests/s and latencies."""
    ctx = multiprocessing.get_context("fork")
    answered = ctx.RawArray("q", responders)
    go, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
    readies = [ctx.Event() for _ in range(responders + 1)]
    processes = [ctx.Process(target=responder, args=(port, slot, answered, readies[slot],
                                                     stop, out))
                 for slot in range(responders)]
    processes.append(ctx.Process(target=requester, args=(port, n, readies[-1], go, stop, out)))
    reports, seconds = _run_processes(processes, readies, go, out, pid, responders + 1)
    result = reports["requester"][0]
    if result["answers"] != n or sum(answered) != n:
        raise RuntimeError(f"{result['answers']:,} answers to {n:,} requests, "
                           f"the responders answered {list(answered)}")
    return {"msgs/s": n / (result["done"] - result["start"]),
            "seconds": result["done"] - result["start"],
            "p50 us": result["p50"] * 1e6, "p99 us": result["p99"] * 1e6,
            "cpu us/msg": seconds * 1e6 / (2 * n) if pid else 0.0,
            "per member": list(answered)}


def measure(port: int, case: str, n: int, pid: int = 0) -> dict:
    kind, members, _ = CASES[case]
    if kind == "request":
        return measure_requests(port, n, members, pid)
    return measure_delivery(port, n, members, kind == "queue", pid)


# -- the runs --------------------------------------------------------------------------------
SRC = jsstoreserver.SRC


def start(kind: str, before: str | None):
    directory = tempfile.mkdtemp(prefix=f"bench-core-{kind.replace(' ', '-')}-")
    if kind == "nats-server":
        return start_nats_server(directory)
    # "jsstore before": the same command from another source tree (its src directory)
    jsstoreserver.SRC = before if kind == "jsstore before" else SRC
    return jsstoreserver.start_jsstore_server(directory)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every case's message count")
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--quick", action="store_true", help="a tenth of the messages, 1 rep")
    parser.add_argument("--json", default=None)
    parser.add_argument("--before", default=None, metavar="SRC",
                        help="also run `jsstore serve` from this source tree's src directory, "
                             "as 'jsstore before'")
    args = parser.parse_args(argv)
    scale, reps = (args.scale / 10, 1) if args.quick else (args.scale, args.reps)
    sizes = {case: max(CHUNK, int(CASES[case][2] * scale)) for case in args.cases}
    kinds = ["jsstore", "nats-server"]
    if args.before:
        kinds.insert(1, "jsstore before")
    runs = {case: {kind: [] for kind in kinds} for case in args.cases}
    for rep in range(reps):
        order = kinds[rep % len(kinds):] + kinds[:rep % len(kinds)]
        servers = {}
        try:
            for kind in order:
                servers[kind] = start(kind, args.before)
            time.sleep(0.3)
            for case in args.cases:
                for kind in order:
                    result = measure(servers[kind].port, case, sizes[case], servers[kind].pid)
                    runs[case][kind].append(result)
                    print(f"  {case:<14} {kind:<14} rep {rep + 1}: "
                          f"{result['msgs/s']:>12,.0f} /s in {result['seconds']:.2f} s, "
                          f"server CPU {result['cpu us/msg']:.2f} us/msg"
                          + (f", p50 {result['p50 us']:,.0f} us p99 {result['p99 us']:,.0f} us"
                             if "p50 us" in result else ""), file=sys.stderr)
        finally:
            for server in servers.values():
                server.stop()
    keys = ("msgs/s", "cpu us/msg", "p50 us", "p99 us")
    median = {case: {kind: {key: statistics.median(r[key] for r in results)
                            for key in keys if key in results[0]}
                     for kind, results in by_kind.items()}
              for case, by_kind in runs.items()}
    before = "jsstore before" in kinds
    print(f"\nCore NATS delivery, 128 B messages, median of {reps}; server CPU in microseconds "
          "per delivered message (a request counts two)\n")
    print("| case | messages | jsstore | nats-server | ratio | target | jsstore CPU us/msg | "
          "nats-server CPU us/msg |" + (" jsstore before | ratio before | "
                                        "jsstore before CPU us/msg |" if before else ""))
    print("|---|---|---|---|---|---|---|---|" + ("---|---|---|" if before else ""))
    rows = []
    for case in args.cases:
        kind, members, _ = CASES[case]
        ours, theirs = median[case]["jsstore"], median[case]["nats-server"]
        earlier = median[case].get("jsstore before")
        what = {"fanout": f"fan-out to {members}, delivered msgs/s",
                "queue": f"queue group of {members}, delivered msgs/s",
                "request": f"request/reply, {members} responders, {INFLIGHT} in flight, "
                           "requests/s"}[kind]
        print(f"| {what} | {sizes[case]:,} | {ours['msgs/s']:,.0f} | {theirs['msgs/s']:,.0f} | "
              f"{ours['msgs/s'] / theirs['msgs/s']:.2f} | >= {TARGETS[kind]} | "
              f"{ours['cpu us/msg']:.2f} | {theirs['cpu us/msg']:.2f} |" + (
                  f" {earlier['msgs/s']:,.0f} | {earlier['msgs/s'] / theirs['msgs/s']:.2f} | "
                  f"{earlier['cpu us/msg']:.2f} |" if before else ""))
        rows.append(summary.row("corefanout", what, ours["msgs/s"], "nats-server",
                                theirs["msgs/s"], TARGETS[kind],
                                unit="ops/s" if kind == "request" else "msgs/s"))
        if kind == "request":
            for key in ("p50 us", "p99 us"):
                label = f"request/reply latency {key.split()[0]}"
                print(f"| {label} (us, lower is better) | | {ours[key]:,.0f} | "
                      f"{theirs[key]:,.0f} | {ours[key] / theirs[key]:.2f} | | | |" + (
                          f" {earlier[key]:,.0f} | {earlier[key] / theirs[key]:.2f} | |"
                          if before else ""))
                if key == "p99 us":
                    rows.append(summary.row("corefanout", label, ours[key], "nats-server",
                                            theirs[key], None, unit="us",
                                            better=summary.LOWER))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"reps": reps, "sizes": sizes, "window": WINDOW, "inflight": INFLIGHT,
                       "before": args.before, "runs": runs, "median": median,
                       "summary": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
