"""The ``$JS.API`` requests the verbs send: one request, one JSON answer (the raw bytes
kept for ``--json``), the same on both back ends."""

from __future__ import annotations

import msgspec

from jsstore.cli.answer import Answer
from jsstore.cli.errors import UsageError
from jsstore.wire.api import API_PREFIX


class Reply:
    """A decoded API answer and the bytes it came in."""

    def __init__(self, answer: Answer):
        self.raw = answer.data
        self.body = answer.json()           # ApiError for an error answer

    def __getitem__(self, key):
        return self.body[key]

    def get(self, key, default=None):
        return self.body.get(key, default)


def check_storage(backend, storage: str | None) -> None:
    """A memory stream in a store directory would end with the command: refused."""
    if storage == "memory" and backend.where == "store":
        raise UsageError("a memory stream in a store directory would vanish when the command "
                         "exits: use --storage file, or --server")


def call(backend, api: str, body: dict | None = None) -> Reply:
    """``$JS.API.<api>`` with `body` as its JSON request (no body: an empty payload)."""
    payload = msgspec.json.encode(body) if body is not None else b""
    return Reply(backend.request(API_PREFIX + api, payload))


def paged(backend, api: str, key: str, body: dict | None = None) -> tuple[list, list[bytes]]:
    """Every item of a paged list answer (STREAM.LIST, CONSUMER.NAMES ...) and the raw
    answers."""
    items: list = []
    raws: list[bytes] = []
    while True:
        reply = call(backend, api, {**(body or {}), "offset": len(items)})
        raws.append(reply.raw)
        page = reply.get(key) or []
        items += page
        if not page or len(items) >= int(reply.get("total", 0)):
            return items, raws
