"""Names and subjects are bytes, as on nats-server: the same requests to `jsstore serve`
and nats-server get the same answers, and none is an internal error (an unanswered
request and a traceback in the log).

- A name's limits count bytes (255 for a stream or durable name: 127 'é's pass, 128 are
  "too long"), as do a description's and metadata's.
- A name the file system cannot take (a NUL in it) fails the stream's creation with
  nats-server's 10049 "error creating store for stream", a consumer's with 10012 "error
  creating store for consumer"; a memory stream of that name is created, as on
  nats-server.
- A subject that is not UTF-8 (`ds.\\xff\\xfe`) is stored and acknowledged, delivered to
  subscribers and read back with the very bytes it was published with, also after a
  restart."""

from __future__ import annotations

import json
import time

import pytest
from bothservers import Restartable
from natsserver import require_nats_server
from rawsession import ByteSession as Raw

pytestmark = pytest.mark.natsserver


def _answer(body: bytes):
    """What a JSON API answer says: its error, or the name it created or its seq."""
    try:
        decoded = json.loads(body)
    except ValueError:
        return body[:60]
    if "error" in decoded:
        return (decoded["error"]["code"], decoded["error"]["err_code"],
                decoded["error"]["description"])
    if "config" in decoded:
        return ("ok", decoded["config"].get("name") or decoded["config"].get("durable_name"))
    return ("ok", decoded.get("stream"), decoded.get("seq"))


def _create(raw: Raw, name: str, **config):
    body = json.dumps({"name": name, **config}).encode()
    return _answer(raw.request(b"$JS.API.STREAM.CREATE." + name.encode(), body))


def _names(port: int) -> dict:
    raw = Raw(port)
    out = {}
    e127, e128 = "é" * 127, "é" * 128
    out["nul file"] = _create(raw, "S\x00X", subjects=["nul.>"])
    out["nul memory"] = _create(raw, "M\x00X", subjects=["mnul.>"], storage="memory")
    out["256 bytes file"] = _create(raw, e128, subjects=["e.>"])
    out["256 bytes memory"] = _create(raw, e128, subjects=["e.>"], storage="memory")
    out["254 bytes"] = _create(raw, e127, subjects=["e7.>"])
    out["255 ascii"] = _create(raw, "a" * 255, subjects=["a255.>"], storage="memory")
    out["256 ascii"] = _create(raw, "b" * 256, subjects=["b256.>"], storage="memory")
    out["control"] = _create(raw, "a\x01b", subjects=["c.>"])
    out["kv nul"] = _create(raw, "KV_a\x00", subjects=["$KV.a\x00.>"])
    out["description"] = _create(raw, "D", subjects=["d.>"], description="é" * 2049)
    out["metadata"] = _create(raw, "MD", subjects=["md.>"], metadata={"k": "é" * 65536})
    out["stream for consumers"] = _create(raw, "C", subjects=["cons.>"])
    body = json.dumps({"stream_name": "C", "config": {"durable_name": e128}}).encode()
    out["durable 256 bytes"] = _answer(raw.request(
        b"$JS.API.CONSUMER.DURABLE.CREATE.C." + e128.encode(), body))
    body = json.dumps({"stream_name": "C", "config": {"durable_name": e127}}).encode()
    out["durable 254 bytes"] = _answer(raw.request(
        b"$JS.API.CONSUMER.DURABLE.CREATE.C." + e127.encode(), body))
    for name in ("n\x00ul", "x\x01y"):
        body = json.dumps({"stream_name": "C", "config": {"durable_name": name}}).encode()
        out[f"durable {name!r}"] = _answer(raw.request(
            b"$JS.API.CONSUMER.DURABLE.CREATE.C." + name.encode(), body))
        body = json.dumps({"stream_name": "C", "config": {"name": name + "2"}}).encode()
        out[f"named {name!r}"] = _answer(raw.request(
            b"$JS.API.CONSUMER.CREATE.C." + name.encode() + b"2", body))
    body = json.dumps({"stream_name": "C", "config": {
        "durable_name": "desc", "description": "é" * 2049}}).encode()
    out["consumer description"] = _answer(raw.request(
        b"$JS.API.CONSUMER.DURABLE.CREATE.C.desc", body))
    raw.close()
    return out


def _subjects(port: int, first: bool) -> dict:
    raw = Raw(port)
    out = {}
    if first:
        out["create"] = _create(raw, "DS", subjects=["ds.>"], allow_direct=True)
        raw.exchange(b"SUB ds.> 7\r\n")
        out["ack"] = _answer(raw.request(b"ds.\xff\xfe", b"hi"))
        out["subscriber"] = raw.exchange(b"")
        out["plain publish"] = raw.exchange(b"PUB ds.\xc3\x28 2\r\nho\r\n")
    get = raw.request(b"$JS.API.DIRECT.GET.DS", b'{"seq":1}')
    out["direct get subject"] = [line for line in get.split(b"\r\n")
                                 if line.startswith(b"Nats-Subject:")]
    get = raw.request(b"$JS.API.DIRECT.GET.DS", b'{"seq":2}')
    out["direct get 2 subject"] = [line for line in get.split(b"\r\n")
                                   if line.startswith(b"Nats-Subject:")]
    name = b"first" if first else b"again"
    body = json.dumps({"stream_name": "DS", "config": {
        "name": name.decode(), "ack_policy": "none", "deliver_policy": "all"}}).encode()
    _answer(raw.request(b"$JS.API.CONSUMER.CREATE.DS." + name, body))
    raw.exchange(b"SUB _INBOX.pull 9\r\n")
    pulled = raw.exchange(b'PUB $JS.API.CONSUMER.MSG.NEXT.DS.%s _INBOX.pull 11\r\n'
                          b'{"batch":2}\r\n' % name)
    time.sleep(0.2)
    pulled += raw.exchange(b"")
    out["pulled subjects"] = [line.split()[1] for line in pulled.split(b"\r\n")
                              if line.startswith(b"MSG ")]
    raw.close()
    return out


def test_names_and_subjects_are_bytes_as_on_nats_server(tmp_path):
    require_nats_server()
    found = {}
    logs = {}
    for kind in ("jsstore", "nats-server"):
        servers = Restartable(kind, tmp_path / kind)
        try:
            found[kind] = _names(servers.server.port)
            found[kind].update(_subjects(servers.server.port, True))
            servers.server.stop()
            servers.start_again()
            found[kind].update({f"{k} after a restart": v
                                for k, v in _subjects(servers.server.port, False).items()})
            logs[kind] = servers.server.log_text()
        finally:
            servers.stop()
    ours, theirs = found["jsstore"], found["nats-server"]
    assert {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]} == {}
    assert theirs["nul file"] == (500, 10049, "error creating store for stream")
    assert theirs["256 bytes file"][1] == 10052
    assert theirs["durable 256 bytes"][0] == 400
    assert theirs["durable 'n\\x00ul'"] == (500, 10012, "error creating store for consumer")
    assert theirs["ack"] == ("ok", "DS", 1)
    assert theirs["subscriber"] == b"MSG ds.\xff\xfe 7 _INBOX.n2 2\r\nhi\r\n"
    assert theirs["pulled subjects"] == [b"ds.\xff\xfe", b"ds.\xc3\x28"]
    assert theirs["pulled subjects after a restart"] == [b"ds.\xff\xfe", b"ds.\xc3\x28"]
    assert "Traceback" not in logs["jsstore"]
