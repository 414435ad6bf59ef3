"""jsstore's pytest plugin (entry point ``jsstore`` in the ``pytest11`` group): fixtures to
test an application against jsstore instead of nats-server.

* ``jetstream``: an in-process asyncio JetStream (``jsstore.aio``, nats-py's
  ``JetStreamContext`` face) over a temporary store directory, for tests run by any event
  loop (pytest-asyncio, anyio, or ``asyncio.run`` in the test), closed after the test;
* ``jetstream_sync``: an in-process ``jsstore.open(<tmp dir>)`` JetStream (the synchronous
  embedded API), closed after the test;
* ``jsstore_server``: a ``jsstore serve`` child process on a free loopback port with a
  temporary store; the value is its URL, ``nats://127.0.0.1:<port>``; stopped (SIGTERM by
  pid) after the test;
* ``jsstore_server_session``: the same, one server for the whole session.

Only pytest and jsstore are imported here (the contract kit's Hypothesis is not).
"""

from __future__ import annotations

import contextlib
import os

import pytest

import jsstore
from jsstore.testing.server import start_jsstore_server


@contextlib.contextmanager
def _server(store_dir):
    server = start_jsstore_server(store_dir)
    try:
        yield server
    finally:
        server.stop()
        with contextlib.suppress(OSError):
            os.unlink(server.log_path)


@pytest.fixture
def jetstream(tmp_path):
    """An asyncio JetStream context over a temporary store directory (jsstore.aio).  It is
    made outside any event loop and binds to the loop of each call, so one fixture serves
    whichever loop runs the test."""
    from jsstore.aio.context import JetStreamContext
    context = JetStreamContext(jsstore.open(tmp_path / "jetstream"))
    try:
        yield context
    finally:
        context.close_blocking()


@pytest.fixture
def jetstream_sync(tmp_path):
    """An embedded JetStream over a temporary store directory (jsstore.open)."""
    js = jsstore.open(tmp_path / "jetstream")
    try:
        yield js
    finally:
        js.close()


@pytest.fixture
def jsstore_server(tmp_path):
    """The URL of a `jsstore serve` of this test, with a temporary store."""
    with _server(tmp_path / "jsstore-server") as server:
        yield server.url


@pytest.fixture(scope="session")
def jsstore_server_session(tmp_path_factory):
    """The URL of a `jsstore serve` shared by the whole session, with a temporary store."""
    with _server(tmp_path_factory.mktemp("jsstore-server")) as server:
        yield server.url
