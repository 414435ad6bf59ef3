"""A NATS server as a child process for tests: started on a free loopback port (``-p -1``,
the port read from its "Listening for client connections on" log line), ready once it
sends INFO to a new connection, stopped by its process id.  ``start_jsstore_server`` runs
``python -m jsstore serve`` with the jsstore this process imported; ``start_server`` runs any
command that speaks nats-server's flags and log lines (nats-server itself too).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import jsstore

HOST = "127.0.0.1"
LISTENING = re.compile(r"Listening for client connections on [^\s]*:(\d+)")


@dataclass
class ServerProcess:
    """A server started by start_server() (or forked by a jsstore.testing.zygote.Zygote:
    then `process` is its ForkedProcess, which answers as a Popen does)."""

    process: subprocess.Popen
    port: int
    store_dir: str
    log_path: str

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        return f"nats://{HOST}:{self.port}"

    def log_text(self) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM by pid (a clean stop), SIGKILL after `timeout` seconds; the exit code.
        Safe to call twice."""
        if self.process.poll() is None:
            try:
                os.kill(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout)
        return self.process.returncode


def _accepts(port: int) -> bool:
    """Whether a new connection to the port gets the server's INFO line."""
    try:
        with socket.create_connection((HOST, port), timeout=1.0) as sock:
            sock.settimeout(1.0)
            return sock.recv(5) == b"INFO "
    except OSError:
        return False


def start_server(command: list[str], store_dir: str, *, env: dict | None = None,
                 timeout: float = 30.0) -> ServerProcess:
    """Run `command` (a server binary or script and its first arguments) with
    ``-a 127.0.0.1 -p -1 -js -sd <store_dir>``; returns once it accepts connections.
    RuntimeError (with its log) if it exits or is not ready within `timeout` seconds."""
    log_fd, log_path = tempfile.mkstemp(prefix="jsstore-testing-", suffix=".log")
    args = [*command, "-a", HOST, "-p", "-1", "-js", "-sd", os.fspath(store_dir)]
    try:
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log_fd,
                                   stderr=log_fd, close_fds=True, env=env)
    finally:
        os.close(log_fd)
    server = ServerProcess(process, 0, os.fspath(store_dir), log_path)
    deadline = time.monotonic() + timeout
    while True:
        if not server.port:
            found = LISTENING.search(server.log_text())
            server.port = int(found.group(1)) if found else 0
        if server.port and _accepts(server.port):
            return server
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            log = server.log_text()
            os.unlink(log_path)
            raise RuntimeError(f"{' '.join(args)} did not start:\n{log}")
        time.sleep(0.01)


def jsstore_environment() -> dict:
    """This process's environment, with the jsstore it imported first on PYTHONPATH (a
    child Python then imports the same jsstore)."""
    source = os.path.dirname(os.path.dirname(os.path.abspath(jsstore.__file__)))
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": source + (os.pathsep + path if path else "")}


def jsstore_command() -> tuple[list[str], dict]:
    """``python -m jsstore serve`` and the environment that makes the child import the same
    jsstore as this process."""
    return [sys.executable, "-m", "jsstore", "serve"], jsstore_environment()


def start_jsstore_server(store_dir, extra_args=(), *, timeout: float = 30.0) -> ServerProcess:
    """`jsstore serve` on a free loopback port with its store in `store_dir`; `extra_args`
    go on its command line (e.g. ``["--store-factory", "pkg.mod:open_store"]``)."""
    command, env = jsstore_command()
    return start_server([*command, *extra_args], store_dir, env=env, timeout=timeout)
