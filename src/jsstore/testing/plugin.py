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
* ``jsstore_server_session``: the same, one server for the whole session;
* ``jsstore_forked_server``: a ``jsstore serve`` forked from the session's zygote
  (``jsstore.testing.zygote``: a process that has imported everything a server needs), on
  a free loopback port with a temporary store, ready in milliseconds instead of a Python
  start; the value is its ``ServerProcess`` (``url``, ``port``, ``pid``, ``store_dir``,
  ``log_text()``, ``stop()``); stopped (SIGTERM by pid) after the test;
* ``jsstore_zygote``: that zygote (one per session, started when a test first asks).

``--jsstore-fork`` (or ``jsstore_fork = true`` in the ini file) makes ``jsstore_server``
and ``jsstore_server_session`` fork their servers from the zygote too.

Only pytest and jsstore are imported here (the contract kit's Hypothesis is not).
"""

from __future__ import annotations

import contextlib
import os

import pytest

import jsstore
from jsstore.testing.server import start_jsstore_server
from jsstore.testing.zygote import Zygote

FORK_HELP = ("jsstore_server and jsstore_server_session fork their servers from a zygote "
             "process (milliseconds) instead of running jsstore serve (a Python start)")


def pytest_addoption(parser):
    parser.addoption("--jsstore-fork", action="store_true", default=None, help=FORK_HELP)
    parser.addini("jsstore_fork", FORK_HELP, type="bool", default=False)


def _forks(config) -> bool:
    option = config.getoption("jsstore_fork", None)
    return option if option is not None else config.getini("jsstore_fork")


@contextlib.contextmanager
def _stopped_after(server):
    try:
        yield server
    finally:
        server.stop()
        with contextlib.suppress(OSError):
            os.unlink(server.log_path)


def _server(request, store_dir):
    """A server of the fixture's: forked from the session's zygote with --jsstore-fork,
    else jsstore serve run as a child process."""
    if _forks(request.config):
        return _stopped_after(request.getfixturevalue("jsstore_zygote").serve(store_dir))
    return _stopped_after(start_jsstore_server(store_dir))


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
def jsstore_server(request, tmp_path):
    """The URL of a `jsstore serve` of this test, with a temporary store."""
    with _server(request, tmp_path / "jsstore-server") as server:
        yield server.url


@pytest.fixture(scope="session")
def jsstore_server_session(request, tmp_path_factory):
    """The URL of a `jsstore serve` shared by the whole session, with a temporary store."""
    with _server(request, tmp_path_factory.mktemp("jsstore-server")) as server:
        yield server.url


@pytest.fixture(scope="session")
def jsstore_zygote():
    """The session's zygote (jsstore.testing.zygote.Zygote), closed at the session's end
    (ZygoteError there, and at any request, if it died)."""
    zygote = Zygote()
    try:
        yield zygote
    finally:
        zygote.close()


@pytest.fixture
def jsstore_forked_server(jsstore_zygote, tmp_path):
    """A `jsstore serve` of this test forked from the session's zygote, with a temporary
    store: its ServerProcess (url, port, pid, store_dir, log_text(), stop())."""
    with _stopped_after(jsstore_zygote.serve(tmp_path / "jsstore-server")) as server:
        yield server
