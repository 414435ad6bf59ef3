"""The harness of the asyncio parity suite: one test body, an async function taking a
JetStream context and its errors module, runs three ways — in process through
``jsstore.aio``, through nats-py against ``jsstore serve``, and through nats-py against
the real nats-server — and what it records must be the same each way.

A body records with ``plain(value)`` (dataclasses by field, enums by value, times and
inbox subjects masked) and ``outcome(awaitable)`` (the plain result, or the exception's
class name, code and err_code).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import types

import nats
import nats.errors
import nats.js.errors
from bothservers import run
from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

import jsstore

# nats-py's errors as one module, like jsstore.aio.errors (which has both families)
NATS_ERRORS = types.SimpleNamespace(**{k: v for k, v in vars(nats.js.errors).items()
                                       if isinstance(v, type)})
NATS_ERRORS.TimeoutError = nats.errors.TimeoutError
NATS_ERRORS.MsgAlreadyAckdError = nats.errors.MsgAlreadyAckdError

MASKED_KEYS = ("_nats.ver", "_nats.level",   # the server's version and API level
               "Nats-Time-Stamp")             # a direct get's time of storing

# an object's random chunk subject token and the client's clock when it was put
MASKED_FIELDS = ("nuid", "mtime")


def plain(value):
    """`value` as comparable plain data, with what differs from run to run masked."""
    if isinstance(value, BaseException):
        return ("raised", type(value).__name__, getattr(value, "code", None),
                getattr(value, "err_code", None))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {"type": type(value).__name__}
        for field in dataclasses.fields(value):
            # a server names itself the leader in a cluster field; in process there is
            # no server (jsstore.api.streams leaves the field out)
            out[field.name] = ("<cluster>" if field.name == "cluster"
                               else "<masked>" if field.name in MASKED_FIELDS
                               else plain(getattr(value, field.name)))
        return out
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime.datetime):
        return "<time>"
    if isinstance(value, str) and value.startswith("_INBOX."):
        return "<inbox>"
    if isinstance(value, dict):
        return {k: "<masked>" if k in MASKED_KEYS else plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


async def outcome(awaitable):
    """The plain result of `awaitable`, or what it raised."""
    try:
        return plain(await awaitable)
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return plain(exc)


async def _in_process(directory, body):
    async with jsstore.aio.open(directory) as js:
        return await body(js, jsstore.aio.errors)


async def _over_nats(url, body):
    nc = await nats.connect(url)
    try:
        return await body(nc.jetstream(), NATS_ERRORS)
    finally:
        await nc.close()


def three_ways(tmp_path, body) -> dict:
    """Run `body` the three ways; what each recorded, by way."""
    require_nats_server()
    results = {"jsstore.aio": run(_in_process(tmp_path / "embedded", body))}
    with jsstore_server(tmp_path / "serve") as server:
        results["jsstore serve"] = run(_over_nats(server.url, body))
    with nats_server(tmp_path / "nats") as server:
        results["nats-server"] = run(_over_nats(server.url, body))
    return results


def assert_same(results: dict) -> None:
    reference = results["nats-server"]
    for way in ("jsstore.aio", "jsstore serve"):
        for index, (got, want) in enumerate(zip(results[way], reference)):
            assert got == want, (f"{way} differs from nats-server at record {index}: "
                                 f"{_differences(got, want)}")
        assert len(results[way]) == len(reference), way


def _differences(got, want, path="") -> list:
    """Where two plain values differ: (path, got, want) triples."""
    if isinstance(got, dict) and isinstance(want, dict):
        return [d for k in dict.fromkeys([*got, *want])
                for d in _differences(got.get(k, "<absent>"), want.get(k, "<absent>"),
                                      f"{path}.{k}")]
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        return [d for i, (g, w) in enumerate(zip(got, want))
                for d in _differences(g, w, f"{path}[{i}]")]
    return [] if got == want else [(path, got, want)]


async def until(predicate, timeout: float = 10.0) -> None:
    """Wait (on the event loop) until `predicate()` holds; asyncio.TimeoutError after
    `timeout` seconds."""
    async def wait():
        while not predicate():
            await asyncio.sleep(0.01)
    await asyncio.wait_for(wait(), timeout)
