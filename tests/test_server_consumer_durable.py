"""An ephemeral consumer made durable by DURABLE.CREATE, against `jsstore serve` and
nats-server alike: nats-server decides the inactive threshold of an update by what the
consumer was before it, so a consumer created ephemeral keeps the 5 s default (even one
that had its own threshold) when the update gives none, while a durable one updated
again keeps none."""

from __future__ import annotations

import json

import pytest

from bothservers import run, server  # noqa: F401  (the fixture)

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver

SECOND = 1_000_000_000


def thresholds(url: str) -> list:
    async def go():
        nc = await nats.connect(url)
        try:
            await nc.request("$JS.API.STREAM.CREATE.S",
                             json.dumps({"name": "S", "subjects": ["s"]}).encode())
            steps = [
                ("CONSUMER.CREATE.S.E", {"name": "E", "ack_policy": "explicit"}),
                ("CONSUMER.DURABLE.CREATE.S.E", {"durable_name": "E", "ack_policy": "explicit"}),
                ("CONSUMER.DURABLE.CREATE.S.E", {"durable_name": "E", "ack_policy": "explicit"}),
                ("CONSUMER.CREATE.S.F", {"name": "F", "ack_policy": "explicit",
                                         "inactive_threshold": 10 * SECOND}),
                ("CONSUMER.DURABLE.CREATE.S.F", {"durable_name": "F", "ack_policy": "explicit"}),
                ("CONSUMER.DURABLE.CREATE.S.D", {"durable_name": "D", "ack_policy": "explicit"}),
                ("CONSUMER.DURABLE.CREATE.S.D", {"durable_name": "D", "ack_policy": "explicit",
                                                 "description": "again"}),
            ]
            out = []
            for subject, config in steps:
                reply = await nc.request("$JS.API." + subject,
                                         json.dumps({"stream_name": "S", "config": config}).encode())
                answer = json.loads(reply.data)
                assert "error" not in answer, answer
                out.append((answer["config"].get("durable_name", ""),
                            answer["config"].get("inactive_threshold", 0)))
            return out
        finally:
            await nc.close()
    return run(go())


def test_an_ephemeral_made_durable_keeps_the_default_threshold(server):
    assert thresholds(server.url) == [
        ("", 5 * SECOND), ("E", 5 * SECOND), ("E", 0),
        ("", 10 * SECOND), ("F", 5 * SECOND),
        ("D", 0), ("D", 0),
    ]
