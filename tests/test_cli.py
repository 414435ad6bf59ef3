"""The jsstore command's verbs on a store directory (in process, through
``jsstore.cli.main``): each prints its table or, with --json, what the wire API answers;
every failure is one line on stderr and a non-zero exit status."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

import jsstore
from jsstore.api.schemas import SERVER_VERSION
from jsstore.cli import main

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def ok(capsys, *argv) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    return out


def wire(store, subject: str, body: bytes = b"") -> dict:
    """What the store's JetStream answers to a request (opened after the command closed it)."""
    with jsstore.open(store, timers=False) as js:
        return json.loads(js.request(subject, body))


def without_times(body):
    """An answer without its "ts" fields (the time each answer was made, at any depth)."""
    if isinstance(body, dict):
        return {k: without_times(v) for k, v in body.items() if k != "ts"}
    if isinstance(body, list):
        return [without_times(v) for v in body]
    return body


@pytest.fixture
def store(tmp_path, capsys):
    path = str(tmp_path / "store")
    ok(capsys, "stream", "add", "ORDERS", "--subjects", "orders.>", "--storage", "file",
       "--retention", "limits", "--max-msgs", "100", "--max-age", "1h", "--defaults",
       "--store", path)
    for n in range(3):
        ok(capsys, "pub", f"orders.{n}", f"body {n}", "--store", path)
    return path


def test_version(capsys):
    out = ok(capsys, "--version")
    assert out.strip() == f"jsstore {jsstore.__version__} (nats-server {SERVER_VERSION} API)"


def test_stream_add_takes_the_flags(store, capsys):
    config = wire(store, "$JS.API.STREAM.INFO.ORDERS")["config"]
    assert config["subjects"] == ["orders.>"]
    assert config["max_msgs"] == 100 and config["max_age"] == 3600 * 10**9
    assert config["storage"] == "file" and config["retention"] == "limits"


def test_stream_info_and_ls_json_are_the_wire_answers(store, capsys):
    info = json.loads(ok(capsys, "stream", "info", "ORDERS", "--json", "--store", store))
    assert without_times(info) == without_times(wire(store, "$JS.API.STREAM.INFO.ORDERS"))
    assert info["state"]["messages"] == 3
    listed = json.loads(ok(capsys, "stream", "ls", "--json", "--store", store))
    assert without_times(listed) == without_times(wire(store, "$JS.API.STREAM.LIST"))


def test_stream_tables(store, capsys):
    out = ok(capsys, "stream", "ls", "--store", store)
    assert "Streams: 1" in out and "ORDERS" in out and "Last Message" in out
    row = next(line for line in out.splitlines() if line.startswith("ORDERS"))
    assert row.split()[3] == "3"
    out = ok(capsys, "stream", "info", "ORDERS", "--store", store)
    assert "Information for Stream ORDERS" in out
    assert "Subjects: orders.>" in out and "Maximum Messages: 100" in out
    assert "Messages: 3" in out
    assert ok(capsys, "stream", "ls", "--names", "--store", store) == "ORDERS\n"
    assert "\x1b" not in out                     # no colour off a terminal


def test_stream_get_view_rmm_purge_edit_rm(store, capsys):
    out = ok(capsys, "stream", "get", "ORDERS", "2", "--store", store)
    assert "Item: ORDERS#2" in out and "on Subject orders.1" in out and "body 1" in out
    got = json.loads(ok(capsys, "stream", "get", "ORDERS", "2", "--json", "--store", store))
    assert got == wire(store, "$JS.API.STREAM.MSG.GET.ORDERS", b'{"seq":2}')
    out = ok(capsys, "stream", "get", "ORDERS", "--last-for", "orders.0", "--store", store)
    assert "ORDERS#1" in out
    assert ok(capsys, "stream", "rmm", "ORDERS", "2", "-f", "--store", store).startswith("Deleted")
    out = ok(capsys, "stream", "view", "ORDERS", "--store", store)
    assert [line.split()[0] for line in out.splitlines() if line.startswith("[")] == ["[1]", "[3]"]
    ok(capsys, "stream", "edit", "ORDERS", "--max-msgs", "50", "--subjects", "orders.>,more.>",
       "--store", store)
    config = wire(store, "$JS.API.STREAM.INFO.ORDERS")["config"]
    assert config["max_msgs"] == 50 and config["subjects"] == ["orders.>", "more.>"]
    assert "Purged 2 messages" in ok(capsys, "stream", "purge", "ORDERS", "-f", "--store", store)
    ok(capsys, "stream", "rm", "ORDERS", "-f", "--store", store)
    assert ok(capsys, "stream", "ls", "--store", store) == "No Streams defined\n"


def test_consumers(store, capsys):
    out = ok(capsys, "consumer", "add", "ORDERS", "PULL", "--filter", "orders.>", "--ack",
             "explicit", "--deliver", "all", "--wait", "30s", "--defaults", "--store", store)
    assert "Information for Consumer ORDERS > PULL" in out
    info = json.loads(ok(capsys, "consumer", "info", "ORDERS", "PULL", "--json", "--store", store))
    assert without_times(info) == without_times(wire(store, "$JS.API.CONSUMER.INFO.ORDERS.PULL"))
    assert info["config"]["ack_wait"] == 30 * 10**9
    out = ok(capsys, "consumer", "next", "ORDERS", "PULL", "--count", "2", "--store", store)
    assert out.count("Acknowledged message") == 2
    assert "str seq: 1" in out and "str seq: 2" in out and "body 1" in out
    info = wire(store, "$JS.API.CONSUMER.INFO.ORDERS.PULL")
    assert info["ack_floor"]["stream_seq"] == 2 and info["num_pending"] == 1
    out = ok(capsys, "consumer", "next", "ORDERS", "PULL", "--no-ack", "--raw", "--store", store)
    assert out == "body 2\n"
    assert wire(store, "$JS.API.CONSUMER.INFO.ORDERS.PULL")["num_ack_pending"] == 1
    out = ok(capsys, "consumer", "ls", "ORDERS", "--store", store)
    assert "PULL" in out and "Ack Pending" in out
    listed = json.loads(ok(capsys, "consumer", "ls", "ORDERS", "--json", "--store", store))
    assert listed["consumers"][0]["name"] == "PULL"
    ok(capsys, "consumer", "rm", "ORDERS", "PULL", "-f", "--store", store)
    assert "No Consumers" in ok(capsys, "consumer", "ls", "ORDERS", "--store", store)


def test_pub_jetstream_and_req(store, capsys):
    out = ok(capsys, "pub", "orders.x", "hi", "--jetstream", "--store", store)
    assert out == "Stored in Stream: ORDERS Sequence: 4\n"
    out = ok(capsys, "req", "$JS.API.STREAM.NAMES", "", "--raw", "--store", store)
    assert json.loads(out)["streams"] == ["ORDERS"]
    # options before, between and after the positionals, as the nats CLI takes them
    out = ok(capsys, "pub", "--store", store, "orders.y", "--jetstream", "late body")
    assert out == "Stored in Stream: ORDERS Sequence: 5\n"
    assert "late body" in ok(capsys, "stream", "get", "ORDERS", "5", "--store", store)


def test_kv(tmp_path, capsys):
    store = str(tmp_path / "kv")
    ok(capsys, "kv", "add", "CFG", "--history", "5", "--store", store)
    config = wire(store, "$JS.API.STREAM.INFO.KV_CFG")["config"]
    assert config["subjects"] == ["$KV.CFG.>"] and config["max_msgs_per_subject"] == 5
    assert config["allow_rollup_hdrs"] and config["deny_delete"] and config["discard"] == "new"
    assert ok(capsys, "kv", "put", "CFG", "color", "red", "--store", store) == "red\n"
    ok(capsys, "kv", "put", "CFG", "color", "blue", "--store", store)
    ok(capsys, "kv", "put", "CFG", "size", "L", "--store", store)
    assert ok(capsys, "kv", "get", "CFG", "color", "--raw", "--store", store) == "blue\n"
    out = ok(capsys, "kv", "get", "CFG", "color", "--store", store)
    assert "CFG > color revision: 2" in out
    assert ok(capsys, "kv", "get", "CFG", "color", "--revision", "1", "--raw",
              "--store", store) == "red\n"
    assert ok(capsys, "kv", "ls", "CFG", "--store", store) == "color\nsize\n"
    assert "CFG" in ok(capsys, "kv", "ls", "--store", store)
    history = json.loads(ok(capsys, "kv", "history", "CFG", "color", "--json", "--store", store))
    assert [(h["revision"], h["value"]) for h in history] == [(1, "red"), (2, "blue")]
    ok(capsys, "kv", "del", "CFG", "color", "-f", "--store", store)
    code, out, err = run(capsys, "kv", "get", "CFG", "color", "--store", store)
    assert code != 0 and err == "jsstore: key not found\n"
    ok(capsys, "kv", "purge", "CFG", "size", "-f", "--store", store)
    assert "No keys" in ok(capsys, "kv", "ls", "CFG", "--store", store)
    out = ok(capsys, "kv", "watch", "CFG", "--store", store)
    assert "[DEL] CFG > color" in out and "[PURGE] CFG > size" in out


@pytest.mark.parametrize("argv", [
    ["stream", "info", "NOPE"],
    ["stream", "get", "ORDERS", "99"],
    ["consumer", "next", "ORDERS", "NOPE"],
    ["stream", "add", "BAD", "--max-age", "soon"],
    ["stream", "add", "MEM", "--storage", "memory"],
    ["kv", "add", "MEM", "--storage", "memory"],
    ["stream", "frobnicate"],
    ["sub", "orders.>"],
])
def test_errors_are_one_line(store, capsys, argv):
    code, out, err = run(capsys, *argv, "--store", store)
    assert code != 0
    assert len(err.splitlines()) == 1 and err.startswith("jsstore: "), err
    assert "Traceback" not in err


def test_no_backend_named_is_an_error(capsys, monkeypatch):
    monkeypatch.delenv("NATS_URL", raising=False)
    code, _, err = run(capsys, "stream", "ls")
    assert code == 2 and err.startswith("jsstore: ") and len(err.splitlines()) == 1


def test_the_console_entry_in_a_subprocess(store):
    env = {**os.environ, "PYTHONPATH": SRC}
    out = subprocess.run([sys.executable, "-m", "jsstore", "stream", "ls", "--names", "--store",
                          store], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout == "ORDERS\n"
    bad = subprocess.run([sys.executable, "-m", "jsstore", "stream", "info", "NOPE", "--store",
                          store], env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    traced = subprocess.run([sys.executable, "-m", "jsstore", "stream", "info", "NOPE",
                             "--store", store, "--trace"], env=env, capture_output=True,
                            text=True, timeout=60)
    assert traced.returncode == 1 and "Traceback" in traced.stderr


def test_object_store(tmp_path, capsys):
    store = str(tmp_path / "obj")
    blob = tmp_path / "blob.bin"
    blob.write_bytes(os.urandom(300_000))
    config = json.loads(ok(capsys, "obj", "add", "FILES", "--json", "--store", store))["config"]
    assert config["name"] == "OBJ_FILES" and "$O.FILES.C.>" in config["subjects"]
    out = ok(capsys, "obj", "put", "FILES", str(blob), "--store", store)
    assert out.startswith("Stored blob.bin in FILES") and "SHA-256=" in out
    listed = json.loads(ok(capsys, "obj", "ls", "FILES", "--json", "--store", store))
    assert [(o["name"], o["size"]) for o in listed] == [("blob.bin", 300_000)]
    assert "FILES" in ok(capsys, "obj", "ls", "--store", store)
    ok(capsys, "obj", "get", "FILES", "blob.bin", "-O", str(tmp_path / "copy"), "--store", store)
    assert (tmp_path / "copy").read_bytes() == blob.read_bytes()
    ok(capsys, "obj", "rm", "FILES", "blob.bin", "-f", "--store", store)
    code, _, err = run(capsys, "obj", "get", "FILES", "blob.bin", "--store", store)
    assert code == 1 and err == "jsstore: object not found\n"
    code, _, err = run(capsys, "obj", "ls", "NOPE", "--store", store)
    assert code == 1 and err == "jsstore: bucket not found\n"


def test_bench(tmp_path, capsys):
    store = str(tmp_path / "bench")
    out = ok(capsys, "bench", "bench.x", "--msgs", "300", "--size", "64", "--batch", "100",
             "--store", store)
    lines = out.splitlines()
    assert lines[0].startswith("Starting JetStream benchmark [subject=bench.x")
    assert lines[1].startswith("Pub stats: ") and lines[1].endswith(" MB/sec")
    assert lines[2].startswith("Sub stats: ") and lines[2].endswith(" MB/sec")
    info = wire(store, "$JS.API.STREAM.INFO.benchstream")
    assert info["state"]["messages"] == 300 and info["state"]["consumer_count"] == 0


def test_stream_add_from_a_config_file(tmp_path, capsys):
    store = str(tmp_path / "cfg")
    config = tmp_path / "stream.json"
    config.write_text(json.dumps({"name": "IGNORED", "subjects": ["a.>"], "max_msgs": 7,
                                  "discard": "new"}))
    ok(capsys, "stream", "add", "S", "--config", str(config), "--max-age", "2d",
       "--store", store)
    found = wire(store, "$JS.API.STREAM.INFO.S")["config"]
    assert (found["name"], found["subjects"], found["max_msgs"], found["discard"]) == \
        ("S", ["a.>"], 7, "new")
    assert found["max_age"] == 2 * 86400 * 10**9


def test_colour_only_on_a_terminal(store):
    """Headings are bold when stdout is a terminal (a pseudo-terminal here), plain in a pipe
    (the other tests) and with NO_COLOR."""
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop("NO_COLOR", None)
    outputs = []
    for extra in ({}, {"NO_COLOR": "1"}):
        leader, follower = pty.openpty()
        try:
            done = subprocess.run([sys.executable, "-m", "jsstore", "stream", "ls", "--store",
                                   store], env={**env, **extra}, stdout=follower,
                                  stderr=subprocess.PIPE, timeout=60)
            assert done.returncode == 0, done.stderr
            os.close(follower)
            follower = -1
            chunks = []
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            outputs.append(b"".join(chunks))
        finally:
            os.close(leader)
            if follower >= 0:
                os.close(follower)
    assert b"\x1b[1m" in outputs[0] and b"ORDERS" in outputs[0]
    assert b"\x1b[" not in outputs[1] and b"ORDERS" in outputs[1]
