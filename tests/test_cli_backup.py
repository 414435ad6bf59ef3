"""jsstore backup and restore: a stream with its consumers backed up from a store directory,
restored into nats-server, backed up there (nats-server 2.15's NATSARC1 archive) and
restored from that into a second nats-server, another store directory and jsstore serve;
messages and consumers compared at every step."""

from __future__ import annotations

import io
import json
import tarfile

import pytest
from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

import jsstore
from jsstore._core.storage.compress import s2_encode_stream
from jsstore.cli import main

pytestmark = pytest.mark.natsserver


def ok(capsys, *argv) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def contents(capsys, *where) -> tuple[list, dict]:
    """Every message (seq, subject, data, headers) and each consumer's state, read through
    the command's --json answers."""
    info = json.loads(ok(capsys, "stream", "info", "ORDERS", "--json", *where))
    msgs = []
    for seq in range(info["state"]["first_seq"], info["state"]["last_seq"] + 1):
        if main(["stream", "get", "ORDERS", str(seq), "--json", *where]) != 0:
            capsys.readouterr()
            continue
        m = json.loads(capsys.readouterr().out)["message"]
        msgs.append((m["seq"], m["subject"], m.get("data"), m.get("hdrs"), m["time"]))
    consumers = {}
    for name in ok(capsys, "consumer", "ls", "ORDERS", "--names", *where).split():
        c = json.loads(ok(capsys, "consumer", "info", "ORDERS", name, "--json", *where))
        consumers[name] = (c["config"]["durable_name"], c["config"].get("filter_subject"),
                           c["delivered"]["stream_seq"], c["ack_floor"]["stream_seq"],
                           c["num_ack_pending"], c["num_pending"])
    return msgs, consumers


def fill(capsys, store) -> None:
    s = ("--store", store)
    ok(capsys, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults", *s)
    for n in range(40):
        ok(capsys, "pub", f"orders.{n % 4}", f"order {n} " + "x" * n, "-H", f"n:{n}", *s)
    ok(capsys, "stream", "rmm", "ORDERS", "7", "-f", *s)
    ok(capsys, "consumer", "add", "ORDERS", "ALL", "--defaults", *s)
    ok(capsys, "consumer", "add", "ORDERS", "ONE", "--filter", "orders.1", *s)
    ok(capsys, "consumer", "next", "ORDERS", "ALL", "--count", "5", *s)
    ok(capsys, "consumer", "next", "ORDERS", "ONE", "--count", "2", "--no-ack", *s)


def test_store_to_nats_server_and_back(tmp_path, capsys):
    require_nats_server()
    store = str(tmp_path / "store")
    fill(capsys, store)
    original = contents(capsys, "--store", store)
    assert len(original[0]) == 39 and set(original[1]) == {"ALL", "ONE"}
    backup = str(tmp_path / "orders.backup")
    out = ok(capsys, "backup", "--stream", "ORDERS", "--to", backup, "--store", store)
    assert "Backed up stream ORDERS: 39 messages" in out
    with tarfile.open(backup) as tar:
        assert sorted(tar.getnames()) == ["backup.json", "stream.tar.s2"]
    with nats_server(tmp_path / "nats") as srv:
        s = ("--server", srv.url)
        out = ok(capsys, "restore", backup, *s)
        assert out == "Restored stream ORDERS: 39 messages, 2 consumers\n"
        assert contents(capsys, *s) == original
        again = str(tmp_path / "again.backup")
        ok(capsys, "backup", "--stream", "ORDERS", "--to", again, *s)
    with nats_server(tmp_path / "nats2") as srv:
        ok(capsys, "restore", again, "--server", srv.url)
        assert contents(capsys, "--server", srv.url) == original
    back = str(tmp_path / "back")
    ok(capsys, "restore", again, "--store", back)           # nats-server's archive, back
    assert contents(capsys, "--store", back) == original
    with jsstore.open(back, timers=False) as js:       # a store the library opens as well
        assert js.stream_info("ORDERS").state.messages == 39
    with jsstore_server(tmp_path / "served") as srv:
        ok(capsys, "restore", again, "--server", srv.url)
        assert contents(capsys, "--server", srv.url) == original
        ok(capsys, "stream", "rm", "ORDERS", "-f", "--server", srv.url)
        ok(capsys, "restore", backup, "--server", srv.url)   # and jsstore's own snapshot
        assert contents(capsys, "--server", srv.url) == original


def test_restore_errors_are_one_line(tmp_path, capsys):
    store = str(tmp_path / "store")
    fill(capsys, store)
    backup = str(tmp_path / "b")
    ok(capsys, "backup", "--stream", "ORDERS", "--to", backup, "--store", store)
    for argv in (["restore", backup, "--store", store],             # the stream exists
                 ["restore", str(tmp_path / "missing"), "--store", store],
                 ["backup", "--stream", "NOPE", "--to", backup, "--store", store]):
        code = main(argv)
        err = capsys.readouterr().err
        assert code != 0 and len(err.splitlines()) == 1 and err.startswith("jsstore: "), err


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def entry(name: str, body: bytes, seq: int = 0, ts: int = 0, hdr: bytes = b"") -> bytes:
    return (uvarint(len(name.encode())) + uvarint(ts << 1) + uvarint(seq) + uvarint(len(hdr))
            + uvarint(len(body)) + name.encode() + hdr + body)


def archive_backup(path, entries: list[bytes]) -> str:
    """A backup file holding a NATSARC1 archive made by hand, as nats-server 2.15 writes."""
    data = s2_encode_stream(b"NATSARC1" + b"".join(entries))
    meta = json.dumps({"type": "io.nats.jetstream.api.v1.stream_snapshot_response",
                       "config": {"name": "ARC", "subjects": ["arc.>"], "storage": "file",
                                  "retention": "limits"}, "state": {}}).encode()
    with tarfile.open(path, "w") as tar:
        for name, blob in (("backup.json", meta), ("stream.tar.s2", data)):
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return str(path)


STATE = json.dumps({"messages": 3, "bytes": 0, "first_seq": 2, "last_seq": 6,
                    "consumer_count": 1}).encode()
CONSUMER = json.dumps({"config": {"durable_name": "W", "name": "W", "ack_policy": "explicit",
                                  "deliver_policy": "all"},
                       "state": {"delivered": {"consumer_seq": 2, "stream_seq": 3},
                                 "ack_floor": {"consumer_seq": 1, "stream_seq": 2},
                                 "pending": {"3": {"sequence": 2, "ts": 1}}}}).encode()
MESSAGES = [entry("arc.a", b"two", 2, 1_700_000_000_000_000_002),
            entry("arc.b", b"three", 3, 1_700_000_000_000_000_003, b"NATS/1.0\r\nk: v\r\n\r\n"),
            entry("arc.a", b"five", 5, 1_700_000_000_000_000_005)]


def test_a_nats_server_archive_restores_into_a_store(tmp_path, capsys):
    backup = archive_backup(tmp_path / "arc", [entry("state.json", STATE),
                                               entry("consumers/W", CONSUMER), *MESSAGES,
                                               entry("", b"")])
    store = str(tmp_path / "store")
    assert ok(capsys, "restore", backup, "--store", store) == \
        "Restored stream ARC: 3 messages, 1 consumers\n"
    with jsstore.open(store, timers=False) as js:
        state = js.stream_info("ARC").state
        assert (state.first_seq, state.last_seq, state.messages) == (2, 6, 3)
        got = [(m.seq, m.subject, m.data, m.time) for m in
               (js.get_msg("ARC", seq) for seq in (2, 3, 5))]
        assert [g[:3] for g in got] == [(2, "arc.a", b"two"), (3, "arc.b", b"three"),
                                        (5, "arc.a", b"five")]
        assert js.get_msg("ARC", 3).headers == {"k": "v"}
        info = js.consumer_info("ARC", "W")
        assert (info.delivered.stream_seq, info.ack_floor.stream_seq,
                info.num_ack_pending) == (3, 2, 1)


def test_an_archive_without_its_end_is_refused(tmp_path, capsys):
    backup = archive_backup(tmp_path / "arc", [entry("state.json", STATE), *MESSAGES])
    store = str(tmp_path / "store")
    code = main(["restore", backup, "--store", store])
    err = capsys.readouterr().err
    assert code == 1 and len(err.splitlines()) == 1 and "restore failed" in err, err
    assert main(["stream", "ls", "--names", "--store", store]) == 0
    assert capsys.readouterr().out == ""                # nothing half-restored is left
