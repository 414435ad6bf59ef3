"""The jsstore command's verbs against a server (``--server``), run against `jsstore serve`
and nats-server alike: the --json answers are what a plain request over NATS answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from bothservers import run, server  # noqa: F401  (the fixture)

from jsstore.cli import main

nats = pytest.importorskip("nats")
pytestmark = pytest.mark.natsserver
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def ok(capsys, *argv) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def request(url: str, subject: str, body: bytes = b"") -> dict:
    async def go():
        nc = await nats.connect(url)
        try:
            return json.loads((await nc.request(subject, body, timeout=5)).data)
        finally:
            await nc.close()
    return run(go())


def without_times(body):
    if isinstance(body, dict):
        return {k: without_times(v) for k, v in body.items() if k != "ts"}
    if isinstance(body, list):
        return [without_times(v) for v in body]
    return body


def test_streams_consumers_and_messages(server, capsys):
    s = ("--server", server.url)
    ok(capsys, "stream", "add", "ORDERS", "--subjects", "orders.>", "--max-msgs-per-subject",
       "10", "--defaults", *s)
    assert ok(capsys, "pub", "orders.a", "one", *s) == 'Published 3 bytes to "orders.a"\n'
    out = ok(capsys, "pub", "orders.b", "two", "-J", *s)
    assert out == "Stored in Stream: ORDERS Sequence: 2\n"
    info = json.loads(ok(capsys, "stream", "info", "ORDERS", "--json", *s))
    assert without_times(info) == without_times(request(server.url, "$JS.API.STREAM.INFO.ORDERS"))
    assert info["state"]["messages"] == 2 and info["config"]["max_msgs_per_subject"] == 10
    assert "ORDERS" in ok(capsys, "stream", "ls", *s)
    got = json.loads(ok(capsys, "stream", "get", "ORDERS", "1", "--json", *s))
    assert got == request(server.url, "$JS.API.STREAM.MSG.GET.ORDERS", b'{"seq":1}')
    out = ok(capsys, "stream", "view", "ORDERS", *s)
    assert "[1] Subject: orders.a" in out and "[2] Subject: orders.b" in out
    ok(capsys, "consumer", "add", "ORDERS", "C", "--defaults", *s)
    info = json.loads(ok(capsys, "consumer", "info", "ORDERS", "C", "--json", *s))
    assert without_times(info) == without_times(
        request(server.url, "$JS.API.CONSUMER.INFO.ORDERS.C"))
    out = ok(capsys, "consumer", "next", "ORDERS", "C", "--count", "2", *s)
    assert out.count("Acknowledged message") == 2 and "two" in out
    info = request(server.url, "$JS.API.CONSUMER.INFO.ORDERS.C")
    assert info["ack_floor"]["stream_seq"] == 2 and info["num_ack_pending"] == 0
    code = main(["consumer", "next", "ORDERS", "C", "--wait", "200ms", *s])
    assert code != 0 and capsys.readouterr().err.startswith("jsstore: no message")
    out = ok(capsys, "req", "$JS.API.STREAM.NAMES", "", "--raw", *s)
    assert json.loads(out)["streams"] == ["ORDERS"]
    ok(capsys, "stream", "rmm", "ORDERS", "1", "-f", *s)
    ok(capsys, "stream", "purge", "ORDERS", "-f", *s)
    ok(capsys, "consumer", "rm", "ORDERS", "C", "-f", *s)
    ok(capsys, "stream", "rm", "ORDERS", "-f", *s)
    assert ok(capsys, "stream", "ls", *s) == "No Streams defined\n"


def test_kv(server, capsys):
    s = ("--server", server.url)
    ok(capsys, "kv", "add", "CFG", "--history", "3", *s)
    ok(capsys, "kv", "put", "CFG", "color", "red", *s)
    ok(capsys, "kv", "put", "CFG", "color", "blue", *s)
    assert ok(capsys, "kv", "get", "CFG", "color", "--raw", *s) == "blue\n"
    assert ok(capsys, "kv", "ls", "CFG", *s) == "color\n"
    ok(capsys, "kv", "del", "CFG", "color", *s)
    assert main(["kv", "get", "CFG", "color", *s]) == 1
    assert capsys.readouterr().err == "jsstore: key not found\n"

    async def read_back():         # nats-py's KeyValue reads what the command wrote
        nc = await nats.connect(server.url)
        kv = await nc.jetstream().key_value("CFG")
        history = [(e.value, e.operation) for e in await kv.history("color")]
        await nc.close()
        return history
    assert run(read_back()) == [(b"red", None), (b"blue", None), (b"", "DEL")]


def test_sub_receives_what_pub_sends(server):
    env = {**os.environ, "PYTHONPATH": SRC}
    sub = subprocess.Popen([sys.executable, "-m", "jsstore", "sub", "greet.>", "--count", "1",
                            "--raw", "--server", server.url], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        # publish until the subscriber (starting up in its own process) has one
        for _ in range(600):
            subprocess.run([sys.executable, "-m", "jsstore", "pub", "greet.x", "hello",
                            "--server", server.url], env=env, capture_output=True, timeout=60)
            try:
                out, err = sub.communicate(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            raise AssertionError("sub never received a message")
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    assert sub.returncode == 0 and out == "hello\n", err


def test_connection_failures_are_one_line(capsys):
    code = main(["stream", "ls", "--server", "nats://127.0.0.1:1"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("jsstore: could not connect to nats://127.0.0.1:1")
    assert len(err.splitlines()) == 1


def test_object_store(server, tmp_path, capsys):
    s = ("--server", server.url)
    blob = tmp_path / "blob.bin"
    blob.write_bytes(os.urandom(300_000))
    ok(capsys, "obj", "add", "FILES", *s)
    ok(capsys, "obj", "put", "FILES", str(blob), "--name", "b", *s)
    listed = json.loads(ok(capsys, "obj", "ls", "FILES", "--json", *s))
    assert [(o["name"], o["size"]) for o in listed] == [("b", 300_000)]
    ok(capsys, "obj", "get", "FILES", "b", "-O", str(tmp_path / "copy"), *s)
    assert (tmp_path / "copy").read_bytes() == blob.read_bytes()

    async def read_back():         # nats-py's ObjectStore reads what the command stored
        nc = await nats.connect(server.url)
        result = await (await nc.jetstream().object_store("FILES")).get("b")
        await nc.close()
        return result.data
    assert run(read_back()) == blob.read_bytes()
    ok(capsys, "obj", "rm", "FILES", "b", "-f", *s)
    assert main(["obj", "get", "FILES", "b", *s]) == 1
    assert capsys.readouterr().err == "jsstore: object not found\n"


def test_bench(server, capsys):
    out = ok(capsys, "bench", "bench.x", "--msgs", "200", "--size", "32", "--batch", "64",
             "--server", server.url)
    assert [line.split(":")[0] for line in out.splitlines()[1:]] == ["Pub stats", "Sub stats"]
    info = request(server.url, "$JS.API.STREAM.INFO.benchstream")
    assert info["state"]["messages"] == 200 and info["state"]["consumer_count"] == 0


def test_kv_watch_follows_changes(server, capsys):
    s = ("--server", server.url)
    ok(capsys, "kv", "add", "CFG", *s)
    ok(capsys, "kv", "put", "CFG", "color", "red", *s)
    env = {**os.environ, "PYTHONPATH": SRC}
    watch = subprocess.Popen([sys.executable, "-m", "jsstore", "kv", "watch", "CFG", "--count",
                              "1", "--server", server.url], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        for n in range(600):     # put until the watcher (its own process) has seen a change
            ok(capsys, "kv", "put", "CFG", "size", f"v{n}", *s)
            try:
                out, err = watch.communicate(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            raise AssertionError("kv watch never saw a change")
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    lines = out.splitlines()
    assert watch.returncode == 0, err
    assert lines[0] == "[PUT] CFG > color revision 1: red"
    assert lines[-1].startswith("[PUT] CFG > size: v")
