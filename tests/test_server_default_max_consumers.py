"""nats-server 2.15's default limit of consumers on a stream, against `jsstore serve` and
nats-server alike: a stream that sets no max_consumers (nor its account a limit) takes at
most 1,000 consumers; the 1,001st is refused with "maximum consumers limit reached"
(10026) until one is deleted; a stream's own max_consumers, above or below 1,000, is the
limit instead; and -1 ("unlimited" in the stream's info) is no limit of its own, so the
default applies to it too."""

from __future__ import annotations

import json

import pytest

from bothservers import run, server  # noqa: F401  (the fixture)

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver

DEFAULT = 1000


def answers(url: str) -> list:
    async def go():
        nc = await nats.connect(url)

        async def request(subject: str, body: dict) -> dict:
            reply = await nc.request("$JS.API." + subject, json.dumps(body).encode(), timeout=10)
            return json.loads(reply.data)

        async def fill(stream: str, count: int) -> None:
            for i in range(count):
                # (durable: an ephemeral one would go after 5 s without interest, and
                # filling three streams takes longer than that on a busy machine)
                answer = await request(f"CONSUMER.CREATE.{stream}.C{i}", {
                    "stream_name": stream, "config": {"durable_name": f"C{i}"}})
                assert "error" not in answer, (stream, i, answer)

        def outcome(answer: dict):
            error = answer.get("error")
            return ("error", error["err_code"], error["description"]) if error else "created"

        try:
            out = []
            for name, config in (("D", {}), ("U", {"max_consumers": -1})):
                created = await request(f"STREAM.CREATE.{name}", {
                    "name": name, "subjects": [name.lower()], **config})
                out.append(created["config"]["max_consumers"])
                await fill(name, DEFAULT)
                out.append(outcome(await request(f"CONSUMER.CREATE.{name}.X", {
                    "stream_name": name, "config": {"name": "X"}})))
                # an existing consumer asked for again is no new one
                out.append(outcome(await request(f"CONSUMER.CREATE.{name}.C7", {
                    "stream_name": name, "config": {"durable_name": "C7"}})))
                deleted = await request(f"CONSUMER.DELETE.{name}.C0", {})
                out.append(deleted.get("success"))
                out.append(outcome(await request(f"CONSUMER.CREATE.{name}.X", {
                    "stream_name": name, "config": {"name": "X"}})))
                info = await request(f"STREAM.INFO.{name}", {})
                out.append(info["state"]["consumer_count"])
            # the stream's own limit, above the default and below it
            await request("STREAM.CREATE.A", {"name": "A", "subjects": ["a"],
                                              "max_consumers": DEFAULT + 5})
            await fill("A", DEFAULT + 5)
            out.append(outcome(await request("CONSUMER.CREATE.A.X", {
                "stream_name": "A", "config": {"name": "X"}})))
            await request("STREAM.CREATE.B", {"name": "B", "subjects": ["b"], "max_consumers": 3})
            await fill("B", 3)
            out.append(outcome(await request("CONSUMER.CREATE.B.X", {
                "stream_name": "B", "config": {"name": "X"}})))
            return out
        finally:
            await nc.close()
    return run(go())


def test_a_stream_takes_at_most_the_default_number_of_consumers(server):
    refused = ("error", 10026, "maximum consumers limit reached")
    once = [refused, "created", True, "created", DEFAULT]
    assert answers(server.url) == [-1, *once, -1, *once, refused, refused]
