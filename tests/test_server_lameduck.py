"""Lame duck mode (SIGUSR2, or `--signal ldm=<pid>`), against `jsstore serve` and
nats-server alike: no new clients, an INFO with ldm to protocol-1 clients, the clients
closed after the grace period, then a clean exit."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import pytest

from jsstoreserver import start_jsstore_server
from natsserver import require_nats_server, start_nats_server

pytestmark = pytest.mark.natsserver

CONFIG = 'lame_duck_duration: "30s"\nlame_duck_grace_period: "300ms"\n'


@pytest.fixture(params=["jsstore", "nats-server"])
def ldm_server(request, tmp_path):
    conf = tmp_path / "ldm.conf"
    conf.write_text(CONFIG)
    if request.param == "jsstore":
        server = start_jsstore_server(tmp_path / "store", ["-c", str(conf)])
    else:
        require_nats_server()
        server = start_nats_server(tmp_path / "store", ["-c", str(conf)])
    yield request.param, server
    server.stop()


def _lines_until_closed(sock: socket.socket, timeout: float) -> list[bytes]:
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return data.split(b"\r\n")


def test_lame_duck_mode(ldm_server):
    kind, server = ldm_server
    old = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    old.sendall(b'CONNECT {"verbose":false,"protocol":1}\r\nPING\r\n')
    time.sleep(0.2)
    if kind == "jsstore":              # our own command sends the signal
        subprocess.run([sys.executable, "-m", "jsstore", "serve",
                        f"--signal=ldm={server.pid}"], check=True,
                       env={"PYTHONPATH": "src"}, cwd=_root())
    else:
        server.process.send_signal(signal.SIGUSR2)
    started = time.monotonic()
    lines = _lines_until_closed(old, 10)
    closed_after = time.monotonic() - started
    old.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
    code = server.process.wait(10)
    log = server.log_text()
    infos = [json.loads(line[5:]) for line in lines if line.startswith(b"INFO ")]
    # the first INFO, the update after CONNECT naming the account, then lame duck's
    assert [(i.get("connect_info"), i.get("remote_account"), i.get("ldm")) for i in infos] == [
        (None, None, None), (True, "$G", None), (None, None, True)]
    assert b"PONG" in lines
    assert 0.25 <= closed_after < 5
    assert code == 0
    for text in ('Trapped "user defined signal 2" signal',
                 "Entering lame duck mode, stop accepting new clients",
                 "Closing existing clients", "Initiating Shutdown...", "Server Exiting.."):
        assert text in log


@pytest.mark.parametrize("kind", ["jsstore", "nats-server"])
def test_lame_duck_mode_without_clients_shuts_down_at_once(tmp_path, kind):
    """No client to tell or close: nats-server shuts down without waiting the grace
    period (and without "Closing existing clients")."""
    conf = tmp_path / "ldm.conf"
    conf.write_text('lame_duck_duration: "30s"\nlame_duck_grace_period: "20s"\n')
    if kind == "jsstore":
        server = start_jsstore_server(tmp_path / "store", ["-c", str(conf)])
    else:
        require_nats_server()
        server = start_nats_server(tmp_path / "store", ["-c", str(conf)])
    try:
        started = time.monotonic()
        server.process.send_signal(signal.SIGUSR2)
        code = server.process.wait(15)
        took = time.monotonic() - started
        log = server.log_text()
    finally:
        server.stop()
    assert code == 0 and took < 15
    assert "Entering lame duck mode, stop accepting new clients" in log
    assert "Closing existing clients" not in log
    assert "Server Exiting.." in log


def test_a_too_short_lame_duck_duration_is_refused(tmp_path):
    conf = tmp_path / "short.conf"
    conf.write_text('lame_duck_duration: "2s"\n')
    done = subprocess.run([sys.executable, "-m", "jsstore", "serve", "-c", str(conf)],
                          capture_output=True, text=True, env={"PYTHONPATH": "src"},
                          cwd=_root(), timeout=30)
    assert done.returncode != 0
    assert "invalid lame_duck_duration of 2s, minimum is 30 seconds" in done.stderr


def _root() -> str:
    import os
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
