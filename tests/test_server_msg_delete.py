"""STREAM.MSG.DELETE of a message that is not there, against `jsstore serve` and
nats-server alike: each answers as its store of the same kind fails (a file store: "stream
store EOF" past the last sequence, "no message found" below the first, "sequence N not
found" between them; a memory store: "sequence N not found")."""

from __future__ import annotations

import json

import pytest

from bothservers import run, server  # noqa: F401  (the fixture)

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver

BODIES = [b'{"seq":5}', b'{"seq":5,"no_erase":true}', b'{"seq":0}', b'{"seq":2}', b'{"seq":2}',
          b'{"seq":1}', b'{"seq":1}', b'{"seq":3,"no_erase":true}', b'{"seq":3}']


def answers(url: str, storage: str) -> list[dict]:
    async def go():
        nc = await nats.connect(url)
        try:
            config = {"name": "S", "subjects": ["s"], "storage": storage}
            await nc.request("$JS.API.STREAM.CREATE.S", json.dumps(config).encode())
            for data in (b"1", b"2", b"3"):
                await nc.request("s", data)
            out = []
            for body in BODIES:
                reply = await nc.request("$JS.API.STREAM.MSG.DELETE.S", body)
                out.append(json.loads(reply.data).get("error") or "ok")
            return out
        finally:
            await nc.close()
    return run(go())


@pytest.mark.parametrize("storage", ["file", "memory"])
def test_deleting_what_is_not_there(server, storage):
    got = answers(server.url, storage)
    if storage == "file":
        eof = {"code": 500, "err_code": 10057, "description": "stream store EOF"}
        gone = {"code": 500, "err_code": 10057, "description": "no message found"}
        assert got == [eof, eof, gone, "ok", {"code": 400, "err_code": 10043,
                                              "description": "sequence 2 not found"},
                       "ok", gone, "ok", gone]
    else:
        def missing(seq):
            return {"code": 400, "err_code": 10043, "description": f"sequence {seq} not found"}
        assert got == [missing(5), missing(5), missing(0), "ok", missing(2), "ok", missing(1),
                       "ok", missing(3)]
