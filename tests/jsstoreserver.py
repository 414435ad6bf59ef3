"""Start `jsstore serve` for tests the way tests/natsserver.py starts nats-server: on
`-p -1` (the port is read from its "Listening for client connections on" log line) or a
port given, with a store directory of the test's, stopped by its process id."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Iterator

from natsserver import NatsServer

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
LISTENING = re.compile(r"Listening for client connections on (\[[^\]]*\]|[^\s:]+):(\d+)")


def start_jsstore_server(store_dir, extra_args=(), *, port: int | None = None,
                         timeout: float = 20.0) -> NatsServer:
    """Start `jsstore serve` on `port` (a free one when None) and wait until it is ready."""
    log_fd, log_path = tempfile.mkstemp(prefix="jsstore-serve-", suffix=".log")
    args = [sys.executable, "-m", "jsstore", "serve", "-a", "127.0.0.1",
            "-p", "-1" if port is None else str(port), "-js",
            "-sd", os.fspath(store_dir), *extra_args]
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log_fd,
                                   stderr=log_fd, close_fds=True, env=env)
    finally:
        os.close(log_fd)
    server = NatsServer(process, 0, "127.0.0.1", os.fspath(store_dir), log_path, args)
    deadline = time.monotonic() + timeout
    while True:
        text = server.log_text()
        found = LISTENING.search(text)
        if found and "Server is ready" in text:
            server.port = int(found.group(2))
            return server
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"jsstore serve did not start:\n{text}")
        time.sleep(0.02)


@contextlib.contextmanager
def jsstore_server(store_dir, extra_args=()) -> Iterator[NatsServer]:
    server = start_jsstore_server(store_dir, extra_args)
    try:
        yield server
    finally:
        server.stop()
        with contextlib.suppress(OSError):
            os.unlink(server.log_path)
