"""The same client-side checks against `jsstore serve` and the real nats-server, through
nats-py: both must pass them.  (The first slice of the server issue's conformance suite.)"""

from __future__ import annotations

import asyncio

import pytest

from bothservers import collector, run, server  # noqa: F401  (the fixture)
from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

nats = pytest.importorskip("nats")
from nats.errors import NoRespondersError, TimeoutError as NatsTimeout  # noqa: E402
from nats.js.errors import NotFoundError  # noqa: E402

pytestmark = pytest.mark.natsserver


def test_pub_sub_wildcards_and_queue_groups(server):
    async def main():
        nc = await nats.connect(server.url)
        got: dict[str, list] = {"star": [], "gt": [], "q": []}
        await nc.subscribe("a.*", cb=collector(got["star"], "subject"))
        await nc.subscribe("a.>", cb=collector(got["gt"], "subject"))
        for _ in range(3):
            await nc.subscribe("work", queue="workers", cb=collector(got["q"]))
        await nc.publish("a.b", b"1")
        await nc.publish("a.b.c", b"2")
        for i in range(10):
            await nc.publish("work", b"%d" % i)
        await nc.flush()
        await asyncio.sleep(0.1)
        await nc.close()
        return got
    got = run(main())
    assert got["star"] == ["a.b"]
    assert got["gt"] == ["a.b", "a.b.c"]
    assert sorted(got["q"]) == sorted(b"%d" % i for i in range(10))   # each exactly once


def test_request_reply_headers_and_no_responders(server):
    async def main():
        nc = await nats.connect(server.url)

        async def echo(msg):
            await msg.respond(msg.data + b"!")
        await nc.subscribe("svc", cb=echo)
        reply = await nc.request("svc", b"hi", timeout=2)
        seen = []

        async def keep(msg):
            seen.append(msg.headers)
        await nc.subscribe("h", cb=keep)
        await nc.publish("h", b"x", headers={"X-Test": "1"})
        await nc.flush()
        await asyncio.sleep(0.05)
        with pytest.raises(NoRespondersError):
            await nc.request("nobody.home", b"", timeout=2)
        await nc.close()
        return reply.data, seen
    data, seen = run(main())
    assert data == b"hi!"
    assert seen == [{"X-Test": "1"}]


def test_unsubscribe_with_max(server):
    async def main():
        nc = await nats.connect(server.url)
        got = []
        sub = await nc.subscribe("m", cb=collector(got))
        await sub.unsubscribe(limit=2)
        for i in range(5):
            await nc.publish("m", b"%d" % i)
        await nc.flush()
        await asyncio.sleep(0.1)
        await nc.close()
        return got
    assert run(main()) == [b"0", b"1"]


def test_jetstream_publish_pull_and_ack(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await js.add_stream(name="ORDERS", subjects=["orders.*"])
        acks = [await js.publish("orders.new", b"o%d" % i) for i in range(5)]
        dup = await js.publish("orders.new", b"x", headers={"Nats-Msg-Id": "a"})
        again = await js.publish("orders.new", b"x", headers={"Nats-Msg-Id": "a"})
        sub = await js.pull_subscribe("orders.*", "DISPATCH", stream="ORDERS")
        msgs = await sub.fetch(4, timeout=2)
        for msg in msgs[:3]:
            await msg.ack_sync()
        await msgs[3].nak()
        info = await js.consumer_info("ORDERS", "DISPATCH")
        rest = await sub.fetch(10, timeout=1)
        with pytest.raises(NatsTimeout):
            await sub.fetch(1, timeout=0.5)
        with pytest.raises(NotFoundError):
            await js.stream_info("NOPE")
        await nc.close()
        return acks, dup, again, msgs, info, rest
    acks, dup, again, msgs, info, rest = run(main())
    assert [a.seq for a in acks] == [1, 2, 3, 4, 5]
    assert (dup.seq, again.seq, bool(again.duplicate)) == (6, 6, True)
    assert [m.data for m in msgs] == [b"o0", b"o1", b"o2", b"o3"]
    assert (info.delivered.consumer_seq, info.ack_floor.consumer_seq, info.num_ack_pending,
            info.num_pending) == (4, 3, 1, 2)
    assert [(m.data, m.metadata.num_delivered) for m in rest] == [
        (b"o3", 2), (b"o4", 1), (b"x", 1)]


def test_key_value(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        kv = await js.create_key_value(bucket="cfg", history=3)
        r1 = await kv.put("color", b"red")
        r2 = await kv.update("color", b"blue", last=r1)
        entry = await kv.get("color")
        history = [e.value for e in await kv.history("color")]
        await kv.delete("color")
        with pytest.raises(Exception):
            await kv.get("color")
        await kv.put("size", b"L")
        keys = await kv.keys()
        await nc.close()
        return r1, r2, entry, history, keys
    r1, r2, entry, history, keys = run(main())
    assert (r1, r2) == (1, 2)
    assert (entry.value, entry.revision) == (b"blue", 2)
    assert history == [b"red", b"blue"]
    assert keys == ["size"]


def test_restart_keeps_streams_and_consumers(tmp_path):
    async def write(url):
        nc = await nats.connect(url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.*"])
        for i in range(3):
            await js.publish("s.x", b"%d" % i)
        sub = await js.pull_subscribe("s.*", "C", stream="S")
        await (await sub.fetch(1, timeout=2))[0].ack_sync()
        await nc.close()

    async def read(url):
        nc = await nats.connect(url)
        js = nc.jetstream()
        info = await js.stream_info("S")
        sub = await js.pull_subscribe("s.*", "C", stream="S")
        try:
            msgs = await sub.fetch(5, timeout=1)
        except NatsTimeout:
            msgs = []
        await nc.close()
        return info.state.messages, [m.data for m in msgs]

    store = tmp_path / "store"
    with jsstore_server(store) as srv:
        run(write(srv.url))
        srv.stop()                              # SIGTERM: state flushed
    with jsstore_server(store) as srv:
        assert run(read(srv.url)) == (3, [b"1", b"2"])
        srv.process.kill()                      # SIGKILL: no clean shutdown
        srv.process.wait(10)
    with jsstore_server(store) as srv:
        messages, redelivered = run(read(srv.url))
    # the stream is all there; 1 and 2 went out just before the kill: each is still
    # waiting for its ack if its delivery reached o.dat, else delivered again (o.dat is
    # written on an interval, as nats-server writes it, so the kill may fall between the two)
    assert messages == 3
    assert redelivered in ([], [b"2"], [b"1", b"2"])


@pytest.fixture(params=["jsstore", "nats-server"])
def auth_server(request, tmp_path):
    """A server started with --user/--pass (the param carries the server kind)."""
    args = ["--user", "alice", "--pass", "s3cret"]
    if request.param == "jsstore":
        with jsstore_server(tmp_path / "store", args) as srv:
            yield srv
    else:
        require_nats_server()
        with nats_server(tmp_path / "store", args) as srv:
            yield srv


def _raw_session(port: int, connect: bytes) -> bytes:
    import socket
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(2)
    info = sock.recv(65536)
    assert b'"auth_required":true' in info
    sock.sendall(connect + b"PING\r\n")
    out = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except OSError:
            break
        if not chunk:
            out += b"<closed>"
            break
        out += chunk
        if out.endswith(b"PONG\r\n"):
            break
    sock.close()
    return out


def test_user_and_password(auth_server):
    good = b'CONNECT {"verbose":false,"user":"alice","pass":"s3cret"}\r\n'
    bad = b'CONNECT {"verbose":false,"user":"alice","pass":"nope"}\r\n'
    assert _raw_session(auth_server.port, good) == b"PONG\r\n"
    assert _raw_session(auth_server.port, bad) == (
        b"-ERR 'Authorization Violation'\r\n<closed>")

    async def with_nats_py():
        nc = await nats.connect(f"nats://alice:s3cret@127.0.0.1:{auth_server.port}")
        got = []
        await nc.subscribe("x", cb=collector(got))
        await nc.publish("x", b"1")
        await nc.flush()
        await asyncio.sleep(0.05)
        await nc.close()
        return got
    assert run(with_nats_py()) == [b"1"]


def _get(port: int, path: str) -> dict:
    import json
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
        assert answer.headers["Content-Type"].startswith("application/json")
        return json.loads(answer.read())


def test_monitoring_endpoints_have_nats_server_shapes(tmp_path):
    """Every key jsstore's /varz, /connz, /jsz, /healthz answer is one nats-server's has
    (the ones monitoring tools read among them), and the counters count."""
    from natsserver import free_port
    require_nats_server()
    pages = {}
    for kind in ("jsstore", "nats-server"):
        http = free_port()
        starter = jsstore_server if kind == "jsstore" else nats_server
        with starter(tmp_path / kind, ["-m", str(http)]) as srv:
            async def traffic():
                nc = await nats.connect(srv.url, name="probe")
                js = nc.jetstream()
                await js.add_stream(name="S", subjects=["s"])
                await js.publish("s", b"12345")
                await nc.subscribe("x")
                await nc.flush()
                found = {page: _get(http, f"/{page}") for page in
                         ("varz", "connz", "jsz", "healthz")}
                await nc.close()
                return found
            pages[kind] = run(traffic())
    ours, theirs = pages["jsstore"], pages["nats-server"]
    for page in ours:
        assert set(ours[page]) <= set(theirs[page]), (page, set(ours[page]) - set(theirs[page]))
    for key in ("server_id", "version", "connections", "in_msgs", "out_msgs", "in_bytes",
                "out_bytes", "subscriptions", "mem", "cpu", "uptime", "jetstream"):
        assert key in ours["varz"], key
    assert ours["varz"]["connections"] == 1 and ours["varz"]["in_msgs"] >= 2
    assert ours["healthz"] == theirs["healthz"] == {"status": "ok"}
    [conn] = ours["connz"]["connections"]
    assert conn["name"] == "probe" and conn["subscriptions"] >= 1
    assert set(conn) <= set(theirs["connz"]["connections"][0])
    assert (ours["jsz"]["streams"], ours["jsz"]["messages"]) == (1, 1)
    assert (theirs["jsz"]["streams"], theirs["jsz"]["messages"]) == (1, 1)
