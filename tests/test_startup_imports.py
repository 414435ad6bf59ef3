"""What ``jsstore serve`` and ``import jsstore`` load before they are asked for anything.

``jsstore serve`` on an empty store directory reaches ``Server is ready`` without the
``$JS.API`` handlers, the streams', consumers' and stores' machinery, the nats CLI verbs,
the asyncio API, the buckets, the monitor, the API error table or the heavy Cython
extensions: they load when a request, a stream or a consumer needs them (issue 20:
start-up and idle memory).  Each test runs the real command path in a fresh interpreter
and reads ``sys.modules`` at that moment, so a change that brings an eager import back
fails here.  The first request then loads what it needs and is answered as before.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")

# loaded by no server start on an empty store directory (prefixes: the module or a child)
DEFERRED = [
    "jsstore.api", "jsstore.aio", "jsstore.buckets", "jsstore.spark",
    "jsstore.cli.verbs", "jsstore.cli.streams", "jsstore.cli.consumers", "jsstore.cli.kv",
    "jsstore.cli.objects", "jsstore.cli.backup", "jsstore.cli.connection",
    "jsstore.stream.stream", "jsstore.stream.batches", "jsstore.stream.expiry",
    "jsstore.stream.sources", "jsstore.stream.configchecks", "jsstore.stream.advisories",
    "jsstore.consumer", "jsstore.jetstream.pullsub", "jsstore.state",
    "jsstore.store.contract", "jsstore.store.filestore", "jsstore.store.memstore",
    "jsstore.store.consumerstore", "jsstore.store.syncgroup", "jsstore.wire.apierrors",
    "jsstore.wire.ackreply",
    "jsstore.server.monitor", "jsstore.server.durable", "jsstore.server.options",
    "jsstore.server.tlsconfig", "jsstore.server.tls", "jsstore.server.nkey",
    "jsstore.server.certmap", "jsstore._core.storage.block", "jsstore._core.storage.engine",
    "jsstore._core.storage.ackstate", "jsstore._core.columns.arrowblock",
    "jsstore._core.storage.queries", "jsstore._core.storage.compress",
    "jsstore._core.storage.faults", "jsstore._core.storage.hashing",
    "pyspark", "pyarrow", "nats", "tempfile", "argparse", "encodings.idna", "stringprep",
    "shutil", "bz2", "lzma",
    # the server's own event loop, and loggers that load logging when something is logged
    "asyncio", "uvloop", "ssl", "_ssl", "concurrent", "logging", "traceback", "dataclasses",
    "inspect",
]

# runs `jsstore serve ARGS` through the command's own entry point; at "Server is ready" it
# writes the loaded modules to the file named by argv[1] and stops the server (SIGTERM)
SERVE_AND_REPORT = r"""
import json, os, signal, sys
from jsstore.cli import main
from jsstore.cli import serve
report, args = sys.argv[1], sys.argv[2:]
info = serve.Log.info
def info_then_report(self, text):
    info(self, text)
    if text == "Server is ready":
        with open(report + ".part", "w") as f:
            json.dump(sorted(sys.modules), f)
        os.replace(report + ".part", report)     # whole, once it is there
        if not os.environ.get("KEEP_SERVING"):
            os.kill(os.getpid(), signal.SIGTERM)
serve.Log.info = info_then_report
sys.exit(main(["serve", *args]))
"""


def child_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = SRC
    return env


def deferred_loaded(modules: list[str]) -> list[str]:
    return sorted(m for m in modules
                  if any(m == d or m.startswith(d + ".") for d in DEFERRED))


def serve_modules(tmp_path, *args: str) -> list[str]:
    report = tmp_path / "modules.json"
    out = subprocess.run([sys.executable, "-c", SERVE_AND_REPORT, str(report),
                          "-a", "127.0.0.1", "-p", "-1", *args],
                         env=child_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Server is ready" in out.stderr
    return json.loads(report.read_text())


def test_serve_on_an_empty_store_loads_nothing_it_defers(tmp_path):
    modules = serve_modules(tmp_path, "-js", "-sd", str(tmp_path / "store"))
    assert "jsstore.server.server" in modules and "jsstore.jetstream.account" in modules
    assert deferred_loaded(modules) == []


def test_serve_without_jetstream_loads_nothing_it_defers(tmp_path):
    modules = serve_modules(tmp_path)
    assert "jsstore.server.server" in modules
    assert deferred_loaded(modules) == []


def test_serve_on_a_store_with_a_stream_loads_the_stream_machinery(tmp_path):
    """Recovery needs what a stream is made of: the deferred modules do load then."""
    store = tmp_path / "store"
    setup = ("import jsstore, sys\n"
             "js = jsstore.open(sys.argv[1])\n"
             "js.add_stream(name='S', subjects=['s.>'])\n"
             "js.publish('s.1', b'x')\n"
             "js.close()\n")
    subprocess.run([sys.executable, "-c", setup, str(store)], env=child_env(), check=True,
                   timeout=120)
    modules = serve_modules(tmp_path, "-js", "-sd", str(store))
    assert {"jsstore.stream.stream", "jsstore.store.filestore"} <= set(modules)
    assert "jsstore.api.router" not in modules


def _request(port: int, subject: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.settimeout(30)
        data = b""
        while not data.endswith(b"\r\n"):
            data += sock.recv(4096)
        sock.sendall(b'CONNECT {"verbose":false}\r\nSUB _INBOX.t 1\r\n'
                     + f"PUB {subject} _INBOX.t 0\r\n\r\n".encode())
        data = b""
        while not (b"MSG _INBOX.t" in data and data.endswith(b"}\r\n")):
            data += sock.recv(65536)
        return data


@pytest.mark.parametrize("subject", ["$JS.API.INFO", "$JS.API.STREAM.NAMES"])
def test_the_first_api_request_loads_the_handlers_and_is_answered(tmp_path, subject):
    report = tmp_path / "modules.json"
    env = {**child_env(), "KEEP_SERVING": "1"}
    proc = subprocess.Popen([sys.executable, "-c", SERVE_AND_REPORT, str(report),
                             "-a", "127.0.0.1", "-p", "-1", "-js", "-sd",
                             str(tmp_path / "store")],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        for line in proc.stderr:
            if "Listening for client connections on" in line:
                port = int(line.rsplit(":", 1)[1])
            if "Server is ready" in line:
                break
        assert port is not None
        deadline = time.monotonic() + 30
        while not report.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert deferred_loaded(json.loads(report.read_text())) == []
        answer = _request(port, subject)
        body = json.loads(answer.split(b"\r\n")[1])
        expected = ("io.nats.jetstream.api.v1.account_info_response" if subject.endswith("INFO")
                    else "io.nats.jetstream.api.v1.stream_names_response")
        assert body["type"] == expected
        assert "error" not in body
    finally:
        proc.terminate()
        proc.wait(30)


def test_import_jsstore_loads_only_its_face():
    code = ("import json, sys, jsstore\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('jsstore'))))\n"
            "from jsstore import FileStore, StreamConfig, open, errors, stream_dir\n"
            "print(FileStore.__name__, StreamConfig.__name__, open.__module__,\n"
            "      errors.__name__, stream_dir.__module__)\n"
            "missing = [n for n in jsstore.__all__ if not hasattr(jsstore, n)]\n"
            "print(json.dumps(missing))\n")
    out = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    first, names, missing = out.stdout.splitlines()
    assert json.loads(first) == ["jsstore", "jsstore.jetstream", "jsstore.jetstream.plugs",
                           "jsstore.version"]
    assert names.split() == ["FileStore", "StreamConfig", "jsstore.jetstream.account",
                             "jsstore.errors", "jsstore.store.layout"]
    assert json.loads(missing) == []


def test_an_unknown_public_name_is_an_attribute_error():
    import jsstore
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        jsstore.NoSuchThing


def _command_names(top) -> set[str]:
    (commands,) = [a for a in top._actions if a.__class__.__name__ == "_SubParsersAction"]
    return set(commands.choices) - {"serve", "export"}


def test_each_command_names_the_family_that_registers_it():
    from jsstore.cli import verbs
    for family in verbs.FAMILY_NAMES:
        assert _command_names(verbs.parser(family)) == {
            command for command, owner in verbs.COMMANDS.items() if owner == family}, family
    assert _command_names(verbs.parser()) == set(verbs.COMMANDS)


def test_a_verb_loads_only_its_own_family(tmp_path):
    code = ("import json, sys\n"
            "from jsstore.cli import main\n"
            "status = main(['stream', 'ls', '--store', sys.argv[1]])\n"
            "print(status, json.dumps(sorted(m for m in sys.modules\n"
            "                                if m.startswith('jsstore.cli.'))))\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "store")],
                         env=child_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    status, loaded = out.stdout.strip().splitlines()[-1].split(" ", 1)
    assert status == "0"
    loaded = json.loads(loaded)
    assert "jsstore.cli.streams" in loaded and "jsstore.cli.local" in loaded
    for other in ("kv", "objects", "backup", "verify", "bench", "consumers", "messaging",
                  "remote", "serve"):
        assert f"jsstore.cli.{other}" not in loaded


def test_a_core_publish_does_not_make_the_router_while_there_is_no_stream(tmp_path):
    """A server's first core publish on an empty JetStream costs no API handlers (their
    import took 15 ms with bytecode cached, 100 ms without); the first request does."""
    import jsstore
    from inprocess import Conn, frames
    from jsstore.server import Server
    from jsstore.server.accounts import _RouterToBe
    js = jsstore.open(tmp_path / "store", timers=False)
    try:
        server = Server(js, host="127.0.0.1", port=-1)
        account = server.global_account
        conn = Conn(server)
        conn.feed(b"SUB m 7\r\nPUB m 2\r\nhi\r\nPUB m _INBOX.t.1 2\r\nho\r\n")
        assert [(f[1], f[3]) for f in frames(conn.read())] == [("7", b"hi"), ("7", b"ho")]
        assert isinstance(account.router, _RouterToBe)
        conn.feed(conn.request("$JS.API.INFO", b""))
        (answer,) = frames(conn.read())
        assert json.loads(answer[3])["type"] == "io.nats.jetstream.api.v1.account_info_response"
        assert not isinstance(account.router, _RouterToBe)
        js.add_stream(name="S", subjects=["s.>"])
        conn.feed(conn.request("s.a", b"x"))
        assert json.loads(frames(conn.read())[0][3]) == {"stream": "S", "seq": 1}
    finally:
        js.close()


def test_a_publish_a_stream_captures_makes_the_router(tmp_path):
    import jsstore
    from inprocess import Conn, frames
    from jsstore.server import Server
    from jsstore.server.accounts import _RouterToBe
    js = jsstore.open(tmp_path / "store", timers=False)
    try:
        js.add_stream(name="S", subjects=["s.>"])
        server = Server(js, host="127.0.0.1", port=-1)
        conn = Conn(server)
        assert isinstance(server.global_account.router, _RouterToBe)
        conn.feed(conn.request("s.a", b"x"))
        assert json.loads(frames(conn.read())[0][3]) == {"stream": "S", "seq": 1}
        assert js.stream_info("S").state.messages == 1
    finally:
        js.close()
