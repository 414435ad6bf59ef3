"""sync_interval always in the server: a PubAck leaves only once its message is on disk,
the publishes of one event-loop iteration (every client) share one fsync per file, an
fsync error acknowledges nothing, and a power loss after a kill loses nothing that was
acknowledged.  The configuration forms are read as nats-server reads them."""

from __future__ import annotations

import errno
import json
import os
import threading

import pytest

import jsstore
from inprocess import Conn, frames
from jsstore._core.storage import faults
from jsstore.cli.serve import store_options
from jsstore.server import Server
from jsstore.server import config as server_config
from jsstore.server.eventloop import Loop
from jsstore.server.options import server_options
from jsstore.store import syncgroup


# -- the configuration ---------------------------------------------------------------------------
def options_of(text: str) -> dict:
    return server_options(server_config.parse(text))


@pytest.mark.parametrize("value, expected", [
    ("always", "always"), ('"always"', "always"), ("ALWAYS", "always"), ('"Always"', "always"),
    ('"5s"', 5_000_000_000), ('"1m30s"', 90_000_000_000), ('"0s"', 0),
    ('"-1s"', -1_000_000_000), ("5", 5_000_000_000),   # an integer: seconds
])
def test_sync_interval_forms(value, expected):
    for key in ("sync_interval", "sync"):
        got = options_of(f'jetstream {{ store_dir: "x", {key}: {value} }}')
        assert got["sync_interval"] == expected


@pytest.mark.parametrize("value, error", [
    ('"bogus"', 'error parsing sync_interval: time: invalid duration "bogus"'),
    ('"1.5"', 'error parsing sync_interval: time: missing unit in duration "1.5"'),
    ('"5 s"', 'error parsing sync_interval: time: unknown unit " s" in duration "5 s"'),
    ("true", "interface conversion: interface {} is bool, not int64"),
    ("1.5", "interface conversion: interface {} is float64, not int64"),
])
def test_sync_interval_errors(value, error):
    with pytest.raises(server_config.ConfigError) as caught:
        options_of(f'jetstream {{ store_dir: "x", sync_interval: {value} }}')
    assert str(caught.value) == error


def test_sync_always_gives_each_jetstream_a_group_and_a_duration_the_interval():
    always = store_options({"sync_interval": "always"})
    assert always.sync == "always" and isinstance(always.group, syncgroup.SyncGroup)
    assert store_options({"sync_interval": "always"}).group is not always.group
    timed = store_options({"sync_interval": "1m"})
    assert timed.sync == "interval" and timed.group is None and timed.sync_interval == 60.0
    assert store_options({}).sync_interval == 120.0
    assert store_options({"sync_interval": 0}).sync_interval == 120.0   # nats-server's default


def test_the_command_line_flag_takes_the_same_values():
    from jsstore.cli.serve import UsageError, parse_flags, sync_setting
    assert sync_setting(parse_flags(["--sync_interval", "always"])) == "always"
    assert sync_setting(parse_flags(["-sync=ALWAYS"])) == "always"
    assert sync_setting(parse_flags(["--sync_interval", "250ms"])) == 250_000_000
    assert sync_setting(parse_flags(["--sync_interval", "5"])) == 5_000_000_000
    assert sync_setting({}) == 120_000_000_000
    with pytest.raises(UsageError, match='time: invalid duration "bogus"'):
        sync_setting(parse_flags(["--sync_interval", "bogus"]))


# -- held PubAcks, in process ---------------------------------------------------------------------
def pubs(count: int, start: int = 0, size: int = 128, inbox: bytes = b"_INBOX.t") -> bytes:
    body = b"m" * size
    return b"".join(b"PUB s.%d %s.%d %d\r\n%s\r\n" % (i, inbox, i, size, body)
                    for i in range(start, start + count))


class GatedFsync:
    """The fault shim as syncgroup sees it: fsync waits until the gate opens, or fails
    with `error`."""

    def __init__(self, error: int | None = None):
        self.gate = threading.Event()
        self.error = error
        self.calls = 0

    def fsync(self, fd: int, path=None) -> None:
        self.calls += 1
        if self.error is not None:
            raise OSError(self.error, os.strerror(self.error))
        self.gate.wait(30)

    errno_text = staticmethod(faults.errno_text)


def run_server(tmp_path, body):
    js = jsstore.open(tmp_path, store_options({"sync_interval": "always"}), timers=False)
    js.add_stream(name="S", subjects=["s.*"])
    server = Server(js, host="127.0.0.1", port=-1, sync_always=True)

    server.loop = Loop()
    try:
        return body(server, js)
    finally:
        server.durable.close()
        server.loop.close()
        js.close()


def turn(server, seconds: float) -> None:
    """The server's loop run for `seconds`."""
    server.loop.run_until(lambda: False, seconds)


def answers_of(server, conns: list, count: int, tries: int = 3000) -> list[list[dict]]:
    """Run the loop until the connections got `count` answers between them (or `tries`
    looks 5 ms apart went by)."""
    got = [[] for _ in conns]
    for _ in range(tries):
        for i, conn in enumerate(conns):
            got[i].extend(json.loads(f[3]) for f in frames(conn.read()) if f[1] == "1")
        if sum(map(len, got)) >= count:
            break
        turn(server, 0.005)
    return got


def test_pubacks_wait_for_the_fsync_and_concurrent_publishes_share_it(tmp_path, monkeypatch):
    gated = GatedFsync()
    monkeypatch.setattr(syncgroup, "faults", gated)

    def body(server, js):
        one, two = Conn(server, 1), Conn(server, 2, inbox="_INBOX.u")
        one.feed(pubs(300))
        two.feed(pubs(300, 300, inbox=b"_INBOX.u"))
        turn(server, 0.1)                         # the loop goes on; the fsync does not end
        assert frames(one.read()) == [] and frames(two.read()) == []
        assert js.stream_info("S").state.messages == 600    # stored, not acknowledged
        one.feed(pubs(200, 600))                  # arrives while the fsync runs: the next one
        turn(server, 0.02)
        assert frames(one.read()) == []
        gated.gate.set()
        got = answers_of(server, [one, two], 800)
        assert sorted(a["seq"] for a in got[0] + got[1]) == list(range(1, 801))
        assert all("error" not in a for a in got[0] + got[1])
        return server.durable.rounds

    rounds = run_server(tmp_path, body)
    assert rounds == 2
    assert 1 <= gated.calls <= 6                  # 800 acknowledged publishes


def test_a_publish_with_headers_waits_for_the_fsync_too(tmp_path, monkeypatch):
    gated = GatedFsync()
    monkeypatch.setattr(syncgroup, "faults", gated)
    hdr = b"NATS/1.0\r\nNats-Msg-Id: one\r\n\r\n"

    def body(server, js):
        conn = Conn(server, 1)
        conn.feed(b"HPUB s.h _INBOX.t.1 %d %d\r\n%sbody\r\n" % (len(hdr), len(hdr) + 4, hdr))
        turn(server, 0.05)
        assert frames(conn.read()) == []
        gated.gate.set()
        return answers_of(server, [conn], 1)[0]

    assert run_server(tmp_path, body) == [{"stream": "S", "seq": 1}]


class UserConn(Conn):
    """A connection that logs in as `user` (password the same)."""

    def __init__(self, server, cid: int, user: str):
        from inprocess import Transport
        from jsstore.server.client import Client
        self.client = Client(server, cid)
        self.transport = Transport()
        self.client.connection_made(self.transport)
        self.feed(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"user":"%s",'
                  b'"pass":"%s"}\r\nSUB _INBOX.t.* 1\r\n' % (user.encode(), user.encode()))
        self.read()


def test_publishes_of_every_account_share_the_round(tmp_path, monkeypatch):
    gated = GatedFsync()
    monkeypatch.setattr(syncgroup, "faults", gated)
    jetstreams = {name: jsstore.open(tmp_path, store_options({"sync_interval": "always"}),
                                     account=name, timers=False) for name in ("A", "B")}
    for js in jetstreams.values():
        js.add_stream(name="S", subjects=["s.*"])
    server = Server(None, host="127.0.0.1", port=-1, sync_always=True, accounts=jetstreams,
                    users=[{"user": "a", "password": "a", "account": "A"},
                           {"user": "b", "password": "b", "account": "B"}])

    server.loop = Loop()
    try:
        a, b = UserConn(server, 1, "a"), UserConn(server, 2, "b")
        a.feed(pubs(100))
        b.feed(pubs(50))
        turn(server, 0.05)
        assert frames(a.read()) == [] and frames(b.read()) == []
        gated.gate.set()
        got = answers_of(server, [a, b], 150)
        got, rounds = [sorted(answer["seq"] for answer in one) for one in got], server.durable.rounds
    finally:
        server.durable.close()
        server.loop.close()
        for js in jetstreams.values():
            js.close()
    assert got == [list(range(1, 101)), list(range(1, 51))]
    assert rounds == 1
    assert gated.calls <= 4           # each account's write block and msgs/ folder, once


def test_an_fsync_error_acknowledges_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(syncgroup, "faults", GatedFsync(errno.EIO))

    def body(server, js):
        conn = Conn(server, 1)
        conn.feed(pubs(5))
        got = (answers_of(server, [conn], 5))[0]
        # the failed fsync stays the store's error: later writes are refused with it (the
        # server answers nothing to a publish its store refused), reads go on
        with js.lock:
            store = js.lookup_stream_locked("S").store
        assert store.write_error is not None and store.write_error.errno == errno.EIO
        conn.feed(pubs(1, start=5))
        assert answers_of(server, [conn], 1, tries=100)[0] == []
        assert store.state().last_seq == 5
        return got

    got = run_server(tmp_path, body)
    assert len(got) == 5
    for answer in got:
        assert answer["stream"] == "S" and answer["seq"] == 0
        error = answer["error"]
        assert (error["code"], error["err_code"]) == (503, 10077)
        assert error["description"].startswith("sync ")
        assert error["description"].endswith(": input/output error")


# -- what /varz and /jsz show, against nats-server --------------------------------------------------
def _get(port: int, path: str) -> dict:
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
        return json.loads(answer.read())


SHOWN = ("sync_interval", "sync_always")


@pytest.mark.natsserver
@pytest.mark.parametrize("value", ["always", '"5s"', '"0s"', "7"])
def test_varz_and_jsz_show_the_sync_setting_as_nats_server(tmp_path, value):
    from jsstoreserver import jsstore_server
    from natsserver import free_port, nats_server, require_nats_server
    require_nats_server()
    shown = {}
    for kind in ("jsstore", "nats-server"):
        http = free_port()
        conf = tmp_path / f"{kind}.conf"
        conf.write_text(f"jetstream {{ sync_interval: {value} }}\n")
        starter = jsstore_server if kind == "jsstore" else nats_server
        with starter(tmp_path / kind, ["-c", str(conf), "-m", str(http)]):
            varz = _get(http, "/varz")["jetstream"]["config"]
            jsz = _get(http, "/jsz?config=true")["config"]
        shown[kind] = [{key: page[key] for key in SHOWN if key in page} for page in (varz, jsz)]
    assert shown["jsstore"] == shown["nats-server"]


# -- what else sync always syncs (nats-server's writeFileWithOptionalSync) ---------------------------
@pytest.mark.parametrize("sync", ["always", "interval"])
def test_consumer_state_and_meta_are_synced_with_always_only(tmp_path, sync):
    from jsstore.store import durablelog
    from jsstore.store.config import StoreConfig, StoreOptions
    from jsstore.store.filestore import FileStore
    log = tmp_path / "durable.log"
    durablelog.arm(str(log))
    try:
        store = FileStore(tmp_path / "S", StoreConfig(name="S"), StoreOptions(sync=sync))
        consumer = store.consumer_store("D", 1, {"ack_policy": "explicit"})
        consumer.update_delivered(1, 1, 1, 1)
        consumer.flush()
        store.stop()
    finally:
        durablelog.disarm()
    synced = {os.path.relpath(path, tmp_path / "S") for path in durablelog.durable_lengths(str(log))}
    consumer_files = {"obs/D/meta.inf", "obs/D/o.dat"}
    assert {"meta.inf", "meta.sum", "msgs/index.db"} <= synced     # synced either way
    assert (consumer_files <= synced) == (sync == "always")
