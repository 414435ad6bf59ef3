"""A consumer's run of first deliveries rendered by the core straight into the receiving
connections' buffers (jsstore._core.delivery.runs.take_run through the account's plan)
against the same run made into bus messages and routed by Python (Bus.run_target giving
None): every connection must be written the same bytes, in the same order, and every
consumer must end in the same state.

Driven in process on a hand clock: push consumers to plain subscribers (one asking for
headers, one not), a deliver group of two (the queue member picked by the account's one
random sequence, seeded the same both times), a pull consumer's requests, messages with
and without headers, acks, messages published while consumers wait, and a subscriber that
goes away half way."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jsstore
from clocks import Clock
from inprocess import Conn, messages
from jsstore.server import Server
from jsstore.wire.bus import Bus

NEXT = "$JS.API.CONSUMER.MSG.NEXT.S.P"

OPS = st.lists(st.tuples(st.sampled_from(["pub", "pubh", "pull", "ack", "read", "leave"]),
                         st.integers(1, 40)), min_size=1, max_size=25)


def scenario(ops, rendered: bool, monkeypatch) -> tuple[list[bytes], list]:
    if not rendered:
        monkeypatch.setattr(Bus, "run_target", lambda self, to: None)
    js = jsstore.open(clock=Clock())
    js.add_stream(name="S", subjects=["s.*"])
    server = Server(js, host="127.0.0.1", port=-1)
    server.global_account.interest.seed(7)
    plain, bare, g1, g2, puller = (Conn(server, cid, f"_INBOX.c{cid}") for cid in range(1, 6))
    bare.feed(b'CONNECT {"verbose":false,"pedantic":false,"headers":false}\r\n')
    plain.feed(b"SUB d.all 11\r\n")
    bare.feed(b"SUB d.all 12\r\n")
    g1.feed(b"SUB d.group g 21\r\n")
    g2.feed(b"SUB d.group g 22\r\n")
    js.add_consumer("S", durable_name="ALL", deliver_subject="d.all", ack_policy="explicit",
                    max_ack_pending=50)
    js.add_consumer("S", durable_name="GRP", deliver_subject="d.group", deliver_group="g",
                    ack_policy="explicit", filter_subject="s.1")
    js.add_consumer("S", durable_name="P", ack_policy="explicit")
    conns = [plain, bare, g1, g2, puller]
    out: list[list[bytes]] = [[] for _ in conns]
    gone: set[int] = set()

    def collect():
        for i, conn in enumerate(conns):
            if i not in gone:
                out[i].append(conn.read())
    states = []
    for op, arg in ops:
        if op in ("pub", "pubh"):
            for i in range(arg):
                headers = {"K": str(i)} if op == "pubh" else None
                js.publish(f"s.{i % 3}", b"m%d" % i, headers=headers)
        elif op == "pull":
            puller.feed(puller.request(NEXT, json.dumps({"batch": arg}).encode(),
                                       "_INBOX.c5.r"))
        elif op == "ack":
            # every delivery to the plain subscriber and the puller so far, acked in one read
            for i in (0, 4):
                if i not in gone:
                    replies = [r for _, r in messages(b"".join(out[i]))]
                    conns[i].feed(b"".join(b"PUB %s 0\r\n\r\n" % r.encode()
                                           for r in replies[:arg]))
        elif op == "leave" and 1 not in gone:
            bare.feed(b"UNSUB 12\r\n")
            gone.add(1)
        collect()
        states.append([(c.delivered, c.ack_floor, c.num_ack_pending, c.num_pending)
                       for c in js.consumers_info("S")])
    js.close()
    return [b"".join(chunks) for chunks in out], states


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_rendered_runs_write_what_routed_bus_messages_write(ops, monkeypatch):
    with monkeypatch.context() as patch:
        rendered = scenario(ops, True, patch)
    with monkeypatch.context() as patch:
        routed = scenario(ops, False, patch)
    assert rendered == routed


def test_a_run_is_rendered_by_the_core(monkeypatch):
    """The rendered way is the one taken: no bus message is made for the run."""
    made = []
    real = Bus.publish_batch

    def counting(self, msgs, at_once=False):
        made.append(len(msgs))
        return real(self, msgs, at_once)
    monkeypatch.setattr(Bus, "publish_batch", counting)
    written, _ = scenario([("pub", 20), ("pull", 10)], True, monkeypatch)
    assert made == []
    assert len(messages(written[0])) == 20 and len(messages(written[4])) == 10


@pytest.mark.parametrize("seed", range(3))
def test_queue_members_are_picked_alike(seed, monkeypatch):
    ops = [("pub", random.Random(seed).randrange(5, 40))]
    with monkeypatch.context() as patch:
        rendered = scenario(ops, True, patch)
    with monkeypatch.context() as patch:
        routed = scenario(ops, False, patch)
    assert rendered == routed and rendered[0][2] and rendered[0][3]


def test_a_rendered_run_of_names_beyond_ascii(monkeypatch):
    """The rendered run's ack subjects carry a stream and consumer name beyond ASCII, in
    UTF-8, and the acks sent back on them are applied."""
    js = jsstore.open(clock=Clock())
    js.add_stream(name="Straße", subjects=["s.*"])
    server = Server(js, host="127.0.0.1", port=-1)
    conn = Conn(server, 1, "_INBOX.c1")
    js.add_consumer("Straße", durable_name="Zoë", ack_policy="explicit")
    for _ in range(3):
        js.publish("s.x", b"m")
    conn.feed(conn.request("$JS.API.CONSUMER.MSG.NEXT.Straße.Zoë", b'{"batch":3}',
                           "_INBOX.c1.r"))
    delivered = messages(conn.read())
    assert [reply.rsplit(".", 5)[0] for _, reply in delivered] == ["$JS.ACK.Straße.Zoë"] * 3
    conn.feed(b"".join(b"PUB %s 0\r\n\r\n" % reply.encode() for _, reply in delivered))
    assert js.consumer_info("Straße", "Zoë").num_ack_pending == 0
    js.close()
