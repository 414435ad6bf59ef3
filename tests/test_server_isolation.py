"""Accounts isolate, on `jsstore serve` as on nats-server (one configuration file, the
outcomes compared): what a client of one account publishes -- plain messages, stored
messages, JetStream API requests and their answers, pull requests, acks -- never reaches
another account's subscribers (not even one on ">") nor its streams, and a stream name
means a different stream in each account."""

from __future__ import annotations

import json
import time

import pytest
from rawsession import Session, differences, on_both

pytestmark = pytest.mark.natsserver

CONF = """
accounts {
  A: {users: [{user: a, password: p}], jetstream: enabled}
  B: {users: [{user: b, password: p}], jetstream: enabled}
}
"""


def _summary(answer: bytes | None):
    """What a JetStream answer says, without times and server names."""
    if answer is None:
        return None
    if not answer.startswith(b"{"):
        return answer.split(b"\r\n", 1)[0].decode()
    body = json.loads(answer)
    out = {"type": body.get("type")}
    if "error" in body:
        out["error"] = (body["error"].get("code"), body["error"].get("err_code"))
    if "config" in body:
        out["name"] = body["config"].get("name")
    if "state" in body:
        out["messages"] = body["state"].get("messages")
    for key in ("streams", "seq", "stream", "num_pending"):
        if key in body:
            out[key] = body[key]
    return out


def _outcomes(port: int) -> dict:
    out = {}
    a, b = Session(port, "a"), Session(port, "b")
    watcher_a, watcher_b = Session(port, "a"), Session(port, "b")
    watcher_a.exchange(b"SUB > 1\r\n")
    watcher_b.exchange(b"SUB > 1\r\n")

    stream = json.dumps({"name": "S", "subjects": ["s.>"]}).encode()
    consumer = json.dumps({"stream_name": "S", "config": {
        "durable_name": "C", "ack_policy": "explicit"}}).encode()
    out["a create"] = _summary(a.request("$JS.API.STREAM.CREATE.S", stream,
                                         inbox="_INBOX.a")[1])
    out["a store"] = _summary(a.request("s.1", b"one", inbox="_INBOX.a")[1])
    out["a consumer"] = _summary(a.request("$JS.API.CONSUMER.CREATE.S.C", consumer,
                                           inbox="_INBOX.a")[1])
    a.exchange(b"PUB plain.a 1\r\na\r\n")
    # B sees none of A's streams, and its own S is another stream
    out["b info"] = _summary(b.request("$JS.API.STREAM.INFO.S", inbox="_INBOX.b")[1])
    out["b names"] = _summary(b.request("$JS.API.STREAM.NAMES", inbox="_INBOX.b")[1])
    out["b pull"] = _summary(b.request("$JS.API.CONSUMER.MSG.NEXT.S.C",
                                       b'{"batch":1,"expires":1000000000}',
                                       inbox="_INBOX.b", timeout=1)[1])
    # (B's watcher on ">" takes these two: no "no responders" status, and no answer)
    out["b store without a stream"] = _summary(b.request("s.2", b"two", inbox="_INBOX.b",
                                                         timeout=1)[1])
    out["b create"] = _summary(b.request("$JS.API.STREAM.CREATE.S", stream,
                                         inbox="_INBOX.b")[1])
    out["b store"] = _summary(b.request("s.3", b"three", inbox="_INBOX.b")[1])
    b.exchange(b"PUB plain.b 1\r\nb\r\n")
    out["a info after"] = _summary(a.request("$JS.API.STREAM.INFO.S", inbox="_INBOX.a")[1])
    out["b info after"] = _summary(b.request("$JS.API.STREAM.INFO.S", inbox="_INBOX.b")[1])
    # A's pull brings A's message, and its ack only moves A's consumer
    pull = b'{"batch":1,"expires":2000000000}'
    frames = a.exchange(b"SUB _INBOX.pull 7\r\nPUB $JS.API.CONSUMER.MSG.NEXT.S.C _INBOX.pull"
                        b" %d\r\n%s\r\n" % (len(pull), pull))
    msg = next((f for f in frames if f[0] == "MSG" and f[5] == "7"), None) or a.frame()
    out["a pulled"] = (msg[1], msg[4])
    a.exchange(b"PUB %s 0\r\n\r\n" % msg[2].encode())
    time.sleep(0.2)
    info = json.loads(a.request("$JS.API.CONSUMER.INFO.S.C", inbox="_INBOX.a")[1])
    out["a ack floor"] = info["ack_floor"]["stream_seq"]

    def seen(watcher):
        return sorted({"$JS.ACK" if f[1].startswith("$JS.ACK.") else f[1]
                       for f in watcher.exchange() if f[0] == "MSG"})
    time.sleep(0.2)
    out["A's watcher saw"] = seen(watcher_a)
    out["B's watcher saw"] = seen(watcher_b)
    for s in (a, b, watcher_a, watcher_b):
        s.close()
    return out


def test_accounts_isolate_as_on_nats_server(tmp_path):
    ours, theirs = on_both(tmp_path, CONF, _outcomes)
    assert differences(ours, theirs) == {}
    assert theirs["b info"]["error"] == (404, 10059)
    assert theirs["a info after"]["messages"] == 1 and theirs["b info after"]["messages"] == 1
    assert "plain.b" not in theirs["A's watcher saw"]
    assert "plain.a" not in theirs["B's watcher saw"] and "s.1" not in theirs["B's watcher saw"]
