"""Publishes in a row: the PUBs one read brings on subjects outside ``$JS.`` are handled
as one run (routed, stored, answered under one hold of JetStream's lock). Everything must
come out as if they had been handled one by one, in the order sent: subscribers get them,
streams store them, no-responders answers, and an ack or a SUB between them keeps its
place."""

from __future__ import annotations

import json

import pytest

import jsstore
from inprocess import Conn, frames, messages
from jsstore.server import Server


def pub(subject: str, body: bytes, reply: str | None = "_INBOX.t.p") -> bytes:
    if reply is None:
        return b"PUB %s %d\r\n%s\r\n" % (subject.encode(), len(body), body)
    return b"PUB %s %s %d\r\n%s\r\n" % (subject.encode(), reply.encode(), len(body), body)


@pytest.fixture
def js(tmp_path):
    js = jsstore.open(tmp_path)
    yield js
    js.close()


@pytest.fixture
def server(js):
    return Server(js, host="127.0.0.1", port=-1)


def answers(data: bytes, sid: str = "1") -> list[dict]:
    return [json.loads(body) for _, s, _, body in frames(data) if s == sid]


def test_a_run_is_stored_answered_and_delivered_in_order(js, server):
    js.add_stream(name="S", subjects=["s.*"])
    conn, watcher = Conn(server, 1), Conn(server, 2)
    watcher.feed(b"SUB s.* 5\r\n")
    conn.feed(b"".join(pub("s.a", b"%d" % i, f"_INBOX.t.{i}") for i in range(50)))
    out = conn.read()
    assert [(f[0], json.loads(f[3])["seq"]) for f in frames(out)] == [
        (f"_INBOX.t.{i}", i + 1) for i in range(50)]
    seen = [f for f in frames(watcher.read()) if f[1] == "5"]   # (it has _INBOX.t.* too)
    assert [(f[1], f[2], f[3]) for f in seen] == [
        ("5", f"_INBOX.t.{i}", b"%d" % i) for i in range(50)]
    assert [js.get_msg("S", i + 1).data for i in range(50)] == [b"%d" % i for i in range(50)]


def test_errors_and_no_responders_inside_a_run(js, server):
    js.add_stream(name="S", subjects=["s.*"], max_msg_size=4)
    conn = Conn(server)
    conn.client.no_responders = True
    conn.feed(pub("s.a", b"ok", "_INBOX.t.1") + pub("s.a", b"too long", "_INBOX.t.2")
              + pub("nobody.here", b"x", "_INBOX.t.3") + pub("s.b", b"ok", "_INBOX.t.4")
              + pub("s.c", b"no reply", None))
    got = frames(conn.read())
    assert [f[0] for f in got] == ["_INBOX.t.1", "_INBOX.t.2", "_INBOX.t.3", "_INBOX.t.4"]
    assert json.loads(got[0][3])["seq"] == 1
    assert json.loads(got[1][3])["error"]["err_code"] == 10054      # message size exceeds
    assert got[2][3].startswith(b"NATS/1.0 503")
    assert json.loads(got[3][3])["seq"] == 2
    assert js.stream_info("S").state.messages == 2                  # the too-long one: no


def test_a_sub_inside_a_run_sees_only_what_comes_after_it(js, server):
    js.add_stream(name="S", subjects=["s.*"])
    conn = Conn(server)
    conn.feed(pub("s.a", b"before") + b"SUB s.a 9\r\n" + pub("s.a", b"after"))
    seen = [f[3] for f in frames(conn.read()) if f[1] == "9"]
    assert seen == [b"after"]
    assert js.stream_info("S").state.messages == 2


@pytest.mark.parametrize("ack_first", [True, False])
def test_an_ack_between_publishes_keeps_its_place(js, server, ack_first):
    """A work queue stream holding at most 2 messages, full, with discard new: a publish
    fails until an ack takes a message out, so the order of the ack and the publish in
    one read decides whether the publish is stored."""
    js.add_stream(name="WQ", subjects=["wq.*"], retention="workqueue", max_msgs=2,
                  discard="new")
    js.publish("wq.a", b"1")
    js.publish("wq.a", b"2")
    js.add_consumer("WQ", durable_name="C", ack_policy="explicit")
    conn = Conn(server)
    body = b'{"batch": 1}'
    conn.feed(b"PUB $JS.API.CONSUMER.MSG.NEXT.WQ.C _INBOX.t.r %d\r\n%s\r\n" % (len(body), body))
    [(_, ack_subject)] = messages(conn.read())
    ack = b"PUB %s 0\r\n\r\n" % ack_subject.encode()
    publish = pub("wq.a", b"3")
    conn.feed(ack + publish if ack_first else publish + ack)
    [answer] = answers(conn.read())
    if ack_first:
        assert answer["seq"] == 3
    else:
        assert answer["error"]["err_code"] == 10077          # maximum messages exceeded
    assert js.stream_info("WQ").state.messages == (2 if ack_first else 1)


def test_a_client_with_permissions_is_checked_per_publish(js, tmp_path):
    js.add_stream(name="S", subjects=["s.*"])
    server = Server(js, host="127.0.0.1", port=-1, users=[
        {"user": "u", "password": "p", "permissions": {"publish": {"allow": ["s.a"]}}}])
    conn = Conn.__new__(Conn)
    from inprocess import Transport
    from jsstore.server.client import Client
    conn.client, conn.transport = Client(server, 1), Transport()
    conn.client.connection_made(conn.transport)
    conn.read()
    conn.feed(b'CONNECT {"verbose":false,"pedantic":false,"user":"u","pass":"p"}\r\nSUB _INBOX.t.* 1\r\n'
              + pub("s.a", b"yes") + pub("s.b", b"no") + pub("s.a", b"yes"))
    out = conn.read()
    assert b"Permissions Violation for Publish to \"s.b\"" in out
    assert [a["seq"] for a in answers(out)] == [1, 2]


def test_answers_after_a_publish_that_releases_a_pull_batch(js, server):
    """The client waits on a pull request and publishes a run: the first publish releases
    the batch, which is written at once; every PubAck of the run must still come."""
    js.add_stream(name="S", subjects=["s.*"])
    js.add_consumer("S", durable_name="C", ack_policy="explicit")
    conn = Conn(server)
    body = b'{"batch": 1, "expires": 60000000000}'
    conn.feed(b"PUB $JS.API.CONSUMER.MSG.NEXT.S.C _INBOX.t.r %d\r\n%s\r\n" % (len(body), body))
    assert conn.read() == b""
    conn.feed(b"".join(pub("s.a", b"%d" % i, f"_INBOX.t.{i}") for i in range(5)))
    got = frames(conn.read())
    assert [f[0] for f in got if f[2] is None] == [f"_INBOX.t.{i}" for i in range(5)]
    assert [f[3] for f in got if f[2] is not None] == [b"0"]     # the batch of 1
