"""jsstore.testing as shipped: its pytest plugin's fixtures (registered by conftest.py or
the installed entry point), the server it starts, what importing it pulls in, and the
entry point pyproject.toml declares."""

from __future__ import annotations

import asyncio
import os
from importlib import metadata
import socket
import subprocess
import sys
import tomllib

import nats

from jsstore.testing.server import start_jsstore_server

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_jetstream_sync(jetstream_sync, tmp_path):
    assert jetstream_sync.directory.startswith(str(tmp_path))
    jetstream_sync.add_stream(name="S", subjects=["s.>"])
    ack = jetstream_sync.publish("s.1", b"hello")
    assert jetstream_sync.get_msg("S", ack.seq).data == b"hello"


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


def test_jsstore_server(jsstore_server):
    assert jsstore_server.startswith("nats://127.0.0.1:")
    assert asyncio.run(_round_trip(jsstore_server, "F")) == (b"one", b"v")


def test_jsstore_server_session(jsstore_server_session):
    assert asyncio.run(_round_trip(jsstore_server_session, "G")) == (b"one", b"v")


def test_the_server_is_stopped_by_pid(tmp_path):
    server = start_jsstore_server(tmp_path / "store")
    try:
        assert server.process.poll() is None
    finally:
        code = server.stop()
        os.unlink(server.log_path)
    assert code == 0                     # SIGTERM: a clean stop
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", server.port)) != 0


def test_importing_jsstore_needs_no_test_dependencies():
    probe = ("import sys, jsstore, jsstore.testing; "
             "print(sorted(m for m in ('pytest', 'hypothesis') if m in sys.modules)); "
             "import jsstore.testing.plugin; print('hypothesis' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=env, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "False"]


def test_the_plugin_entry_point_is_declared():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["entry-points"]["pytest11"] == {"jsstore": "jsstore.testing.plugin"}


def test_the_asyncio_fixture_serves_any_event_loop(jetstream):
    """Made outside a loop, it answers in each loop a test runs: here two in a row."""
    async def create():
        await jetstream.add_stream(name="S", subjects=["s.>"])
        return await jetstream.publish("s.a", b"one")

    async def read():
        sub = await jetstream.pull_subscribe("s.>", "D")
        msgs = await sub.fetch(1, timeout=1)
        await msgs[0].ack()
        return msgs[0].data

    assert asyncio.run(create()).seq == 1
    assert asyncio.run(read()) == b"one"


THIRD_PARTY = '''
import jsstore
from jsstore.testing import StreamStoreContract


class TestMyStore(StreamStoreContract):
    storage = "memory"
    reopens = False
    model_examples = 10

    def open_store(self, directory, config):
        return jsstore.MemStore(config)


def test_against_a_server(jsstore_server):
    assert jsstore_server.startswith("nats://127.0.0.1:")


def test_embedded(jetstream_sync):
    assert jetstream_sync.add_stream(name="S", subjects=["s"]).config.name == "S"


def test_embedded_asyncio(jetstream):
    import asyncio

    async def body():
        await jetstream.add_stream(name="S", subjects=["s"])
        return (await jetstream.publish("s", b"x")).seq
    assert asyncio.run(body()) == 1
'''


def test_a_project_of_its_own_uses_the_kit_and_the_fixtures(tmp_path):
    """Outside jsstore's tests (no conftest of ours): the plugin loaded as the entry point
    would load it, the kit in a few lines."""
    (tmp_path / "test_mine.py").write_text(THIRD_PARTY)
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")}
    installed = any(ep.value == "jsstore.testing.plugin"
                    for ep in metadata.entry_points(group="pytest11"))
    load = [] if installed else ["-p", "jsstore.testing.plugin"]   # the entry point loads it
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", *load,
                          "-p", "no:cacheprovider", "test_mine.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "47 passed" in run.stdout
