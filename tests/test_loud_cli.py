"""The command line's everyday errors: --help everywhere, nats-server's words for a bad flag
value, every nats-server flag jsstore does not do refused by name, one line per failure with
no client library's exception class in it, the same answer from a store directory and from
a server, and Ctrl-C quiet."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from jsstoreserver import SRC, jsstore_server
from natsserver import require_nats_server

from jsstore.cli import serve

ENV = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _jsstore(*args, cwd=None, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jsstore", *args], capture_output=True,
                          text=True, env=ENV, cwd=cwd, timeout=timeout)


def _nats(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([require_nats_server(), *args], capture_output=True, text=True,
                          cwd=cwd, timeout=30)


@pytest.mark.parametrize("flag", ["-h", "--help", "-help"])
def test_serve_help_lists_every_flag(flag):
    done = _jsstore("serve", flag)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("Usage: jsstore serve [options]")
    listed = set(re.findall(r"(?<![\w-])--?([\w-]+)", done.stdout))
    assert set(serve.FLAGS) - {"name", "store-factory", "addr", "net"} <= listed | {
        "store_factory", "name"}
    assert _nats(flag).returncode == 0


def test_a_bad_flag_value_gets_nats_servers_words():
    ours, theirs = _jsstore("serve", "-p", "notaport"), _nats("-p", "notaport")
    words = 'invalid value "notaport" for flag -p: parse error'
    assert words in theirs.stdout + theirs.stderr
    assert ours.returncode == 2 and ours.stderr == f"jsstore: {words}\n"


def test_every_refused_flag_is_named_and_is_nats_servers():
    usage = _nats("-h").stdout + _nats("-h").stderr
    for flag, reason in serve.REFUSED_FLAGS.items():
        dashes = "-" if len(flag) <= 3 else "--"
        assert re.search(rf"(?<![\w-]){dashes}{re.escape(flag)}\b", usage), flag
        with pytest.raises(serve.UsageError, match=f"-{flag} is not supported by jsstore"):
            serve.parse_flags([f"-{flag}"])


@pytest.mark.parametrize("text, status", [("port: 4222\n", 0), ("prot: 4222\n", 1)])
def test_test_config_flag_as_nats_server(tmp_path, text, status):
    (tmp_path / "t.conf").write_text(text)
    ours = _jsstore("serve", "-c", "t.conf", "-t", cwd=tmp_path)
    theirs = _nats("-c", "t.conf", "-t", cwd=tmp_path)
    assert (ours.returncode, theirs.returncode) == (status, status)
    if status:
        assert 't.conf:1:0: unknown field "prot"' in ours.stderr
        assert 't.conf:1:0: unknown field "prot"' in theirs.stdout + theirs.stderr
    else:
        assert "is valid" in ours.stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with jsstore_server(tmp_path_factory.mktemp("cli-server")) as srv:
        yield srv


def _both(server, tmp_path, *args):
    """(status, stderr) of the command on a store directory and against a server."""
    local = _jsstore(*args, "--store", str(tmp_path / "store"))
    remote = _jsstore(*args, "--server", server.url)
    return (local.returncode, local.stderr), (remote.returncode, remote.stderr)


def test_missing_consumers_and_streams_answer_alike(server, tmp_path):
    local, remote = _both(server, tmp_path, "consumer", "next", "NOPE", "c")
    assert local == remote == (1, "jsstore: stream not found (404, error code 10059)\n")
    _both(server, tmp_path, "stream", "add", "S", "--subjects", "s.>")
    started = time.monotonic()
    local, remote = _both(server, tmp_path, "consumer", "next", "S", "nope")
    assert local == remote == (1, "jsstore: consumer not found (404, error code 10014)\n")
    assert time.monotonic() - started < 30      # (not waited out: it used to take 5 s)


@pytest.mark.parametrize("args, words", [
    (("stream", "add", "a.b", "--subjects", "x"), "invalid name 'a.b'"),
    (("stream", "info", "a b"), "invalid name 'a b'"),
    (("consumer", "info", "S", "c.d"), "invalid name 'c.d'"),
    (("kv", "get", "b*", "k"), "invalid name 'b*'"),
    (("pub", "a b", "x"), "invalid subject 'a b'"),
    (("pub", "", "x"), "invalid subject ''"),
])
def test_bad_names_and_subjects_are_refused_at_once(server, tmp_path, args, words):
    local, remote = _both(server, tmp_path, *args)
    assert local == remote
    status, stderr = local
    assert status == 2 and words in stderr and stderr.count("\n") == 1
    assert "Error:" not in stderr       # (nats-py's BadSubjectError leaked before)


@pytest.mark.parametrize("args", [("sub", "foo"), ("kv", "watch", "B")])
def test_ctrl_c_is_quiet(server, args):
    """(in a store directory, sub is refused at once and kv watch ends after the history:
    there is no live traffic to wait for)"""
    if args[0] == "kv":
        _jsstore("kv", "add", "B", "--server", server.url)
    process = subprocess.Popen([sys.executable, "-m", "jsstore", *args, "--server",
                                server.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=ENV)
    time.sleep(2.0)                 # (connected and waiting; the outcome does not depend on it)
    assert process.poll() is None
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert err == ""


def test_reload_and_reopen_signals_keep_the_server(tmp_path):
    """--signal reload (SIGHUP) is refused in the log and the server goes on (the default
    action of SIGHUP ended it without a word); --signal reopen (SIGUSR1) reopens -l's file,
    as nats-server does after a rotation."""
    log = tmp_path / "server.log"
    process = subprocess.Popen([sys.executable, "-m", "jsstore", "serve", "-a", "127.0.0.1",
                                "-p", "-1", "-js", "-sd", str(tmp_path / "store"), "-l",
                                str(log)], env=ENV, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        def wait_for(path, words):
            deadline = time.monotonic() + 20
            while not (path.exists() and words in path.read_text()):
                assert time.monotonic() < deadline and process.poll() is None
                time.sleep(0.05)
        wait_for(log, "Server is ready")
        port = re.search(r"client connections on [\d.]+:(\d+)", log.read_text()).group(1)
        assert _jsstore("serve", "--signal", f"reload={process.pid}").returncode == 0
        wait_for(log, "Configuration reload is not supported")
        os.rename(log, tmp_path / "server.log.1")
        assert _jsstore("serve", "--signal", f"reopen={process.pid}").returncode == 0
        wait_for(log, "File log re-opened")
        assert process.poll() is None
        assert _jsstore("stream", "ls", "--server", f"nats://127.0.0.1:{port}").returncode == 0
    finally:
        process.terminate()
        process.wait(10)
