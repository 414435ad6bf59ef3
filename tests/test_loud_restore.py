"""STREAM.RESTORE keeps to the account's limits and to bounded memory, on `jsstore serve`
as on nats-server (one configuration file, the same uploads, the answers compared):

- at the request, the account's stream count (10027) and the bytes the stream reserves
  (10047) are checked before any chunk is taken;
- while the chunks stream in, the snapshot's members add up against the account's storage,
  and the restore fails with 10047 once they would not fit;
- an upload is spooled to disk as it arrives, so garbage sent for minutes does not grow the
  server's memory; it fails at its end with a restore error, every chunk acked meanwhile."""

from __future__ import annotations

import json
import os
import tempfile

import pytest
from rawsession import ByteSession, differences, on_both, start
from test_api_snapshot import fill, take_snapshot

import jsstore

pytestmark = pytest.mark.natsserver

CONF = """
accounts {
  A: { users: [{user: a, password: p}], jetstream: { max_streams: 2, max_file: 1MB } }
  B: { users: [{user: b, password: p}], jetstream: enabled }
}
"""
CHUNK = 64 * 1024


def _session(port: int, user: str) -> ByteSession:
    return ByteSession(port, user)


def _error(body: bytes):
    decoded = json.loads(body) if body else {}
    if "error" in decoded:
        return decoded["error"]["code"], decoded["error"]["err_code"]
    return decoded.get("type", "").rsplit(".", 1)[-1], decoded.get("state", {}).get("messages")


def _snapshot(count: int, size: int) -> bytes:
    """A snapshot of a stream "S" (s.>) of `count` random messages of `size` bytes."""
    with tempfile.TemporaryDirectory() as directory:
        js = jsstore.open(directory)
        try:
            fill(js, "S", count=count, size=size)
            _, receiver = take_snapshot(js, "S")
            assert receiver.ended
            return receiver.data()
        finally:
            js.close()


def _upload(session: ByteSession, name: str, data: bytes, config: dict | None = None):
    """(the restore request's answer, each chunk's answer, the end's answer)."""
    body = json.dumps({"config": config or {"name": name, "subjects": ["s.>"]}}).encode()
    answer = session.request(b"$JS.API.STREAM.RESTORE." + name.encode(), body)
    deliver = json.loads(answer).get("deliver_subject")
    if not deliver:
        return _error(answer), [], None
    acks = {session.request(deliver.encode(), data[i:i + CHUNK])
            for i in range(0, len(data), CHUNK)}
    return "accepted", sorted(acks), _error(session.request(deliver.encode(), b"",
                                                             timeout=30))


def _outcomes(port: int, small: bytes, large: bytes) -> dict:
    a = _session(port, "a")
    out = {}
    for name in ("A1", "A2"):
        a.request(b"$JS.API.STREAM.CREATE." + name.encode(),
                  json.dumps({"name": name, "subjects": [name.lower()]}).encode())
    out["third stream"] = _upload(a, "S", small)
    a.request(b"$JS.API.STREAM.DELETE.A2", b"")
    out["reserving too much"] = _upload(a, "S", small, {
        "name": "S", "subjects": ["s.>"], "max_bytes": 2 * 1024 * 1024})
    out["too large"] = _upload(a, "S", large)
    out["after the refusal"] = _error(a.request(b"$JS.API.STREAM.INFO.S", b""))
    out["fits"] = _upload(a, "S", small)
    b = _session(port, "b")
    out["garbage"] = _upload(b, "G", os.urandom(20 * CHUNK),
                             {"name": "G", "subjects": ["g.>"]})
    out["large elsewhere"] = _upload(b, "S", large)
    a.close()
    b.close()
    return out


def test_restore_keeps_to_the_account_limits_as_nats_server(tmp_path):
    small, large = _snapshot(40, 1000), _snapshot(1400, 1000)
    assert len(large) > 1024 * 1024
    ours, theirs = on_both(tmp_path, CONF, lambda port: _outcomes(port, small, large))
    assert differences(ours, theirs) == {}
    assert theirs["third stream"][0] == (400, 10027)
    assert theirs["reserving too much"][0] == (500, 10047)
    assert theirs["too large"][2] == (500, 10047)
    assert theirs["after the refusal"] == (404, 10059)
    assert theirs["fits"][2] == ("stream_create_response", 40)
    assert theirs["garbage"][1] == [b""] and theirs["garbage"][2][1] == 10062
    assert theirs["large elsewhere"][2] == ("stream_create_response", 1400)


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_an_upload_is_spooled_not_held_in_memory(tmp_path):
    """100 MB of chunks of an upload that never ends: the server's memory grows by far
    less than that (they were held until the end, and the memory never given back)."""
    conf = tmp_path / "limits.conf"
    conf.write_text(CONF)
    with start("jsstore", tmp_path / "store", conf) as srv:
        session = _session(srv.port, "b")
        body = json.dumps({"config": {"name": "G", "subjects": ["g.>"]}}).encode()
        deliver = json.loads(session.request(b"$JS.API.STREAM.RESTORE.G", body))[
            "deliver_subject"].encode()
        snapshot = _snapshot(40, 1000)
        session.request(deliver, snapshot[:CHUNK])      # a real start: frames decoded
        before = _rss_kib(srv.process.pid)
        junk = os.urandom(CHUNK)
        for _ in range(100 * 1024 * 1024 // CHUNK):
            assert session.request(deliver, junk) == b""
        grown = _rss_kib(srv.process.pid) - before
        session.close()
    assert grown < 30 * 1024, f"the server grew by {grown} KiB"


def test_a_server_killed_in_a_restore_leaves_nothing_behind(tmp_path):
    """A restore whose server is killed half way (SIGKILL while the upload streams in):
    after the restart its spooled upload is gone, no stream was made, and the same restore
    goes through."""
    from bothservers import Restartable
    snapshot = _snapshot(40, 1000)
    servers = Restartable("jsstore", tmp_path / "store")
    try:
        session = ByteSession(servers.server.port)
        body = json.dumps({"config": {"name": "S", "subjects": ["s.>"]}}).encode()
        deliver = json.loads(session.request(b"$JS.API.STREAM.RESTORE.S", body))[
            "deliver_subject"].encode()
        assert session.request(deliver, snapshot[:-10]) == b""      # (all but its end)
        staging = tmp_path / "store" / "jetstream"
        assert [p.name for p in staging.iterdir() if p.name.startswith("js-restore-")]
        session.close()
        servers.kill()
        servers.start_again()
        assert not [p.name for p in staging.iterdir() if p.name.startswith("js-restore-")]
        session = ByteSession(servers.server.port)
        assert b"10059" in session.request(b"$JS.API.STREAM.INFO.S", b"")
        assert _upload(session, "S", snapshot)[2] == ("stream_create_response", 40)
        session.close()
    finally:
        servers.stop()
