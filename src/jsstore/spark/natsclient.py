"""A small blocking NATS client for Spark tasks: what reading and writing a stream needs,
with no Python object per message read.

Spark runs many short tasks in worker processes; each opens one connection, does one
job (read a sequence range, publish a partition) and closes it.  A range with no subject
filter on a stream with `allow_direct` is read with batched direct gets
(`$JS.API.DIRECT.GET.<stream>` with `{"seq": N, "batch": B}`, nats-server 2.11+ and jsstore
serve): no consumer to create, and the server answers a batch without routing each message
through a consumer.  Otherwise reading uses a pull consumer with no acks, bounded to the
task's range: both servers speak it, with or without `allow_direct`.  Each delivered message carries its
stream sequence and timestamp in its ack subject; the core (jsstore._core.columns.natsrecords) turns
the delivery frames of the bytes read straight into block records, so the Cython core that
reads block files (filters and Arrow columns) reads them too.

Publishing pipelines HPUB frames with a reply inbox per message, `window` awaiting acks at
a time, and checks every PubAck.
"""

from __future__ import annotations

import datetime
import json
import select
import socket
import uuid
from collections import deque
from urllib.parse import urlparse

from jsstore._core.columns.arrowblock import SubjectPredicate
from jsstore._core.columns.natsrecords import next_direct_records, next_records
from jsstore.spark.options import SourceOptions
from jsstore.wire.headers import encode_headers

CRLF = b"\r\n"
CONNECT_TIMEOUT = 10.0
REQUEST_TIMEOUT = 10.0
READ_SIZE = 1 << 20
CHUNK_BYTES = 4 << 20             # block records handed out at a time by fetch_records
STATUS_NO_MESSAGES = (b"404", b"408", b"409")
INACTIVE_THRESHOLD_NS = 30_000_000_000
PULLS_IN_FLIGHT = 2
DIRECT_MAX_BYTES = 64 << 20       # a direct get batch's max_bytes (nats-server's default)
DEFAULT_MAX_PAYLOAD = 1 << 20     # nats-server's, when INFO names none
SEND_ROWS = 256                   # publishes written to the socket at a time
ABORT_PREFIX = "_JSSTORE.SPARK.ABORT."   # + a job's id: the driver tells its tasks to stop


class NatsError(RuntimeError):
    """The server refused a request, or the connection failed."""


def _servers(options: SourceOptions) -> list[tuple[str, int, str | None, str | None]]:
    out = []
    for url in options.url.split(","):
        url = url.strip()
        if "://" not in url:
            url = "nats://" + url
        parsed = urlparse(url)
        out.append((parsed.hostname or "127.0.0.1", parsed.port or 4222, parsed.username,
                    parsed.password))
    return out


class Connection:
    """One connection: CONNECT, one subscription on a private inbox, frame reading."""

    def __init__(self, options: SourceOptions):
        self.options = options
        self.inbox = f"_INBOX.{uuid.uuid4().hex}"
        self.buffer = bytearray()
        error = None
        for host, port, user, password in _servers(options):
            try:
                self.sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
                break
            except OSError as exc:
                error = exc
        else:
            raise NatsError(f"cannot connect to {options.url}: {error}")
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(REQUEST_TIMEOUT)
        info = self._line()                  # INFO {...}
        try:
            self.max_payload = int(json.loads(info[5:]).get("max_payload", DEFAULT_MAX_PAYLOAD))
        except ValueError:
            raise NatsError(f"{options.url}: not a NATS server ({info[:80]!r})") from None
        connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                   "lang": "python-jsstore-spark", "version": "1", "protocol": 1}
        user = options.user or user
        password = options.password or password
        if user:
            connect["user"], connect["pass"] = user, password or ""
        if options.token:
            connect["auth_token"] = options.token
        self.sock.sendall(b"CONNECT " + json.dumps(connect).encode() + CRLF + b"PING" + CRLF
                          + f"SUB {self.inbox}.* 1".encode() + CRLF)
        while True:
            line = self._line()
            if line.startswith(b"PONG"):
                break
            if line.startswith(b"-ERR"):
                raise NatsError(f"{options.url}: {line.decode(errors='replace')}")

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- frames ------------------------------------------------------------------------
    def _fill(self) -> None:
        chunk = self.sock.recv(READ_SIZE)
        if not chunk:
            raise NatsError("connection closed by the server")
        self.buffer += chunk

    def _line(self) -> bytes:
        while True:
            end = self.buffer.find(CRLF)
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[:end + 2]
                return line
            self._fill()

    def next_message(self):
        """(subject, reply, header bytes or None, payload) of the next message on the
        inbox; answers PINGs on the way."""
        while True:
            message = self._buffered_message()
            if message is not None:
                return message
            self._fill()

    def poll_message(self):
        """The next message if it has fully arrived, else None: never waits."""
        message = self._buffered_message()
        if message is None and select.select([self.sock], [], [], 0)[0]:
            self._fill()
            message = self._buffered_message()
        return message

    def _buffered_message(self):
        """The first whole message in the buffer (consumed), control lines before it
        handled; None when the buffer holds no whole message yet."""
        while True:
            end = self.buffer.find(CRLF)
            if end < 0:
                return None
            line = bytes(self.buffer[:end])
            if line.startswith(b"HMSG") or line.startswith(b"MSG"):
                parts = line.split()
                has_headers = parts[0] == b"HMSG"
                total = int(parts[-1])
                if len(self.buffer) < end + 2 + total + 2:
                    return None
                header_len = int(parts[-2]) if has_headers else 0
                reply = parts[3] if len(parts) == (6 if has_headers else 5) else None
                body = bytes(self.buffer[end + 2:end + 2 + total])
                del self.buffer[:end + 2 + total + 2]
                return (parts[1], reply, body[:header_len] if has_headers else None,
                        body[header_len:])
            del self.buffer[:end + 2]
            if line.startswith(b"PING"):
                self.sock.sendall(b"PONG" + CRLF)
            elif line.startswith(b"-ERR"):
                raise NatsError(line.decode(errors="replace"))

    def publish(self, subject: str, payload: bytes, reply: str = "", headers: bytes | None = None,
                send: bool = True) -> bytes:
        if headers:
            frame = (f"HPUB {subject} {reply} {len(headers)} {len(headers) + len(payload)}\r\n"
                     .encode() + headers + payload + CRLF)
        else:
            frame = f"PUB {subject} {reply} {len(payload)}\r\n".encode() + payload + CRLF
        if send:
            self.sock.sendall(frame)
        return frame

    def request(self, subject: str, payload: dict | bytes) -> dict:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        answer_subject = f"{self.inbox}.r".encode()
        self.publish(subject, body, answer_subject.decode())
        while True:
            to, _reply, headers, data = self.next_message()
            if to != answer_subject:
                continue                 # the rest of an earlier pull batch
            if headers and headers[9:12] == b"503":
                raise NatsError(f"no responders for {subject} (is JetStream enabled?)")
            answer = json.loads(data) if data else {}
            if "error" in answer:
                raise NatsError(f"{subject}: {answer['error'].get('description')} "
                                f"(err_code {answer['error'].get('err_code')})")
            return answer


# -- reading -----------------------------------------------------------------------------------

def stream_info(options: SourceOptions, stream: str) -> dict:
    with Connection(options) as conn:
        return conn.request(f"$JS.API.STREAM.INFO.{stream}", b"")


def _ack_metadata(reply: bytes) -> tuple[int, int]:
    """(stream seq, timestamp ns) from a JetStream ack subject, v1 or v2 layout."""
    tokens = reply.split(b".")
    if len(tokens) == 9:               # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
        return int(tokens[5]), int(tokens[7])
    return int(tokens[7]), int(tokens[9])   # with <domain>.<account hash> after $JS.ACK


def first_seq_since(options: SourceOptions, stream: str, nanos: int) -> int:
    """The first sequence stored at or after `nanos` (the stream's last + 1 when none)."""
    seconds, fraction = divmod(nanos, 1_000_000_000)
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    start = moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{fraction:09d}Z"
    config = {"deliver_policy": "by_start_time", "opt_start_time": start, "ack_policy": "none",
              "inactive_threshold": INACTIVE_THRESHOLD_NS, "mem_storage": True, "num_replicas": 1}
    with Connection(options) as conn:
        created = conn.request(f"$JS.API.CONSUMER.CREATE.{stream}",
                               {"stream_name": stream, "config": config})
        consumer = created["name"]
        try:
            conn.publish(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}",
                         b'{"batch":1,"no_wait":true}', f"{conn.inbox}.m")
            _subject, reply, _headers, _payload = conn.next_message()
            if reply is not None and reply.startswith(b"$JS.ACK."):
                return _ack_metadata(reply)[0]
            return conn.request(f"$JS.API.STREAM.INFO.{stream}", b"")["state"]["last_seq"] + 1
        finally:
            try:
                conn.request(f"$JS.API.CONSUMER.DELETE.{stream}.{consumer}", b"")
            except (NatsError, OSError):
                pass


def server_filters(scan) -> list[str]:
    """NATS filters narrowing a pull consumer to what the scan may accept ([] = all)."""
    if scan.exact is not None:
        return sorted(s for s in scan.exact if scan.subject_ok(s))[:256] or ["_jsstore_.none"]
    if scan.wildcards:
        return list(scan.wildcards)
    dotted = [p for p in scan.prefixes if p.endswith(".")]
    if len(dotted) == 1:
        return [dotted[0] + ">"]
    return []


def fetch_records(options: SourceOptions, stream: str, low: int, high: int, filters,
                  chunk_bytes: int = CHUNK_BYTES, direct: bool = False):
    """The messages of `stream` with sequences in [low, high] matching `filters`, as block
    records (no hash): buffers of about `chunk_bytes` each, in sequence order, handed out
    while the rest is still being fetched.  `direct`: the stream allows direct gets, which
    read the range when there is no filter."""
    if low > high:
        return
    if direct and not filters:
        with Connection(options) as conn:
            yield from _direct_range(conn, stream, low, high, options.nats_batch, chunk_bytes)
        return
    config = {"deliver_policy": "by_start_sequence", "opt_start_seq": low, "ack_policy": "none",
              "replay_policy": "instant", "inactive_threshold": INACTIVE_THRESHOLD_NS,
              "mem_storage": True, "num_replicas": 1, "max_waiting": 16}
    if len(filters) == 1:
        config["filter_subject"] = filters[0]
    elif filters:
        config["filter_subjects"] = filters
    with Connection(options) as conn:
        created = conn.request(f"$JS.API.CONSUMER.CREATE.{stream}",
                               {"stream_name": stream, "config": config})
        consumer = created["name"]
        try:
            yield from _pull_range(conn, f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}",
                                   low, high, options.nats_batch, chunk_bytes)
        finally:
            try:
                conn.request(f"$JS.API.CONSUMER.DELETE.{stream}.{consumer}", b"")
            except (NatsError, OSError):
                pass


def _connection_event(conn: Connection, event) -> bool:
    """What a record parser stopped at that is not a message: None (more bytes are needed),
    a PING or an -ERR line, or an int (a record past the range: True, the read is done)."""
    if event is None:
        conn._fill()
    elif isinstance(event, int):
        return True
    elif event.startswith(b"PING"):
        conn.sock.sendall(b"PONG" + CRLF)
    elif event.startswith(b"-ERR"):
        raise NatsError(event.decode(errors="replace"))
    return False


def _pull_range(conn: Connection, next_subject: str, low: int, high: int, batch: int,
                chunk_bytes: int):
    """Pull deliveries until the range ends, as buffers of block records.

    PULLS_IN_FLIGHT requests at a time: the server fills the next batch while this task
    decodes the current one; each request ends after `batch` messages or with a status
    (404/408: nothing more).  The core (jsstore._core.columns.natsrecords) turns every delivery
    frame in the bytes read into a record; only the other frames come back here."""
    pull = json.dumps({"batch": batch, "no_wait": True}).encode()
    inbox = f"{conn.inbox}.m"
    for _ in range(PULLS_IN_FLIGHT):
        conn.publish(next_subject, pull, inbox)
    in_flight, received, last = PULLS_IN_FLIGHT, 0, low - 1
    exhausted = False                  # a request was answered "nothing more"
    out = bytearray()
    while in_flight:
        consumed, appended, last_appended, event = next_records(conn.buffer, 0, out, high)
        del conn.buffer[:consumed]
        if appended:
            last = last_appended
            received += appended
            while received >= batch:            # requests served in full
                in_flight, received = in_flight - 1, received - batch
                if last < high and not exhausted:
                    conn.publish(next_subject, pull, inbox)
                    in_flight += 1
            if last >= high:
                break                  # what is still in flight is skipped by request()
        if len(out) >= chunk_bytes:
            yield out
            out = bytearray()
        if not isinstance(event, tuple):
            if _connection_event(conn, event):
                break                  # past the range
        else:
            headers = event[2]
            status = headers[9:12] if headers else b""
            if status == b"100":                # heartbeat
                continue
            # a request ended early; the others in flight still answer (nats-server
            # may end one with 408 Requests Pending while an earlier one delivers)
            in_flight, received = in_flight - 1, 0
            if status in STATUS_NO_MESSAGES:
                exhausted = True
    if out:
        yield out


def _eob_pending(headers: bytes) -> int:
    """Nats-Num-Pending of a direct get batch's end (204 EOB): what is left after it."""
    for line in headers.split(CRLF):
        if line.startswith(b"Nats-Num-Pending:"):
            return int(line.split(b":", 1)[1])
    return 0


def _direct_range(conn: Connection, stream: str, low: int, high: int, batch: int,
                  chunk_bytes: int):
    """Read [low, high] with batched direct gets, as buffers of block records.

    Request i asks for `batch` messages from low + i * batch, PULLS_IN_FLIGHT at a time;
    a batch that steps over deleted sequences overlaps the next one, whose repeats the core
    skips (it appends only sequences above the last appended).  A batch that ends short
    (max_bytes reached) while messages remain leaves a gap before the next request: the
    requests in flight are then read and dropped, and asking resumes after the last
    message received.  A batch answered 404 (nothing at or after its start) or with
    nothing pending ends the range."""
    subject = f"$JS.API.DIRECT.GET.{stream}"
    inbox = f"{conn.inbox}.g"
    starts: deque[int] = deque()          # the first sequence of each request in flight
    next_start, want, dropping = low, low, 0

    def ask() -> None:
        nonlocal next_start
        while len(starts) < PULLS_IN_FLIGHT and next_start <= high:
            size = min(batch, high - next_start + 1)
            conn.publish(subject, b'{"seq":%d,"batch":%d,"max_bytes":%d}'
                         % (next_start, size, DIRECT_MAX_BYTES), inbox)
            starts.append(next_start)
            next_start += size

    ask()
    out = bytearray()
    while starts:
        consumed, appended, last, event = next_direct_records(
            conn.buffer, 0, out, (1 << 64) - 1 if dropping else want, high)
        del conn.buffer[:consumed]
        if appended:
            want = last + 1
        if len(out) >= chunk_bytes:
            yield out
            out = bytearray()
        if not isinstance(event, tuple):
            if _connection_event(conn, event):
                break                  # past the range
        else:
            headers = event[2] or b""
            status = headers[9:12]
            if status not in (b"204", b"404"):
                if status == b"503":
                    raise NatsError(f"no responders for {subject} (is allow_direct set?)")
                raise NatsError(f"{subject}: {headers.decode(errors='replace').strip()}")
            starts.popleft()
            if dropping:
                dropping -= 1
            elif status == b"404" or _eob_pending(headers) == 0 or want > high:
                break                  # nothing more in the stream or in the range
            elif (starts[0] if starts else next_start) > want:
                dropping, next_start = len(starts), want    # ended short: a gap
            else:
                next_start = max(next_start, want)
            ask()
    if out:
        yield out


# -- publishing --------------------------------------------------------------------------------

class WriteTarget:
    """The stream a write publishes into, as STREAM.INFO gave it: a wrong name is refused
    before anything is published (nats-server's answer: stream not found, 10059), and a
    row whose subject the stream does not capture is refused before it is sent."""

    def __init__(self, options: SourceOptions, stream: str):
        try:
            info = stream_info(options, stream)
        except NatsError as exc:
            raise NatsError(f"writing to stream {stream!r} at {options.url}: {exc}") from None
        self.stream = stream
        self.subjects = list(info["config"].get("subjects") or [stream])

    def accepts(self):
        return SubjectPredicate(wildcards=self.subjects).accepts


def announce_abort(options: SourceOptions, job_id: str) -> None:
    """Tell every task of a job still publishing to stop (core NATS, no reply)."""
    with Connection(options) as conn:
        conn.publish(ABORT_PREFIX + job_id, b"")
        conn.sock.sendall(b"PING" + CRLF)
        while not conn._line().startswith(b"PONG"):
            pass


def publish_all(options: SourceOptions, stream: str, messages, *, job_id: str | None = None,
                target: WriteTarget | None = None, window: int = 1000) -> tuple[int, int]:
    """Publish (subject, payload, headers dict) messages into `stream`, waiting for every
    PubAck; returns (messages acknowledged, of which duplicates).  NatsError, with nothing
    more sent, for a stream that is not there, a subject it does not capture, a message
    over the server's max_payload, a PubAck with an error or naming another stream, or the
    abort of the job `job_id` (see announce_abort)."""
    target = target if target is not None else WriteTarget(options, stream)
    accepts = target.accepts()
    checked: dict[str, bool] = {}
    sent = acked = duplicates = 0
    pending = []
    stop_subject = (ABORT_PREFIX + job_id).encode() if job_id else None
    with Connection(options) as conn:
        reply = f"{conn.inbox}.p"
        if job_id:
            conn.sock.sendall(f"SUB {ABORT_PREFIX}{job_id} 2".encode() + CRLF)

        def take(to, headers, data) -> None:
            nonlocal acked, duplicates
            if to == stop_subject:
                raise NatsError(f"the job writing to stream {stream!r} was aborted; this "
                                f"task stopped after {acked} acknowledged messages")
            if headers and headers[9:12] == b"503":
                raise NatsError(f"no stream captures the subjects published to {stream}")
            answer = json.loads(data)
            if "error" in answer:
                raise NatsError(f"stream {stream!r} refused message {acked + 1} of the "
                                f"task: {answer['error'].get('description')} "
                                f"(err_code {answer['error'].get('err_code')})")
            if answer.get("stream") != stream:
                raise NatsError(f"a message went to stream {answer.get('stream')!r}, "
                                f"not {stream!r}")
            acked += 1
            duplicates += bool(answer.get("duplicate"))

        def drain(until: int) -> None:
            while sent - acked > until:
                to, _reply, headers, data = conn.next_message()
                take(to, headers, data)
            while (message := conn.poll_message()) is not None:
                take(message[0], message[2], message[3])

        def send() -> None:
            drain(window)                      # an abort seen here stops the task unsent
            conn.sock.sendall(b"".join(pending))
            pending.clear()

        for subject, payload, headers in messages:
            ok = checked.get(subject)
            if ok is None:
                ok = checked[subject] = accepts(subject)
            if not ok:
                raise NatsError(f"subject {subject!r} is not one of stream {stream!r}'s "
                                f"subjects {target.subjects}")
            block = encode_headers(headers)
            if len(payload) + (len(block) if block else 0) > conn.max_payload:
                raise NatsError(f"a message of {len(payload)} bytes (subject {subject!r}) "
                                f"is over the server's max_payload {conn.max_payload}")
            pending.append(conn.publish(subject, payload, reply, block, send=False))
            sent += 1
            if len(pending) >= SEND_ROWS:
                send()
        if pending:
            send()
        drain(0)
    return acked, duplicates
