"""Accounts, their JetStream limits, no_auth_user and the JetStream domain, against the
real nats-server and `jsstore serve` started with one configuration file.

The same requests go to both servers as the same users; the answers are compared with
their key order, after masking only what two servers legitimately differ in (times,
server ids and names, generated consumer names)."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

nats = pytest.importorskip("nats")
from nats.errors import NoRespondersError, TimeoutError   # noqa: E402

pytestmark = pytest.mark.natsserver

CONFIG = """
jetstream { domain: hub }
accounts {
  A: {
    users: [{user: a, password: a}]
    jetstream: {max_mem: 1MB, max_file: 2MB, max_streams: 3, max_consumers: 2,
                max_ack_pending: 100, memory_max_stream_bytes: 512KB,
                store_max_stream_bytes: 1536KB, max_bytes_required: true}
  }
  B: { users: [{user: b, password: b}], jetstream: enabled }
  C: { users: [{user: c, password: c}] }
  D: { users: [{user: d, password: d}],
       jetstream: {max_file: 600, max_mem: 200, max_streams: 4} }
}
no_auth_user: b
"""

MASKED = {"created", "ts", "time", "first_ts", "last_ts", "server_id", "cluster", "name"}


class _Pairs(list):
    pass


def _mask(value):
    if isinstance(value, _Pairs):
        return [(k, "<masked>" if k in MASKED else _mask(v)) for k, v in value]
    if isinstance(value, list):
        return [_mask(v) for v in value]
    return value


def _answer(msg) -> object:
    data = msg.data
    if data[:1] == b"{":
        return _mask(json.loads(data, object_pairs_hook=_Pairs))
    return data


async def _request(nc, subject: str, body=b"", headers=None, timeout: float = 2.0):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    try:
        return _answer(await nc.request(subject, body, timeout=timeout, headers=headers))
    except NoRespondersError:
        return "no responders"
    except TimeoutError:
        return "timeout"


def _stream(name: str, **config) -> tuple[str, dict]:
    return f"$JS.API.STREAM.CREATE.{name}", {"name": name, "subjects": [name.lower() + ".>"],
                                              **config}


# (user or None, subject, body[, headers]); "timeout" steps wait their answer out
SCRIPT = [
    # account A: limits on streams
    ("a", "$JS.API.INFO", b""),
    ("a", *_stream("S1")),                                            # max bytes required
    ("a", *_stream("S1", max_bytes=2 * 1024 * 1024)),                 # over the stream limit
    ("a", *_stream("M1", storage="memory", max_bytes=600 * 1024)),    # over the memory one
    ("a", *_stream("S1", max_bytes=1024 * 1024)),
    ("a", *_stream("S2", max_bytes=1024 * 1024)),
    ("a", *_stream("S3", max_bytes=1)),                               # storage reserved
    ("a", *_stream("M1", storage="memory", max_bytes=400 * 1024)),
    ("a", *_stream("M2", storage="memory", max_bytes=100)),           # max streams
    ("a", *_stream("S4", max_bytes=10, max_consumers=5)),             # max streams first
    ("a", "$JS.API.STREAM.CREATE.S5", {"name": "S5", "subjects": ["s1.>"],   # or overlap?
                                       "max_bytes": 10}),
    ("a", "$JS.API.STREAM.UPDATE.S1", {"name": "S1", "subjects": ["s1.>"], "max_bytes": -1}),
    ("a", "$JS.API.STREAM.UPDATE.S1", {"name": "S1", "subjects": ["s1.>"],
                                       "max_bytes": 1024 * 1024 + 1}),
    ("a", "$JS.API.STREAM.UPDATE.S1", {"name": "S1", "subjects": ["s1.>"],
                                       "max_bytes": 512 * 1024}),
    ("a", "$JS.API.STREAM.UPDATE.S1", {"name": "S1", "subjects": ["s1.>"],
                                       "max_bytes": 1024 * 1024, "max_consumers": 3}),
    ("a", "$JS.API.STREAM.DELETE.M1", b""),
    ("a", *_stream("M2", storage="memory", max_bytes=100, max_consumers=3)),
    # account A: consumers
    ("a", "$JS.API.CONSUMER.CREATE.S1", {"stream_name": "S1",
                                         "config": {"ack_policy": "explicit"}}),
    ("a", "$JS.API.CONSUMER.CREATE.S1", {"stream_name": "S1", "config": {
        "ack_policy": "explicit", "max_ack_pending": 101}}),
    ("a", "$JS.API.CONSUMER.CREATE.S1", {"stream_name": "S1", "config": {
        "durable_name": "d2", "ack_policy": "explicit", "max_ack_pending": -1}}),
    ("a", "$JS.API.CONSUMER.CREATE.S1", {"stream_name": "S1", "config": {
        "durable_name": "d3", "ack_policy": "none"}}),                # max consumers
    ("a", "$JS.API.CONSUMER.CREATE.S2", {"stream_name": "S2", "config": {
        "durable_name": "d4", "ack_policy": "none"}}),                # per stream
    # account A: publishes, domain in PubAcks, usage
    ("a", "s1.x", b"hello"),
    ("a", "s1.x", b"hello", {"Nats-Msg-Id": "1"}),
    ("a", "s1.x", b"hello", {"Nats-Msg-Id": "1"}),
    ("a", "s1.x", b"hello", {"Nats-Expected-Last-Sequence": "9"}),
    ("a", "m2.x", b"m"),
    ("a", "$JS.API.STREAM.INFO.S1", b""),
    ("a", "$JS.API.STREAM.LIST", b""),
    ("a", "$JS.API.INFO", b""),
    ("a", "$JS.hub.API.INFO", b""),
    ("a", "$JS.hub.API.STREAM.NAMES", b""),
    ("a", "$JS.API.CONSUMER.INFO.S1.d2", b""),
    ("a", "$JS.hub.API.CONSUMER.INFO.S1.d2", b""),
    ("a", "$JS.API.CONSUMER.LIST.S1", b""),
    ("a", "$JS.hub.API.STREAM.MSG.GET.S1", {"seq": 1}),
    ("a", "$JS.hub.API.DIRECT.GET.S1", {"seq": 1}),
    ("a", "$JS.hub.API.CONSUMER.MSG.NEXT.S1.d2", {"batch": 1, "no_wait": True}),
    ("a", "$JS.other.API.INFO", b""),
    # account B, also the no_auth_user's: unlimited, isolated from A
    ("b", "$JS.API.STREAM.NAMES", b""),
    ("b", "s1.x", b"not A's"),
    (None, *_stream("S1", storage="memory", max_bytes=100)),
    (None, "s1.x", b"B's own"),
    ("b", "$JS.API.STREAM.INFO.S1", b""),
    ("b", "$JS.API.CONSUMER.CREATE.S1", {"stream_name": "S1", "config": {
        "ack_policy": "explicit"}}),
    ("b", "$JS.API.INFO", b""),
    # account C: no JetStream
    ("c", "$JS.API.INFO", b""),
    ("c", "$JS.API.STREAM.NAMES", b""),
    ("c", "$JS.API.STREAM.LIST", b""),
    ("c", "$JS.API.STREAM.INFO.S1", b""),
    ("c", *_stream("S1")),
    ("c", "$JS.API.CONSUMER.NAMES.S1", b""),
    ("c", "$JS.API.CONSUMER.INFO.S1.d2", b""),
    ("c", "$JS.API.DIRECT.GET.S1", {"seq": 1}),
    ("c", "$JS.API.CONSUMER.MSG.NEXT.S1.d2", {"batch": 1}),
    ("c", "s1.x", b"nobody stores it"),
    # account D: publishes refused once the account is over its storage
    ("d", *_stream("F", max_bytes=-1)),
    ("d", *_stream("R", storage="memory")),
    ("d", "f.1", b"x" * 300),
    ("d", "f.2", b"x" * 300),
    ("d", "f.3", b"x" * 300),
    ("d", "f.4", b"x" * 300, {"Nats-Msg-Id": "dup"}),
    ("d", "r.1", b"y" * 150),
    ("d", "r.2", b"y" * 150),
    ("d", "r.3", b"y" * 150),
    ("d", "$JS.API.INFO", b""),
]


async def _run(url: str, script: list = SCRIPT) -> list:
    connections = {}
    answers = []
    try:
        for step in script:
            user, subject, body = step[:3]
            headers = step[3] if len(step) > 3 else None
            if user not in connections:
                auth = {"user": user, "password": user} if user else {}
                connections[user] = await nats.connect(url, **auth)
            answers.append((step, await _request(connections[user], subject, body, headers)))
    finally:
        for nc in connections.values():
            await nc.close()
    return answers


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    require_nats_server()
    root = tmp_path_factory.mktemp("accounts")
    conf = root / "accounts.conf"
    conf.write_text(CONFIG)
    out = {}
    with nats_server(root / "nats", ["-c", str(conf)]) as srv:
        out["nats-server"] = asyncio.run(_run(srv.url))
    with jsstore_server(root / "jsstore", ["-c", str(conf)]) as srv:
        out["jsstore"] = asyncio.run(_run(srv.url))
    out["root"] = root
    return out


@pytest.mark.parametrize("index", range(len(SCRIPT)))
def test_step_answers_as_nats_server(both, index):
    step, theirs = both["nats-server"][index]
    _, mine = both["jsstore"][index]
    assert mine == theirs, f"step {index} {step[:2]}"


def test_streams_live_in_their_account_directory(both):
    for side in ("nats", "jsstore"):
        root = both["root"] / side / "jetstream"
        assert sorted(os.listdir(root / "A" / "streams")) == ["S1", "S2"], side
        assert os.listdir(root / "D" / "streams") == ["F"], side
        assert not (root / "B" / "streams").exists() or not os.listdir(root / "B" / "streams")
        assert not (root / "C").exists(), side


async def _isolation(url: str) -> list:
    a = await nats.connect(url, user="a", password="a")
    b = await nats.connect(url, user="b", password="b")
    c = await nats.connect(url, user="c", password="c")
    seen = []

    async def keep(msg):
        seen.append((msg.subject, msg.data))
    try:
        await a.subscribe("iso.>", cb=keep)
        await a.flush()
        await b.publish("iso.from.b", b"b")
        await c.publish("iso.from.c", b"c")
        await a.publish("iso.from.a", b"a")
        await b.flush()
        await c.flush()
        await a.flush()
        await asyncio.sleep(0.2)
    finally:
        for nc in (a, b, c):
            await nc.close()
    return seen


def test_messages_stay_in_their_account(tmp_path):
    require_nats_server()
    conf = tmp_path / "accounts.conf"
    conf.write_text(CONFIG)
    for starter, name in ((nats_server, "nats"), (jsstore_server, "jsstore")):
        with starter(tmp_path / name, ["-c", str(conf)]) as srv:
            assert asyncio.run(_isolation(srv.url)) == [("iso.from.a", b"a")], name


async def _through_domain(url: str) -> list:
    nc = await nats.connect(url, user="b", password="b")
    try:
        js = nc.jetstream(domain="hub")
        await js.add_stream(name="DOM", subjects=["dom.>"])
        ack = await js.publish("dom.1", b"one")
        info = await js.stream_info("DOM")
        sub = await js.pull_subscribe("dom.>", durable="w", stream="DOM")
        msgs = await sub.fetch(1, timeout=2)
        await msgs[0].ack_sync()
        kv = await js.create_key_value(bucket="cfg")
        await kv.put("k", b"v")
        entry = await kv.get("k")
        return [ack.stream, ack.seq, ack.domain, info.state.messages, msgs[0].data,
                entry.value, (await js.account_info()).domain]
    finally:
        await nc.close()


def test_a_client_of_the_domain(tmp_path):
    require_nats_server()
    conf = tmp_path / "accounts.conf"
    conf.write_text(CONFIG)
    for starter, name in ((nats_server, "nats"), (jsstore_server, "jsstore")):
        with starter(tmp_path / name, ["-c", str(conf)]) as srv:
            assert asyncio.run(_through_domain(srv.url)) == [
                "DOM", 1, "hub", 1, b"one", b"v", "hub"], name


SERVER_LIMITS = """
jetstream { max_file: 1000, max_mem: 500 }
"""

SERVER_LIMITS_SCRIPT = [
    (None, *_stream("S1", max_bytes=2000)),                     # over the server's storage
    (None, *_stream("S1", max_bytes=600)),
    (None, *_stream("S2", max_bytes=600)),                      # reserved with S1's
    (None, *_stream("S3")),
    (None, *_stream("M", storage="memory")),
    *[(None, "s3.x", b"x" * 300)] * 5,                          # the fifth is refused
    *[(None, "m.x", b"x" * 200)] * 4,
    (None, "$JS.API.INFO", b""),
]


def test_server_jetstream_limits(tmp_path):
    """jetstream { max_file, max_mem }: reservations over every account and publishes
    refused with "insufficient resources" once the server holds more."""
    require_nats_server()
    conf = tmp_path / "limits.conf"
    conf.write_text(SERVER_LIMITS)
    results = {}
    for starter, name in ((nats_server, "nats"), (jsstore_server, "jsstore")):
        with starter(tmp_path / name, ["-c", str(conf)]) as srv:
            results[name] = asyncio.run(_run(srv.url, SERVER_LIMITS_SCRIPT))
    for (step, theirs), (_, mine) in zip(results["nats"], results["jsstore"]):
        assert mine == theirs, step[:2]


DEFAULT_LIMITS_SCRIPT = [
    (None, *_stream("HUGE", max_bytes=1 << 62)),                        # past the free disk
    (None, *_stream("HUGE", storage="memory", max_bytes=1 << 62)),      # past 3/4 of memory
    (None, *_stream("FINE", max_bytes=1 << 20)),
]


def test_default_server_limits(tmp_path):
    """Without jetstream limits a server still reserves within what the machine has."""
    require_nats_server()
    results = {}
    for starter, name in ((nats_server, "nats"), (jsstore_server, "jsstore")):
        with starter(tmp_path / name) as srv:
            results[name] = asyncio.run(_run(srv.url, DEFAULT_LIMITS_SCRIPT))
    for (step, theirs), (_, mine) in zip(results["nats"], results["jsstore"]):
        assert mine == theirs, step[:2]
