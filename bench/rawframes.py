"""A raw-socket NATS client for the server benchmarks (consumeceiling.py, fanout.py,
corefanout.py) that is not itself the bottleneck: frames are prebuilt, MSG frames are found
and taken apart with C-speed bytes and `re` operations (no Python work per message), and
acks are built from the reply subjects found with one join.

The payloads of the benchmarks are b"x" * 128, so a frame's payload never holds "MSG " or
"PING": the searches below can run over whole buffers.
"""

from __future__ import annotations

import json
import re
import socket
import time

PAYLOAD = b"x" * 128
CONNECT = b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\n'

# a delivery's reply subject (an ack subject): one group per MSG frame
ACK_REPLY = re.compile(rb"MSG [^ \r\n]+ [^ \r\n]+ (\$JS\.ACK\.[^ \r\n]+) \d+\r\n")
# a delivery of pull consumer P<i> of stream FAN: its ack subject and i
PULL_ACK = re.compile(rb"MSG [^ \r\n]+ [^ \r\n]+ (\$JS\.ACK\.FAN\.P(\d+)\.[^ \r\n]+) \d+\r\n")


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    buf = b""
    while b"\r\n" not in buf:
        buf += sock.recv(65536)
    sock.sendall(CONNECT + b"PING\r\n")
    buf = b""
    while b"PONG\r\n" not in buf:
        buf += sock.recv(65536)
    return sock


def pub(subject: str | bytes, payload: bytes, reply: str | bytes | None = None) -> bytes:
    subject = subject.encode() if isinstance(subject, str) else subject
    if reply is None:
        return b"PUB %s %d\r\n%s\r\n" % (subject, len(payload), payload)
    reply = reply.encode() if isinstance(reply, str) else reply
    return b"PUB %s %s %d\r\n%s\r\n" % (subject, reply, len(payload), payload)


def acks(replies: list[bytes]) -> bytes:
    """`PUB <reply> 0` with an empty payload for each reply subject, in one bytes."""
    if not replies:
        return b""
    return b"PUB " + b" 0\r\n\r\nPUB ".join(replies) + b" 0\r\n\r\n"


def complete(buf: bytes) -> int:
    """Where the whole frames `buf` starts with end (frames are sequential, so only the last
    MSG / HMSG can be cut off; a partial control line at the end is left too)."""
    at = buf.rfind(b"MSG ")
    while at >= 0:
        start = at - 1 if at > 0 and buf[at - 1:at] == b"H" else at
        if start > 0 and buf[start - 2:start] != b"\r\n":
            at = buf.rfind(b"MSG ", 0, at)      # (not at a frame's start)
            continue
        eol = buf.find(b"\r\n", at)
        if eol < 0:
            return start
        total = int(buf[at:eol].rsplit(b" ", 1)[1])
        end = eol + 2 + total + 2
        if end > len(buf):
            return start
        tail = buf.rfind(b"\r\n", end - 2) + 2      # control lines after it: whole ones
        return max(end, tail)
    eol = buf.rfind(b"\r\n")
    return eol + 2 if eol >= 0 else 0


def after_pong(sock: socket.socket) -> bytes:
    """Wait for the PONG of the PING just sent; what came after it (deliveries may)."""
    buf = b""
    while b"PONG\r\n" not in buf:
        data = sock.recv(65536)
        if not data:
            raise RuntimeError("server closed the connection")
        buf += data
    return buf[buf.index(b"PONG\r\n") + 6:]


def request(sock: socket.socket, subject: str, payload: bytes, inbox: str = "_R.x",
            timeout: float = 10.0) -> dict:
    """A JetStream API request on a socket subscribed to `_R.*` (subscribe_replies); its
    answer, decoded.  Used outside the timed parts only."""
    sock.sendall(pub(subject, payload, inbox))
    deadline = time.monotonic() + timeout
    buf = b""
    marker = b"MSG " + inbox.encode() + b" "
    while True:
        at = buf.find(marker)
        if at >= 0:
            eol = buf.find(b"\r\n", at)
            if eol >= 0:
                size = int(buf[at:eol].rsplit(b" ", 1)[1])
                if len(buf) >= eol + 2 + size + 2:
                    return json.loads(buf[eol + 2:eol + 2 + size])
        if time.monotonic() > deadline:
            raise TimeoutError(f"no answer to {subject}")
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            data = sock.recv(1 << 20)
        except TimeoutError:
            continue
        if not data:
            raise RuntimeError("server closed the connection")
        if b"PING\r\n" in data:
            sock.sendall(b"PONG\r\n")
        buf += data


def subscribe_replies(sock: socket.socket) -> None:
    sock.sendall(b"SUB _R.* 9999\r\n")


def fill(port: int, stream: str, subjects: list[str], n: int, window: int = 1000) -> None:
    """Publish `n` messages of PAYLOAD round the subjects, up to `window` PubAcks out."""
    sock = connect(port)
    sock.sendall(b"SUB _F.* 1\r\n")
    frames = [pub(subjects[i % len(subjects)], PAYLOAD, "_F.a") for i in range(n)]
    sent = acked = 0
    buf = b""
    sock.settimeout(30)
    while acked < n:
        if sent < n and sent - acked < window:
            upto = min(n, acked + window)
            sock.sendall(b"".join(frames[sent:upto]))
            sent = upto
        data = sock.recv(1 << 20)
        if not data:
            raise RuntimeError("server closed the connection while filling")
        buf += data
        cut = complete(buf)
        if b"-ERR" in buf[:cut]:
            raise RuntimeError(buf[:cut].decode(errors="replace"))
        acked += buf.count(b"MSG _F.a ", 0, cut)
        buf = buf[cut:]
    sock.close()


def wait_for(check, timeout: float = 30.0, every: float = 0.02):
    """Call `check` until it returns something true; that, or the last result on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(every)
