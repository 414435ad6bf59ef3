"""The consumer deep dive of the JetStream concepts (ORDERS / DISPATCH), number for number.

The walkthrough prints the consumer's "Last Delivered Message" as the *next* sequences
(consumer seq 1, stream seq 1 before anything was delivered).  nats-server has long since
reported the last delivered pair itself, so every "Last Delivered" below is the
walkthrough's pair minus one.  The walkthrough's "Pending Messages" is num_ack_pending.

One number differs for a reason: after the redelivered message is finally acked, the
walkthrough shows the ack floor still at (1, 1); nats-server 2.15 moves the ack floor to
the last delivery once nothing is pending, (4, 2), and so does jsstore (the differential
table runs the same steps against nats-server).
"""

from __future__ import annotations

import pytest

import jsstore
from clocks import SECOND, Clock


def numbers(js) -> tuple:
    info = js.consumer_info("ORDERS", "DISPATCH")
    return ((info.delivered.consumer_seq, info.delivered.stream_seq),
            (info.ack_floor.consumer_seq, info.ack_floor.stream_seq),
            info.num_ack_pending, info.num_redelivered)


@pytest.mark.parametrize("storage", ["file", "memory"])
def test_deep_dive_walkthrough(tmp_path, storage):
    clock = Clock()
    js = jsstore.open(tmp_path if storage == "file" else None, clock=clock)
    js.add_stream(name="ORDERS", subjects=["ORDERS.*"], storage=storage)
    js.add_consumer("ORDERS", durable_name="DISPATCH", ack_policy="explicit")
    sub = js.pull_subscribe("ORDERS.*", "DISPATCH", stream="ORDERS")

    # a clean stream and consumer: nothing delivered (walkthrough: next is 1 / 1)
    state = js.stream_info("ORDERS").state
    assert (state.messages, state.first_seq, state.last_seq) == (0, 0, 0)
    assert js.stream_info("ORDERS").state.consumer_count == 1
    assert numbers(js) == ((0, 0), (0, 0), 0, 0)

    # publish "order 4", fetch and ack it (walkthrough: 2 / 2, floor 1 / 1)
    js.publish("ORDERS.processed", b"order 4")
    assert js.stream_info("ORDERS").state.messages == 1
    [msg] = sub.fetch(1)
    assert (msg.subject, msg.data) == ("ORDERS.processed", b"order 4")
    assert msg.ack()
    assert numbers(js) == ((1, 1), (1, 1), 0, 0)

    # publish "order 5", fetch without acking (walkthrough: 3 / 3, floor 1 / 1, 1 pending)
    js.publish("ORDERS.processed", b"order 5")
    [msg] = sub.fetch(1)
    assert msg.data == b"order 5"
    assert numbers(js) == ((2, 2), (1, 1), 1, 0)

    # nothing more until the ack wait runs out, then the same message again, not acked
    # (walkthrough: 4 / 3, floor 1 / 1, 1 pending, 1 redelivered)
    with pytest.raises(TimeoutError):
        sub.fetch(1)
    clock.advance(31 * SECOND)
    js.tick()
    [again] = sub.fetch(1)
    assert again.data == b"order 5"
    assert (again.metadata.sequence.stream, again.metadata.sequence.consumer) == (2, 3)
    assert again.metadata.num_delivered == 2
    assert numbers(js) == ((3, 2), (1, 1), 1, 1)

    # once more, acked this time (walkthrough: 5 / 3, nothing pending or redelivering)
    clock.advance(31 * SECOND)
    js.tick()
    [last] = sub.fetch(1)
    assert (last.data, last.metadata.num_delivered) == (b"order 5", 3)
    assert last.ack()
    assert numbers(js) == ((4, 2), (4, 2), 0, 0)

    # and the numbers survive a restart of a file store
    if storage == "file":
        js.close()
        js = jsstore.open(tmp_path, clock=clock)
        assert numbers(js) == ((4, 2), (4, 2), 0, 0)
    js.close()
