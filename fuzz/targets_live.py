"""The fuzz targets over a live store or JetStream (see targets.py): a FileStore opened
over arbitrary block bytes, consumer creation, byte-driven consumer sessions and arbitrary
requests into the wire API. Each docstring says what is kept per process and why that is
safe. Imported by targets.py, inside atheris's instrumentation like it."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile

import jsstore
from jsstore import StreamConfig
from jsstore.errors import StoreError
from jsstore.jetstream import account as jetstream
from jsstore.store.config import MIN_BLOCK_SIZE, StoreOptions
from jsstore.wire import headers
from jsstore.store.staging import process_alive
from jsstore.wire.apierrors import ApiError

EXPECTED = (StoreError, ValueError)


_STORE_DIR: list[str] = []      # filestore_open's stream directory, once made
_STORE_PREFIX = "jsstore-fuzz-"  # its name: this prefix and the process id


def _store_dir() -> str:
    """The stream directory filestore_open reuses: made on first use, in a memory file
    system where there is one (/dev/shm), removed when the process exits. libFuzzer ends
    a run with exit(), which skips Python's exit handlers: what a process that is gone
    left there is removed by the next one."""
    if not _STORE_DIR:
        parent = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
        for name in os.listdir(parent):
            pid = name[len(_STORE_PREFIX):]
            if name.startswith(_STORE_PREFIX) and pid.isdigit() and not process_alive(int(pid)):
                shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
        root = os.path.join(parent, f"{_STORE_PREFIX}{os.getpid()}")
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(os.path.join(root, "msgs"))
        atexit.register(shutil.rmtree, root, True)
        _STORE_DIR.append(root)
    return _STORE_DIR[0]


def _empty_msgs(directory: str) -> None:
    """Remove what the last open left in msgs/ (blocks, index.db, thw.db) and anything
    besides msgs/, meta.inf, meta.sum and the lock file in the stream directory."""
    for name in os.listdir(directory):
        if name not in ("msgs", "meta.inf", "meta.sum", "jsstore.lock"):
            shutil.rmtree(os.path.join(directory, name), ignore_errors=True)
    msgs = os.path.join(directory, "msgs")
    for name in os.listdir(msgs):
        os.unlink(os.path.join(msgs, name))


def filestore_open(data: bytes) -> None:
    """A whole FileStore recovery over a block file with these bytes: msgs/1.blk of a
    stream directory, opened (the recovery scan, truncation of a damaged tail), its first
    64 messages loaded, stopped (the write block trimmed, index.db written).

    Kept per process: one stream directory, in a memory file system where there is one
    (fsync there costs no disk flush; the calls are the same). msgs/ is emptied before
    every input, so each open sees its own block and nothing else. meta.inf and meta.sum,
    written by the first open, stay: FileStore writes them when missing and never reads
    them. The store has no sync thread (sync_interval 0): it would only fsync what
    stop() writes and syncs anyway. Its block size is the smallest (32 KB, not 8 MB):
    the mapping opened over the last block reserves that much of the memory file
    system, and an 8 MB reservation cost more than the rest of the execution."""
    directory = _store_dir()
    _empty_msgs(directory)
    with open(os.path.join(directory, "msgs", "1.blk"), "wb") as f:
        f.write(data)
    try:
        fs = jsstore.FileStore(directory, StreamConfig(name="FUZZ", subjects=[">"]),
                               StoreOptions(block_size=MIN_BLOCK_SIZE, sync_interval=0))
    except EXPECTED:
        return
    try:
        st = fs.state()
        for seq in range(st.first_seq, min(st.last_seq, st.first_seq + 64) + 1):
            try:
                fs.load_msg(seq)
            except EXPECTED:
                pass
    finally:
        fs.stop()


_CREATE_JS: list = []           # consumer_create's JetStream, once made


def _create_js():
    """consumer_create's JetStream: in memory, a fixed clock, no timer thread, a stream S
    on s.> holding one message."""
    if not _CREATE_JS:
        js = jetstream.open(clock=lambda: 1_800_000_000_000_000_000, timers=False)
        js.add_stream(name="S", subjects=["s.>"])
        js.publish("s.1", b"x")
        _CREATE_JS.append(js)
    return _CREATE_JS[0]


def consumer_create(data: bytes) -> None:
    """A CONSUMER.CREATE body through the whole create path of a live JetStream (as a
    create without a name in the subject, with name C, and as DURABLE.CREATE of C): an
    answer is JSON with a type and either an error or the consumer's info.

    Kept per process: one in-memory JetStream with its stream (a fixed clock and no timer
    thread: creation reads the clock only for stamps and start times). Every consumer an
    input made is deleted after it, and the stream must then be as it was (one message,
    no consumer), so each input starts from the same JetStream."""
    js = _create_js()
    try:
        for subject in ("$JS.API.CONSUMER.CREATE.S", "$JS.API.CONSUMER.CREATE.S.C",
                        "$JS.API.CONSUMER.DURABLE.CREATE.S.C"):
            answer = json.loads(js.request(subject, data))
            assert answer["type"] == "io.nats.jetstream.api.v1.consumer_create_response"
            assert ("error" in answer) != ("config" in answer)
    finally:
        for name in js.consumer_names("S"):
            js.delete_consumer("S", name)
    info = js.stream_info("S")
    assert (info.state.messages, info.state.last_seq, info.state.consumer_count) == (1, 1, 0)


# operations of one consumer_session; bytes past them are not read (fuzz/run.py sets
# libFuzzer's -max_len to match)
SESSION_OPS = 32


def consumer_session(data: bytes) -> None:
    """A consumer driven by the bytes: the first two pick the ack policy and max_deliver,
    then each of the next SESSION_OPS bytes one operation (publish, pull request, an ack
    of some kind on a delivered message, clock advance and tick, message deletion); the
    numbers consumer info reports must stay consistent after each operation that did
    something (an operation that does nothing leaves them as they were).

    Nothing is kept between inputs: each gets its own in-memory JetStream (its own clock,
    so no timer thread), a small part of a session's cost. Sessions are 32 operations
    long (198 before): pull requests without expiry pile up and every delivery and
    consumer info walks them, so an operation costs more the longer the session runs;
    under atheris a 198-operation session took about 11 ms, one of 32 under 2 ms. The
    one finding so far needed 16 operations."""
    now = [1_800_000_000 * 1_000_000_000]
    js = jetstream.open(clock=lambda: now[0])
    js.add_stream(name="S", subjects=["s.*"])
    js.add_consumer("S", durable_name="C", ack_policy="explicit" if data[:1] != b"a" else "all",
                    ack_wait=1_000_000_000, max_deliver=3 if data[1:2] == b"m" else -1)
    inbox = js.bus.subscribe("_fz", lambda msg: delivered.append(msg))
    delivered: list = []
    payloads = (b"+ACK", b"-NAK", b'-NAK {"delay": 500000000}', b"+WPI", b"+TERM why",
                b"+NXT 2", b"", b"-NAK 2s")
    router = js.router()
    for byte in data[2:2 + SESSION_OPS]:
        op = byte & 7
        if op == 0:
            js.publish(f"s.{byte >> 3 & 3}", b"m")
        elif op == 1:
            router.dispatch("$JS.API.CONSUMER.MSG.NEXT.S.C", b"%d" % (1 + (byte >> 3 & 3)),
                            None, lambda hdr, body: None, "_fz")
        elif op in (2, 3, 4) and delivered and delivered[(byte >> 3) % len(delivered)].reply:
            js.request(delivered[(byte >> 3) % len(delivered)].reply, payloads[(byte >> 3) & 7])
        elif op == 5:
            now[0] += (byte >> 3) * 100_000_000
            js.tick()
        elif op == 6:
            try:
                js.delete_msg("S", 1 + (byte >> 3) % 8)
            except ApiError:
                continue        # not there (any more): nothing changed
        else:
            continue            # nothing to do, nothing changed
        info = js.consumer_info("S", "C")
        assert info.ack_floor.stream_seq <= info.delivered.stream_seq
        assert info.ack_floor.consumer_seq <= info.delivered.consumer_seq
        # pending messages lie between the two stream sequences; not between the consumer
        # sequences: a redelivery takes a new one, and an AckAll of a redelivered message
        # moves the floor's consumer sequence to it with later messages still pending
        # (nats-server reports the same, tests/test_server_ackall_redelivered.py)
        assert 0 <= info.num_ack_pending <= info.delivered.stream_seq - info.ack_floor.stream_seq
        assert info.num_pending >= 0
    inbox.unsubscribe()
    js.close()


# the wire API: the first byte picks the subject's start, the rest up to a NUL is appended
# to it (the tokens), then the header block up to the next NUL, then the body
_API_SUBJECTS = (
    "", "$JS.API.INFO", "$JS.API.STREAM.CREATE.", "$JS.API.STREAM.UPDATE.",
    "$JS.API.STREAM.INFO.", "$JS.API.STREAM.DELETE.", "$JS.API.STREAM.PURGE.",
    "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST", "$JS.API.STREAM.MSG.GET.",
    "$JS.API.STREAM.MSG.DELETE.", "$JS.API.CONSUMER.CREATE.", "$JS.API.CONSUMER.DURABLE.CREATE.",
    "$JS.API.CONSUMER.INFO.", "$JS.API.CONSUMER.DELETE.", "$JS.API.CONSUMER.NAMES.",
    "$JS.API.CONSUMER.LIST.", "$JS.API.CONSUMER.MSG.NEXT.", "$JS.API.CONSUMER.PAUSE.",
    "$JS.API.CONSUMER.RESET.", "$JS.API.CONSUMER.UNPIN.", "$JS.API.DIRECT.GET.",
    "$JS.API.DIRECT.GET", "$JS.API.STREAM.SNAPSHOT.", "$JS.API.STREAM.RESTORE.",
    "$JS.API.ACCOUNT.PURGE.", "$JS.API.STREAM.PEER.REMOVE.", "$JS.API.STREAM.LEADER.STEPDOWN.",
    "$JS.API.META.LEADER.STEPDOWN", "$JS.ACK.S.C.", "$JS.FC.", "$JS.SNAPSHOT.", "s.",
    "$JS.API.", "$JS.API.STREAM.", "$JS.API.CONSUMER.",
)
_NO_JSON = ("$JS.API.DIRECT.GET", "$JS.API.CONSUMER.MSG.NEXT.", "$JS.SNAPSHOT.", "$JS.ACK.",
            "$JS.FC.")


def _api_js():
    js = jetstream.open(clock=lambda: 1_800_000_000_000_000_000, timers=False)
    js.add_stream(name="S", subjects=["s.>"], allow_direct=True)
    js.publish("s.1", b"one")
    js.publish("s.2", b"two", headers={"H": "v"})
    js.add_consumer("S", durable_name="C", ack_policy="explicit")
    return js


def api_request(data: bytes) -> None:
    """A request into a live JetStream (a stream S on s.> with two messages and a durable
    consumer C): an arbitrary subject, header block and body. Every $JS.API answer is a
    JSON object with a type (direct gets and pull requests answer with messages or a
    status header instead), a publish answers a PubAck or its error; nothing else is
    raised. A second request shows the JetStream still answers."""
    head = _API_SUBJECTS[data[0] % len(_API_SUBJECTS)] if data else ""
    subject, _, rest = data[1:].partition(b"\0")
    hdr, _, body = rest.partition(b"\0")
    subject = head + subject.decode("utf-8", "surrogateescape")
    js = _api_js()
    try:
        try:
            answers = js.request_msgs(subject, body, hdr or None)
        except ApiError:
            return      # the documented refusal of an unusable subject
        for msg in answers:
            if subject.startswith(_NO_JSON):
                assert msg.hdr is None or headers.parse(msg.hdr) is not None
                continue
            answer = json.loads(msg.data)
            assert isinstance(answer, dict), answer
            if subject.startswith("$JS.API."):
                assert isinstance(answer.get("type"), str), answer
            else:
                assert "error" in answer or "seq" in answer, answer
        info = json.loads(js.request("$JS.API.STREAM.INFO.S"))
        assert info["type"] == "io.nats.jetstream.api.v1.stream_info_response"
    finally:
        js.close()
