"""Publishes into streams the core stores by itself (a plan with a StreamTarget:
jsstore._core.delivery.plans) against Python's way: the same reads, split the same way, go to
two servers -- one as it is, one whose clients' publishes never take the core's plans --
and every connection must get the same frames in the same order, and the streams,
consumers and counters must end the same.  The programs mix what the core takes (plain
PUBs into a stream that only stores) with everything it must leave to Python: headers,
streams with features, subjects someone subscribes to, subjects no stream captures,
replies nobody or somebody else takes, limits that refuse, pull requests waiting for the
next message, streams created and deleted on the way.

Then: the core really takes them, and a file-storage stream's PubAcks are what nats-server
sends, byte for byte."""

from __future__ import annotations

import json
import re
import shutil
import socket
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jsstore
from inprocess import Conn, frames
from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server
from jsstore.server import Server
from jsstore.store.config import StoreOptions
from jsstore.store.filestore import FileStore
from jsstore.stream.stream import Stream

TS = re.compile(r"^(\$JS\.ACK\.P\.C\.\d+\.\d+\.\d+\.)\d+(\.\d+)$")
SUBJECTS = ["p.a", "p.b", "p.c", "f.a", "n.x", "q.a"]
REPLIES = ["own", "own", "own", "none", "other", "stranger", "deep"]
HEADERS = [b"K: v", b"Nats-Msg-Id: m1", b"Nats-Msg-Id: m2", b"Nats-Expected-Last-Msg-Id: m1",
           b"Nats-Expected-Last-Sequence: 3"]

OPS = st.one_of(
    st.tuples(st.just("pub"), st.sampled_from(SUBJECTS), st.sampled_from(REPLIES),
              st.binary(max_size=30)),
    st.tuples(st.just("pubs"), st.sampled_from(SUBJECTS), st.integers(2, 40)),
    st.tuples(st.just("hpub"), st.sampled_from(SUBJECTS), st.sampled_from(HEADERS)),
    st.tuples(st.just("sub"), st.sampled_from(["p.a", "p.*", "_INBOX.b.*", "f.a", "_INBOX.a.7",
                                               "_INBOX.>", "_INBOX.a.* q"])),
    st.tuples(st.just("unsub"),),
    st.tuples(st.just("pull"), st.integers(1, 4)),
    st.tuples(st.just("ack"), st.integers(0, 50)),
    st.tuples(st.just("addq"),),
    st.tuples(st.just("delq"),),
    st.tuples(st.just("ping"),),
)
PROGRAMS = st.lists(st.tuples(st.integers(0, 1), st.lists(OPS, min_size=1, max_size=6),
                              st.lists(st.integers(1, 400), max_size=4)),
                    min_size=1, max_size=8)     # (connection, what it sends, read cuts)
PLAIN = st.fixed_dictionaries({}, optional={
    "max_msgs": st.sampled_from([3, 20]), "max_bytes": st.sampled_from([300, 3000]),
    "discard": st.sampled_from(["old", "new"]), "max_msgs_per_subject": st.sampled_from([1, 4]),
    "discard_new_per_subject": st.booleans(), "max_msg_size": st.sampled_from([10, 100]),
    "max_age": st.just(3_600_000_000_000), "storage": st.sampled_from(["file", "memory"])})
FEATURED = st.sampled_from([
    {"subject_transform": {"src": "f.*", "dest": "g.{{wildcard(1)}}"}},
    {"retention": "interest"}, {"allow_msg_counter": True}, {"sealed": False, "max_msgs": 2},
    {"republish": {"src": "f.>", "dest": "rp.>"}}])


class Side:
    """One server (its clients' publishes through the core's plans, or never), two
    connections."""

    def __init__(self, plain: dict, featured: dict, domain: str | None, fast: bool):
        self.dir = tempfile.mkdtemp(prefix="storeplans-")
        self.js = jsstore.open(self.dir, timers=False, domain=domain)
        self.js.add_stream(name="P", subjects=["p.*"], **plain)
        self.js.add_stream(name="F", subjects=["f.*"], **featured)
        self.js.add_consumer("P", durable_name="C", ack_policy="explicit")
        self.server = Server(self.js, host="127.0.0.1", port=-1)
        self.conns = [Conn(self.server, 1, "_INBOX.a"), Conn(self.server, 2, "_INBOX.b")]
        if not fast:
            for conn in self.conns:
                client = conn.client
                client._core_publishes = lambda: None       # (a CONNECT would set it)
                client.parser.interest = None
        self.delivered: list[str] = []
        self.sids = 10
        self.pubs = 0
        self.api_bytes = [0, 0]     # bytes of API answers (their lengths vary with time)

    def seed(self, value: int) -> None:
        """Start the picks of queue members over from `value`."""
        self.server.global_account.interest.seed(value)

    def close(self) -> None:
        self.js.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def encode(self, op, who: int) -> bytes:
        inbox = b"_INBOX.a" if who == 0 else b"_INBOX.b"
        kind = op[0]
        if kind in ("pub", "pubs"):
            if kind == "pub":
                _, subject, reply, body = op
                bodies = [body]
            else:
                _, subject, count = op
                reply, bodies = "own", [b"m%d" % i for i in range(count)]
            out = []
            for body in bodies:
                self.pubs += 1
                target = {"own": inbox + b".%d" % (self.pubs % 10), "none": None,
                          "other": (b"_INBOX.b" if who == 0 else b"_INBOX.a") + b".x",
                          "stranger": b"_NOBODY.x", "deep": inbox + b".x.y"}[reply]
                if target is None:
                    out.append(b"PUB %s %d\r\n%s\r\n" % (subject.encode(), len(body), body))
                else:
                    out.append(b"PUB %s %s %d\r\n%s\r\n" % (subject.encode(), target,
                                                          len(body), body))
            return b"".join(out)
        if kind == "hpub":
            hdr = b"NATS/1.0\r\n%s\r\n\r\n" % op[2]
            return b"HPUB %s %s.h %d %d\r\n%sx\r\n" % (op[1].encode(), inbox, len(hdr),
                                                         len(hdr) + 1, hdr)
        if kind == "sub":
            self.sids += 1
            return b"SUB %s %d\r\n" % (op[1].encode(), self.sids)
        if kind == "unsub":
            return b"UNSUB %d\r\n" % self.sids if self.sids > 10 else b""
        if kind == "pull":
            body = json.dumps({"batch": op[1], "expires": 60_000_000_000}).encode()
            return b"PUB $JS.API.CONSUMER.MSG.NEXT.P.C %s.r %d\r\n%s\r\n" % (
                inbox, len(body), body)
        if kind == "ack":
            if not self.delivered:
                return b""
            return b"PUB %s 0\r\n\r\n" % self.delivered[op[1] % len(self.delivered)].encode()
        if kind == "addq":
            body = b'{"name":"Q","subjects":["q.*"]}'
            return b"PUB $JS.API.STREAM.CREATE.Q %s.q %d\r\n%s\r\n" % (inbox, len(body), body)
        if kind == "delq":
            return b"PUB $JS.API.STREAM.DELETE.Q %s.q 0\r\n\r\n" % inbox
        return b"PING\r\n"

    def read(self, who: int, data: bytes, cuts: list[int]) -> list:
        """Feed `data` to connection `who` in pieces cut at `cuts`; what each connection
        got, in order."""
        points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
        for start, end in zip(points, points[1:]):
            self.conns[who].feed(data[start:end])
        got = []
        for index, conn in enumerate(self.conns):
            for subject, sid, reply, body in frames(conn.read()):
                if reply is not None and reply.startswith("$JS.ACK."):
                    self.delivered.append(reply)
                    reply = TS.sub(r"\1<ts>\2", reply)
                if subject.endswith(".q"):      # an API answer: its created time differs
                    self.api_bytes[index] += len(body)
                    body = json.loads(body).get("error", {}).get("err_code", 0)
                got.append((index, sid, subject, reply, body))
        return got

    def state(self):
        out = []
        for name in ("P", "F"):
            info = self.js.stream_info(name)
            s = info.state
            msgs = []
            for seq in range(s.first_seq, s.last_seq + 1) if s.messages else ():
                try:
                    m = self.js.get_msg(name, seq)
                except Exception:
                    continue
                msgs.append((m.seq, m.subject, m.data, m.headers))
            out.append((s.messages, s.bytes, s.first_seq, s.last_seq, s.num_subjects, msgs))
        c = self.js.consumer_info("P", "C")
        out.append((c.num_ack_pending, c.num_pending, c.num_waiting, c.delivered.stream_seq))
        for conn, api_bytes in zip(self.conns, self.api_bytes):
            client = conn.client
            out.append((client.in_msgs, client.in_bytes, client.out_msgs,
                        client.out_bytes - api_bytes,
                        sorted((sid, sub.delivered) for sid, sub in client.subs.items())))
        totals = self.server.totals
        stats = {**self.server.stats, "in_msgs": totals.in_msgs, "in_bytes": totals.in_bytes,
                 "out_msgs": totals.out_msgs,
                 "out_bytes": totals.out_bytes - sum(self.api_bytes)}
        out.append(sorted(stats.items()))
        return out


@settings(max_examples=300, deadline=None)
@given(PLAIN, FEATURED, st.sampled_from([None, None, "D"]), PROGRAMS)
def test_plain_runs_answer_as_the_python_path(plain, featured, domain, program):
    if plain.get("discard") != "new" or "max_msgs_per_subject" not in plain:
        plain.pop("discard_new_per_subject", None)      # (nats-server refuses it then)
    fast, slow = Side(plain, featured, domain, True), Side(plain, featured, domain, False)
    try:
        for index, (who, ops, cuts) in enumerate(program):
            fast.seed(index)      # (a queue group's member is picked at random)
            got = fast.read(who, b"".join(fast.encode(op, who) for op in ops), cuts)
            slow.seed(index)
            want = slow.read(who, b"".join(slow.encode(op, who) for op in ops), cuts)
            assert got == want, f"read {index} by connection {who}: {ops}"
        assert fast.state() == slow.state()
    finally:
        fast.close()
        slow.close()


@pytest.mark.parametrize("setup", [
    [(0, [("sub", "_INBOX.a.7")])],                 # a literal subscription under the inbox
    [(0, [("sub", "_INBOX.>")])],                   # a wildcard that takes inbox subjects
    [(1, [("sub", "_INBOX.>")])],                   # ... of another client
    [(0, [("sub", "_INBOX.a.* q")])],               # a queue member on the inbox
    [(1, [("sub", "p.*")])],                        # interest in the published subject
    [(0, [("pull", 3)])],                           # a pull request waiting
    [(0, [("addq",)]), (0, [("delq",)])],           # a stream created and deleted
])
def test_reply_and_interest_corners(setup):
    """Each setting, then runs of plain publishes answered to the own inbox (every tenth
    to _INBOX.a.7), a deep reply and another client's inbox: as the Python path."""
    program = setup + [(0, [("pubs", "p.a", 25)]), (0, [("pub", "p.b", "deep", b"x")]),
                       (0, [("pub", "p.c", "other", b"y"), ("pubs", "q.a", 3)]),
                       (1, [("ack", 0), ("pubs", "p.b", 12)]), (0, [("pubs", "p.c", 12)])]
    fast, slow = Side({}, {}, None, True), Side({}, {}, None, False)
    try:
        for index, (who, ops) in enumerate(program):
            fast.seed(index)
            got = fast.read(who, b"".join(fast.encode(op, who) for op in ops), [])
            slow.seed(index)
            want = slow.read(who, b"".join(slow.encode(op, who) for op in ops), [])
            assert got == want, f"read {index} by connection {who}: {ops}"
        assert fast.state() == slow.state()
    finally:
        fast.close()
        slow.close()


# -- the core takes the run --------------------------------------------------------------------
@pytest.fixture
def server(tmp_path):
    js = jsstore.open(tmp_path, timers=False)
    js.add_stream(name="P", subjects=["p.*"])
    yield Server(js, host="127.0.0.1", port=-1)
    js.close()


def test_a_run_of_plain_pubs_never_reaches_python(server, monkeypatch):
    """With the Python publish paths broken, a run into a plain stream is still stored
    and answered (by the core); a publish the core declines (headers) is not."""
    def broken(*args, **kwargs):
        raise AssertionError("the Python path")
    monkeypatch.setattr(Stream, "publish_plain", broken)
    monkeypatch.setattr(Stream, "publish", broken)
    conn = Conn(server)
    conn.feed(b"".join(b"PUB p.%d _INBOX.t.%d 2\r\nhi\r\n" % (i % 7, i) for i in range(300)))
    got = frames(conn.read())
    assert [(f[0], f[3]) for f in got] == [
        (f"_INBOX.t.{i}", b'{"stream":"P","seq":%d}' % (i + 1)) for i in range(300)]
    assert conn.client.in_msgs == 300 and conn.client.out_msgs == 300
    hdr = b"NATS/1.0\r\n\r\n"
    conn.feed(b"HPUB p.a _INBOX.t.h %d %d\r\n%sx\r\n" % (len(hdr), len(hdr) + 1, hdr))
    assert frames(conn.read()) == []            # the AssertionError: logged, unanswered
    assert server.js.stream_info("P").state.messages == 300


def test_a_frame_split_across_reads_is_taken_whole(server):
    conn = Conn(server)
    data = b"".join(b"PUB p.a _INBOX.t.%d 5\r\nhello\r\n" % i for i in range(20))
    for start in range(0, len(data), 7):
        conn.feed(data[start:start + 7])
    assert [json.loads(f[3])["seq"] for f in frames(conn.read())] == list(range(1, 21))
    assert [server.js.get_msg("P", i).data for i in (1, 20)] == [b"hello", b"hello"]


def test_a_subscription_on_the_subject_turns_the_run_off_and_back_on(server):
    conn, watcher = Conn(server, 1), Conn(server, 2, "_INBOX.w")
    conn.feed(b"PUB p.a _INBOX.t.1 1\r\na\r\n")
    watcher.feed(b"SUB p.a 7\r\n")
    conn.feed(b"PUB p.a _INBOX.t.2 1\r\nb\r\n")
    watcher.feed(b"UNSUB 7\r\n")
    conn.feed(b"PUB p.a _INBOX.t.3 1\r\nc\r\n")
    assert [f[3] for f in frames(watcher.read())] == [b"b"]
    assert [json.loads(f[3])["seq"] for f in frames(conn.read())] == [1, 2, 3]


def test_a_plain_run_forgets_the_last_msg_id(server):
    """After a plain publish the stream's last message has no Nats-Msg-Id: an expected
    last Msg-Id of the one before is refused."""
    conn = Conn(server)

    def hpub(reply: str, header: bytes) -> bytes:
        hdr = b"NATS/1.0\r\n%s\r\n\r\n" % header
        return b"HPUB p.a %s %d %d\r\n%sx\r\n" % (reply.encode(), len(hdr), len(hdr) + 1, hdr)
    conn.feed(hpub("_INBOX.t.1", b"Nats-Msg-Id: m1"))
    conn.feed(b"PUB p.b _INBOX.t.2 1\r\nx\r\n")
    conn.feed(hpub("_INBOX.t.3", b"Nats-Expected-Last-Msg-Id: m1"))
    answers = [json.loads(f[3]) for f in frames(conn.read())]
    assert [a.get("seq") for a in answers[:2]] == [1, 2]
    assert answers[2]["error"]["err_code"] == 10070      # wrong last msg ID


def test_a_store_that_syncs_every_write_is_left_to_python(tmp_path, monkeypatch):
    """sync "always": every store waits for its fsync (FileStore's own store_msg), which the
    core's write path does not do -- the run declines the stream."""
    synced = []
    monkeypatch.setattr(FileStore, "_group_commit", lambda self: synced.append(1))
    js = jsstore.open(tmp_path, StoreOptions(sync="always"), timers=False)
    try:
        js.add_stream(name="P", subjects=["p.*"])
        conn = Conn(Server(js, host="127.0.0.1", port=-1))
        conn.feed(b"".join(b"PUB p.a _INBOX.t.%d 1\r\nx\r\n" % i for i in range(5)))
        assert [json.loads(f[3])["seq"] for f in frames(conn.read())] == [1, 2, 3, 4, 5]
        assert len(synced) == 5
    finally:
        js.close()


# -- against nats-server ---------------------------------------------------------------------
def _acks(port: int, config: bytes, frames_out: bytes, count: int) -> bytes:
    """Create the stream, send `frames_out`, return the bytes of `count` answers."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.recv(65536)
    sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\nSUB _R.* 1\r\n'
                 b"PUB $JS.API.STREAM.CREATE.S _R.c %d\r\n%s\r\n" % (len(config), config))
    buf = b""
    while b"stream_create_response" not in buf or not buf.endswith(b"\r\n"):
        buf += sock.recv(65536)
    sock.sendall(frames_out)
    buf = b""
    while buf.count(b"MSG ") < count or not buf.endswith(b"}\r\n"):
        data = sock.recv(65536)
        assert data, "connection closed"
        buf += data
    sock.close()
    return buf


@pytest.mark.parametrize("config", [
    b'{"name":"S","subjects":["s.>"],"storage":"file"}',
    b'{"name":"S","subjects":["s.>"],"storage":"file","max_msgs":5,"discard":"new"}',
    b'{"name":"S","subjects":["s.>"],"storage":"file","max_msgs_per_subject":2,'
    b'"discard":"new","discard_new_per_subject":true}',
    b'{"name":"S","subjects":["s.>"],"storage":"file","max_msg_size":3}',
])
def test_pubacks_match_nats_server_byte_for_byte(tmp_path, config):
    require_nats_server()
    frames_out = b"".join(b"PUB s.%d _R.%d %d\r\n%s\r\n" % (i % 4, i, len(b"x" * (i % 6)),
                                                          b"x" * (i % 6)) for i in range(40))
    got = {}
    for kind, start in (("jsstore", jsstore_server), ("nats-server", nats_server)):
        with start(tmp_path / kind) as srv:
            got[kind] = _acks(srv.port, config, frames_out, 40)
    assert got["jsstore"] == got["nats-server"]


def test_the_core_stores_under_the_jetstream_lock(server):
    """The JetStream's timer thread works on the same streams under its lock: a store of
    the core's (and the listeners it tells) holds it too, and lets it go with the read."""
    js = server.js
    seen = []
    with js.lock:
        stream = js.lookup_stream_locked("P")
    stream.listeners.append(lambda *args: seen.append(js.lock._is_owned()))
    conn = Conn(server)
    conn.feed(b"".join(b"PUB p.a _INBOX.t.%d 1\r\nx\r\n" % i for i in range(3)))
    assert len(frames(conn.read())) == 3
    assert seen == [True, True, True]
    assert not js.lock._is_owned()
