"""The server's short ways against the plain one, on random programs: plain acks taken by
the parser and applied after a read's answers (and pull requests served ahead of them),
publishes delivered and stored by the core's plans, the one-step publish. The same reads,
from two connections, go to two servers -- one as it is, one with every short way turned
off, so each PUB is handled alone and in order by Python -- and they must answer the same,
read for read, and end in the same stream and consumer state.

Stored timestamps differ between the two (wall clocks), so acks are made from each
side's own deliveries and timestamps are taken out of what is compared."""

from __future__ import annotations

import json
import re

from hypothesis import given, reject, settings
from hypothesis import strategies as st

import jsstore
from inprocess import Conn, frames
from jsstore.server import Server
from jsstore.server import accounts as server_module

SUBJECTS = ["s.a", "s.b", "s.c"]
NEXT = "$JS.API.CONSUMER.MSG.NEXT.S.C"
TS = re.compile(r"^(\$JS\.ACK\.S\.C\.\d+\.\d+\.\d+\.)\d+(\.\d+)$")

OPS = st.one_of(
    st.tuples(st.just("pub"), st.sampled_from(SUBJECTS), st.booleans(),
              st.binary(max_size=40)),
    st.tuples(st.just("msgid"), st.sampled_from(SUBJECTS), st.sampled_from(["m1", "m2"])),
    st.tuples(st.just("pull"), st.integers(1, 6), st.booleans(),
              st.sampled_from([0, 0, 30])),
    st.tuples(st.just("ack"), st.integers(0, 30)),
    st.tuples(st.just("ackr"), st.integers(0, 30)),
    st.tuples(st.just("nak"), st.integers(0, 30)),
    st.tuples(st.just("term"), st.integers(0, 30)),
    st.tuples(st.just("unsub"),),
    st.tuples(st.just("ping"),),
    st.tuples(st.just("sub"), st.sampled_from(["s.*", "s.a", "$JS.ACK.>"])),
    st.tuples(st.just("info"),),
)
PROGRAMS = st.lists(st.tuples(st.integers(0, 1), st.lists(OPS, min_size=1, max_size=8)),
                    min_size=1, max_size=8)        # (which connection, what it sends)
CONSUMERS = st.fixed_dictionaries({"ack_policy": st.sampled_from(["explicit", "all"])},
                                  optional={"max_ack_pending": st.sampled_from([1, 3, 8])})
STREAMS = st.fixed_dictionaries({}, optional={
    "max_msgs": st.sampled_from([2, 5]), "discard": st.sampled_from(["old", "new"]),
    "retention": st.sampled_from(["workqueue", "interest"]), "max_msg_size": st.just(20)})


class Side:
    """One server with two connections, and the ack subjects it delivered so far."""

    def __init__(self, stream: dict, consumer: dict, plain: bool):
        self.js = jsstore.open(None, timers=False)   # no tick may act on one side only
        self.js.add_stream(name="S", subjects=["s.*"], **stream)
        self.js.add_consumer("S", durable_name="C", **consumer)
        if plain:
            self.js._streams["S"].publish_plain = lambda subject, payload: None
        server = Server(self.js, host="127.0.0.1", port=-1)
        self.conns = [Conn(server, 1, "_INBOX.a"), Conn(server, 2, "_INBOX.b")]
        if plain:
            for conn in self.conns:
                client = conn.client
                client._plain_acks = lambda: None           # (a read would set them)
                client._core_publishes = lambda: None       # (a CONNECT would set it)
                client.parser.interest = None
                client.parser.take_acks = False
        self.delivered: list[str] = []
        self.sids = 10

    def encode(self, op, inbox: bytes) -> bytes:
        kind = op[0]
        if kind == "pub":
            _, subject, reply, body = op
            if reply:
                return b"PUB %s %s.p %d\r\n%s\r\n" % (subject.encode(), inbox, len(body), body)
            return b"PUB %s %d\r\n%s\r\n" % (subject.encode(), len(body), body)
        if kind == "msgid":
            hdr = b"NATS/1.0\r\nNats-Msg-Id: %s\r\n\r\n" % op[2].encode()
            return b"HPUB %s %s.h %d %d\r\n%sx\r\n" % (op[1].encode(), inbox, len(hdr),
                                                         len(hdr) + 1, hdr)
        if kind == "pull":
            request = {"batch": op[1], "no_wait": op[2]}
            if op[3]:
                request["max_bytes"] = op[3]
            body = json.dumps(request).encode()
            return b"PUB %s %s.r %d\r\n%s\r\n" % (NEXT.encode(), inbox, len(body), body)
        if kind in ("ack", "ackr", "nak", "term"):
            if not self.delivered:
                return b""
            subject = self.delivered[op[1] % len(self.delivered)].encode()
            if kind == "ack":
                return b"PUB %s 0\r\n\r\n" % subject
            if kind == "ackr":
                return b"PUB %s %s.a 0\r\n\r\n" % (subject, inbox)
            if kind == "term":
                return b"PUB %s 5\r\n+TERM\r\n" % subject
            return b"PUB %s 4\r\n-NAK\r\n" % subject
        if kind == "sub":
            self.sids += 1
            return b"SUB %s %d\r\n" % (op[1].encode(), self.sids)
        if kind == "unsub":
            return b"UNSUB %d\r\n" % self.sids if self.sids > 10 else b""
        if kind == "ping":
            return b"PING\r\n"
        return b"PUB $JS.API.CONSUMER.INFO.S.C %s.i 0\r\n\r\n" % inbox

    def read(self, who: int, ops) -> dict:
        """What connection `who` sends in one read; what each connection got, by
        subscription."""
        inbox = b"_INBOX.a" if who == 0 else b"_INBOX.b"
        self.conns[who].feed(b"".join(self.encode(op, inbox) for op in ops))
        got = []
        for index, conn in enumerate(self.conns):
            for subject, sid, reply, body in frames(conn.read()):
                if reply is not None and reply.startswith("$JS.ACK."):
                    self.delivered.append(reply)
                    reply = TS.sub(r"\1<ts>\2", reply)
                subject = TS.sub(r"\1<ts>\2", subject)       # an ack seen by a watcher
                if subject.endswith(".i"):
                    info = json.loads(body)
                    body = json.dumps({k: info[k] for k in (
                        "num_ack_pending", "num_redelivered", "num_waiting", "num_pending")})
                got.append(((index, sid), subject, reply, body))
        # per subscription: NATS orders what one publisher sends, not what different ones
        # send (an ack echoed to a watcher and the delivery that ack releases may swap)
        return {key: [g for g in got if g[0] == key] for key in sorted({g[0] for g in got})}

    def state(self):
        info = self.js.consumer_info("S", "C")
        s = self.js.stream_info("S").state
        return (info.num_ack_pending, info.num_redelivered, info.num_pending,
                info.delivered.stream_seq, info.ack_floor.stream_seq,
                s.messages, s.first_seq, s.last_seq)


@settings(max_examples=600, deadline=None)
@given(STREAMS, CONSUMERS, PROGRAMS)
def test_the_short_ways_answer_as_the_plain_one(stream, consumer, program):
    if stream.get("retention") == "workqueue" and consumer["ack_policy"] != "explicit":
        reject()                        # nats-server refuses that consumer
    quick, plain = Side(stream, consumer, False), Side(stream, consumer, True)
    real_is_plain_ack = server_module.is_plain_ack
    try:
        for index, (who, ops) in enumerate(program):
            got = quick.read(who, ops)
            # the plain side: no ack is held back either
            server_module.is_plain_ack = lambda *args: False
            try:
                want = plain.read(who, ops)
            finally:
                server_module.is_plain_ack = real_is_plain_ack
            assert got == want, f"read {index} by connection {who}: {ops}"
        assert quick.state() == plain.state()
    finally:
        quick.js.close()
        plain.js.close()
