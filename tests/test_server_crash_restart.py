"""A server killed (SIGKILL) while a client reads, and started again on the same port and
store directory: nats-py's ordered consumer resumes where it was, with no gap and no
duplicate, against `jsstore serve` and nats-server alike.

What a crash keeps: every message whose PubAck the publisher got (both servers hand a
message to the OS before they answer it; a SIGKILL loses nothing the OS has).  The
ordered consumer itself is gone with the process (an ephemeral consumer in memory); the
client notices the missing heartbeats and makes a new one at the stream sequence after
the last it got.
"""

from __future__ import annotations

import asyncio

import pytest

from bothservers import restartable, run  # noqa: F401  (the fixture)

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver

BEFORE = 2000                   # published (and acked) before the reading starts
AFTER = 500                     # published once the server is back
# The server dies when the reader has handled this many.  A client takes in messages much
# faster than its callback handles them (flow control holds nothing back in practice), so
# the kill comes early: 16 MB do not fit in the sockets' buffers, and the client has
# taken in a couple of hundred messages at most by then.
KILL_AT = 10
PAYLOAD = b"x" * 8192


async def _connect(url: str):
    return await nats.connect(url, reconnect_time_wait=0.1, max_reconnect_attempts=-1,
                              connect_timeout=2)


async def _publish(js, first: int, count: int) -> None:
    for n in range(first, first + count):
        ack = await js.publish("orders.new", PAYLOAD + b"%d" % n)
        assert ack.seq == n


def test_an_ordered_consumer_reads_on_across_a_crash_and_restart(restartable):
    servers = restartable

    async def main():
        publisher = await _connect(servers.url)
        js = publisher.jetstream()
        await js.add_stream(name="ORDERS", subjects=["orders.>"], storage="file")
        await _publish(js, 1, BEFORE)
        await publisher.close()

        reader = await _connect(servers.url)
        got: list[int] = []                 # stream sequences in delivery order
        bodies: list[bytes] = []
        consumers: list[str] = []           # the consumer that delivered each
        crashed = asyncio.Event()
        everything = asyncio.Event()

        async def on_msg(msg):
            got.append(msg.metadata.sequence.stream)
            bodies.append(msg.data)
            consumers.append(msg.metadata.consumer)
            if len(got) == KILL_AT:
                servers.kill()              # mid-read: the callback runs on
                crashed.set()
            if len(got) >= BEFORE + AFTER:
                everything.set()
            await asyncio.sleep(0.0005)     # a reader slower than the server

        sub = await reader.jetstream().subscribe("orders.>", cb=on_msg, ordered_consumer=True,
                                                 idle_heartbeat=0.5)
        await asyncio.wait_for(crashed.wait(), 30)
        received_at_kill = len(got)
        servers.start_again()
        publisher = await _connect(servers.url)
        await _publish(publisher.jetstream(), BEFORE + 1, AFTER)
        await asyncio.wait_for(everything.wait(), 60)
        await asyncio.sleep(1.0)            # nothing more comes
        info = await publisher.jetstream().stream_info("ORDERS")
        await sub.unsubscribe()
        await reader.close()
        await publisher.close()
        return got, bodies, consumers, received_at_kill, info.state

    got, bodies, consumers, received_at_kill, state = run(main(), timeout=120)
    assert received_at_kill < BEFORE         # the crash came in the middle of the read
    # and before the server had sent everything: a new consumer sent the rest
    resumed_at = next(i for i, name in enumerate(consumers) if name != consumers[0])
    assert KILL_AT <= resumed_at < BEFORE
    assert got == list(range(1, BEFORE + AFTER + 1))
    assert bodies == [PAYLOAD + b"%d" % n for n in got]
    assert (state.messages, state.first_seq, state.last_seq) == (BEFORE + AFTER, 1,
                                                                  BEFORE + AFTER)


def test_acked_messages_survive_a_crash_in_the_middle_of_publishing(restartable):
    """Publishing while the server dies: every message acked before the kill is there
    after the restart, in order, and the stream numbers on from what it kept."""
    servers = restartable

    async def main():
        nc = await _connect(servers.url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s"], storage="file")
        acked = 0
        for n in range(1, 100_000):
            if n == 700:
                servers.kill()
            try:
                ack = await js.publish("s", b"%d" % n, timeout=0.5)
            except Exception:
                break
            assert ack.seq == n
            acked = n
        servers.start_again()
        nc2 = await _connect(servers.url)
        js2 = nc2.jetstream()
        state = (await js2.stream_info("S")).state
        kept = [(await js2.get_msg("S", seq)).data for seq in range(1, acked + 1)]
        after = await js2.publish("s", b"after")
        await nc.close()
        await nc2.close()
        return acked, state, kept, after

    acked, state, kept, after = run(main(), timeout=90)
    assert acked == 699
    assert kept == [b"%d" % n for n in range(1, acked + 1)]
    # a message whose PubAck never came may or may not have been stored
    assert state.first_seq == 1 and acked <= state.last_seq <= acked + 1
    assert after.seq == state.last_seq + 1
