"""An AckAll consumer acking a redelivered message, against nats-server and `jsstore
serve` side by side: the fuzz input fuzz/corpus/consumer_session/crash-ackall-redelivered-floor.

Stream sequence 1 goes out as consumer sequence 1, sequence 2 as consumer sequence 2,
both ack waits run out and sequence 1 goes out again as consumer sequence 3. An AckAll of
that delivery moves the ack floor to (consumer 3, stream 1) and drops what is pending up
to stream sequence 1 only: sequence 2 stays pending although the floor's consumer sequence
is the last one delivered. Both servers report the same consumer info, for an ack with
its reply awaited (+ACK) and for an +NXT whose reply nobody listens to (as in the fuzz
target, whose acks go to an inbox without subscribers)."""

from __future__ import annotations

import asyncio
import json

import pytest
from bothservers import run
from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver

ACK_WAIT = 1_000_000_000
COMPARED = ("delivered", "ack_floor", "num_ack_pending", "num_redelivered", "num_waiting",
            "num_pending")


async def _wait_for(items: list, count: int) -> None:
    for _ in range(500):
        if len(items) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(items)} deliveries, waited for {count}")


async def _session(url: str, final_ack: bytes) -> tuple[list, dict]:
    """The sequence above; the ack subjects' (delivery count, stream, consumer) numbers and the
    consumer info at the end, without its times."""
    nc = await nats.connect(url)
    try:
        got: list = []

        async def keep(msg):
            got.append(msg)
        await nc.subscribe("_fz", cb=keep)

        async def api(subject: str, body: dict | None = None) -> dict:
            reply = await nc.request("$JS.API." + subject,
                                     json.dumps(body).encode() if body else b"")
            answer = json.loads(reply.data)
            assert "error" not in answer, answer
            return answer

        async def pull() -> None:
            await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.C", b"1", reply="_fz")
            await nc.flush()

        await api("STREAM.CREATE.S", {"name": "S", "subjects": ["s.*"]})
        await api("CONSUMER.DURABLE.CREATE.S.C",
                  {"stream_name": "S", "config": {"durable_name": "C", "ack_policy": "all",
                                                  "ack_wait": ACK_WAIT}})
        await nc.request("s.0", b"m")
        await pull()
        await _wait_for(got, 1)
        await pull()                        # waits for the next message
        await nc.request("s.0", b"m")
        await _wait_for(got, 2)
        await asyncio.sleep(1.5 * ACK_WAIT / 1e9)     # both ack waits run out
        await nc.request("s.1", b"m")
        await pull()                        # sequence 1 again, before 2 and 3
        await _wait_for(got, 3)
        if final_ack == b"+ACK":
            await nc.request(got[2].reply, final_ack)
        else:
            await nc.publish(got[2].reply, final_ack, reply="_nobody")
            await nc.flush()
        info = await api("CONSUMER.INFO.S.C")
        for key in ("delivered", "ack_floor"):
            info[key].pop("last_active", None)
        numbers = [tuple(int(t) for t in m.reply.split(".")[4:7]) for m in got]
        return numbers, {key: info[key] for key in COMPARED}
    finally:
        await nc.close()


@pytest.mark.parametrize("final_ack", [b"+ACK", b"+NXT 2"])
def test_ackall_of_a_redelivery_leaves_later_messages_pending(tmp_path, final_ack):
    require_nats_server()
    with nats_server(tmp_path / "nats") as srv:
        reference = run(_session(srv.url, final_ack))
    with jsstore_server(tmp_path / "jsstore") as srv:
        ours = run(_session(srv.url, final_ack))
    assert reference[0] == [(1, 1, 1), (1, 2, 2), (2, 1, 3)]
    assert reference[1] == {
        "delivered": {"consumer_seq": 3, "stream_seq": 2},
        "ack_floor": {"consumer_seq": 3, "stream_seq": 1},
        "num_ack_pending": 1, "num_redelivered": 0, "num_waiting": 0, "num_pending": 1,
    }
    assert ours == reference
