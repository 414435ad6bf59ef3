"""Servers forked from the test zygote (jsstore.testing.zygote, the plugin's
jsstore_forked_server and --jsstore-fork): each is a whole ``jsstore serve`` of its own
(its port, its store directory, its log, its pid to stop it by), two from one zygote do
not share anything, one that fails to start says why, and a zygote that dies is loud."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from importlib import metadata

import nats
import pytest

from jsstore.testing.zygote import PRELOAD, Zygote, ZygoteError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")


async def _round_trip(url: str, stream: str) -> tuple[bytes, bytes]:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        await js.add_stream(name=stream, subjects=[f"{stream}.>"])
        await js.publish(f"{stream}.a", b"one")
        sub = await js.pull_subscribe(f"{stream}.>", "D")
        (msg,) = await sub.fetch(1, timeout=5)
        await msg.ack()
        kv = await js.create_key_value(bucket=f"KV{stream}")
        await kv.put("k", b"v")
        return msg.data, (await kv.get("k")).value
    finally:
        await nc.close()


async def _stream_names(url: str) -> list[str]:
    nc = await nats.connect(url)
    try:
        answer = await nc.request("$JS.API.STREAM.NAMES", b"", timeout=5)
        return json.loads(answer.data)["streams"] or []
    finally:
        await nc.close()


def _refused(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _ended(pid: int) -> bool:
    """Whether process `pid` has ended (gone, or a zombie nobody has reaped yet)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(line for line in f if line.startswith("State:")).split()[1] == "Z"
    except FileNotFoundError:
        return True


def _stream_dirs(store_dir: str) -> list[str]:
    path = os.path.join(store_dir, "jetstream", "$G", "streams")
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


@pytest.fixture
def zygote():
    """A zygote of the test's own (the session's is jsstore_zygote)."""
    made = Zygote()
    try:
        yield made
    finally:
        if made.process.poll() is None:
            made.close()


def test_a_forked_server_serves_on_its_own_store(jsstore_forked_server):
    server = jsstore_forked_server
    assert server.url == f"nats://127.0.0.1:{server.port}"
    assert asyncio.run(_round_trip(server.url, "F")) == (b"one", b"v")
    assert "F" in _stream_dirs(server.store_dir)
    log = server.log_text()
    assert f"[{server.pid}] " in log and "Server is ready" in log
    assert f"Listening for client connections on 127.0.0.1:{server.port}" in log
    assert server.process.poll() is None


def test_a_forked_server_is_stopped_by_its_pid(zygote, tmp_path):
    server = zygote.serve(tmp_path / "store")
    try:
        os.kill(server.pid, signal.SIGTERM)
        assert server.process.wait(15) == 0          # a clean stop, as jsstore serve's
        assert server.stop() == 0                    # (twice is fine)
        assert "Server Exiting.." in server.log_text()
        assert _refused(server.port)
    finally:
        os.unlink(server.log_path)


def test_two_servers_of_one_zygote_are_independent(zygote, tmp_path):
    one = zygote.serve(tmp_path / "one")
    two = zygote.serve(tmp_path / "two")
    try:
        assert len({one.pid, two.pid, zygote.process.pid, os.getpid()}) == 4
        assert one.port != two.port
        asyncio.run(_round_trip(one.url, "ONE"))
        assert asyncio.run(_stream_names(two.url)) == []
        assert _stream_dirs(one.store_dir) == ["KV_KVONE", "ONE"]
        assert _stream_dirs(two.store_dir) == []
        assert one.stop() == 0
        assert asyncio.run(_round_trip(two.url, "TWO")) == (b"one", b"v")
        assert two.process.poll() is None
        assert "Server Exiting.." not in two.log_text()
    finally:
        for server in (one, two):
            server.stop()
            os.unlink(server.log_path)


def test_a_server_that_does_not_start_says_why(zygote, tmp_path):
    with pytest.raises(RuntimeError, match="exited with status 2:\n"
                                           "jsstore: flag provided but not defined: -nope"):
        zygote.serve(tmp_path / "store", ["--nope"])
    server = zygote.serve(tmp_path / "store")         # the zygote serves on
    assert server.stop() == 0
    os.unlink(server.log_path)


def test_extra_arguments_reach_the_server(zygote, tmp_path):
    server = zygote.serve(tmp_path / "store", ["-n", "named-by-the-test"])
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            info = sock.recv(4096)
        assert b'"server_name":"named-by-the-test"' in info
    finally:
        server.stop()
        os.unlink(server.log_path)


def test_a_forked_server_has_the_tests_directory_and_environment(zygote, tmp_path,
                                                                  monkeypatch):
    """As a server the test ran would: a relative -c path, and the configuration's
    $VARIABLE from the environment the test set after the zygote started."""
    (tmp_path / "server.conf").write_text("server_name: $NAME_FROM_THE_TEST\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NAME_FROM_THE_TEST", "set-by-the-test")
    server = zygote.serve(tmp_path / "store", ["-c", "server.conf"])
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            info = sock.recv(4096)
        assert b'"server_name":"set-by-the-test"' in info
    finally:
        server.stop()
        os.unlink(server.log_path)


def test_a_zygote_that_dies_is_loud(zygote, tmp_path):
    server = zygote.serve(tmp_path / "before")
    try:
        os.kill(zygote.process.pid, signal.SIGKILL)
        zygote.process.wait(15)
        with pytest.raises(ZygoteError, match=r"is gone: it exited with status -9"):
            zygote.serve(tmp_path / "after")
        # what it forked serves on, and is still stopped by its pid; its exit status is lost
        assert asyncio.run(_round_trip(server.url, "ORPHAN")) == (b"one", b"v")
        with pytest.raises(ZygoteError, match="exit status unknown"):
            server.stop()
        assert _refused(server.port)
        with pytest.raises(ZygoteError, match="exited with status -9"):
            zygote.close()
    finally:
        assert _ended(server.pid)
        os.unlink(server.log_path)


def test_closing_the_zygote_stops_its_servers(tmp_path):
    zygote = Zygote()
    server = zygote.serve(tmp_path / "store")
    zygote.close()
    assert _refused(server.port)
    assert _ended(server.pid)
    assert server.process.returncode == 0
    assert "Server Exiting.." in server.log_text()
    os.unlink(server.log_path)


# a server in a process that has imported what the zygote imports: at its end it writes the
# modules it imported after it was ready to the file argv[1]
PRELOADED_SERVER = r"""
import importlib, json, sys
from jsstore.testing.zygote import PRELOAD
for name in PRELOAD:
    importlib.import_module(name)
from jsstore.cli.serve import serve_main
at_ready = set()
def ready(server):
    at_ready.update(sys.modules)
    sys.stdout.write(f"{server.port}\n")
    sys.stdout.flush()
serve_main(sys.argv[2:], on_ready=ready)
with open(sys.argv[1], "w") as f:
    json.dump(sorted(set(sys.modules) - at_ready), f)
"""


async def _first_requests(url: str) -> None:
    """What tests usually ask of a server first: streams of both storages, pull and push
    consumers, acks, a direct get, a key-value bucket and an object store."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        await js.account_info()
        for name, storage in (("FILE", "file"), ("MEM", "memory")):
            await js.add_stream(name=name, subjects=[f"{name}.>"], storage=storage)
            await js.publish(f"{name}.a", b"one", headers={"Nats-Msg-Id": "1"})
            pull = await js.pull_subscribe(f"{name}.>", "PULL")
            (msg,) = await pull.fetch(1, timeout=5)
            await msg.ack()
            push = await js.subscribe(f"{name}.>", durable="PUSH")
            await (await push.next_msg(5)).ack()
            await js.get_msg(name, 1)
            await js.consumer_info(name, "PULL")
            await js.purge_stream(name)
            await js.delete_consumer(name, "PULL")
            await js.delete_stream(name)
        kv = await js.create_key_value(bucket="KV")
        await kv.put("k", b"v")
        await kv.get("k")
        objects = await js.create_object_store("OBJ")
        await objects.put("o", b"data")
        await objects.get("o")
    finally:
        await nc.close()


def test_the_zygote_imports_what_a_servers_first_requests_need(tmp_path):
    """Else every forked server would import it again, on a test's first request."""
    report = tmp_path / "imported.json"
    env = {**os.environ, "PYTHONPATH": SRC}
    process = subprocess.Popen([sys.executable, "-c", PRELOADED_SERVER, str(report),
                                "-a", "127.0.0.1", "-p", "-1", "-js", "-sd",
                                str(tmp_path / "store")],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env=env)
    try:
        port = int(process.stdout.readline())
        asyncio.run(_first_requests(f"nats://127.0.0.1:{port}"))
    finally:
        process.terminate()
        process.wait(30)
    assert json.loads(report.read_text()) == []


def _listener_pid(port: int) -> int:
    """The process with a socket listening on 127.0.0.1:`port` (from /proc)."""
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    (inode,) = [row[9] for row in rows
                if row[1] == f"0100007F:{port:04X}" and row[3] == "0A"]    # LISTEN
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return int(pid)
            except OSError:
                continue
    raise AssertionError(f"no process listens on port {port}")


FORKING_PROJECT = r'''
import os
from urllib.parse import urlparse

from test_testing_zygote import _listener_pid


def parent(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("PPid:")).split()[1])


def test_jsstore_server_is_forked(jsstore_server, jsstore_zygote):
    pid = _listener_pid(urlparse(jsstore_server).port)
    assert parent(pid) == jsstore_zygote.process.pid


def test_the_session_server_is_forked(jsstore_server_session, jsstore_zygote):
    pid = _listener_pid(urlparse(jsstore_server_session).port)
    assert parent(pid) == jsstore_zygote.process.pid
'''


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads /proc")
@pytest.mark.parametrize("how", [["--jsstore-fork"], ["-o", "jsstore_fork=true"], []])
def test_jsstore_fork_makes_the_server_fixtures_fork(tmp_path, how):
    (tmp_path / "test_forking.py").write_text(FORKING_PROJECT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.path.dirname(__file__)])}
    installed = any(ep.value == "jsstore.testing.plugin"
                    for ep in metadata.entry_points(group="pytest11"))
    load = [] if installed else ["-p", "jsstore.testing.plugin"]   # the entry point loads it
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", *load,
                          "-p", "no:cacheprovider", *how, "test_forking.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    if how:
        assert run.returncode == 0, run.stdout + run.stderr
        assert "2 passed" in run.stdout
    else:                   # without it they run jsstore serve, as they always have
        assert "2 failed" in run.stdout, run.stdout + run.stderr
