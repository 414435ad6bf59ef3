"""jsstore backup and restore: a stream with its consumers backed up from a store directory,
restored into nats-server, backed up there by the command and restored into a second
nats-server, and restored into jsstore serve and another store directory; messages and
consumers compared at every step.  (A nats-server 2.15 snapshot is its own archive format,
which jsstore's restore does not read yet: nats-server backups go back to nats-server.)"""

from __future__ import annotations

import json
import tarfile

import pytest
from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

import jsstore
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
    ok(capsys, "restore", backup, "--store", back)
    assert contents(capsys, "--store", back) == original
    with jsstore.open(back, timers=False) as js:       # a store the library opens as well
        assert js.stream_info("ORDERS").state.messages == 39
    with jsstore_server(tmp_path / "served") as srv:
        ok(capsys, "restore", backup, "--server", srv.url)
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
