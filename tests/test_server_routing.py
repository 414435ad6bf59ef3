"""Routing inside the server: the subject table, bursts handed over by JetStream, and
answers coalesced for a client that streams."""

from __future__ import annotations

import asyncio
import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from jsstore.jetstream import account as jetstream
from jsstore._core.storage.subjects import _subject_matches
from jsstore.server import Server
from jsstore.server.subscriptions import Subscription, SubjectTable
from inprocess import serve_in_thread

# subjects published may hold `*` and `>` tokens (only wildcards take them) and even empty
# tokens (nobody takes those)
TOKENS = st.sampled_from(["a", "b", "$JS", "_INBOX", "x", "*", ">", ""])
FILTER_TOKENS = st.sampled_from(["a", "b", "$JS", "_INBOX", "x", "*"])


@st.composite
def filters(draw):
    tokens = draw(st.lists(FILTER_TOKENS, min_size=1, max_size=4))
    if draw(st.booleans()):
        tokens.append(">")
    return ".".join(tokens)


@settings(max_examples=200, deadline=None)
@given(st.lists(filters(), max_size=12), st.lists(st.lists(TOKENS, min_size=1, max_size=5),
                                                    min_size=1, max_size=10),
       st.randoms())
def test_the_table_matches_like_a_scan_of_every_filter(subjects, messages, rnd):
    table = SubjectTable(random.Random(0).randrange)
    subs = [Subscription(None, f, None, str(i)) for i, f in enumerate(subjects)]
    for sub in subs:
        table.insert(sub)
    removed = [s for s in subs if rnd.random() < 0.3]
    for sub in removed:
        table.remove(sub)
    live = [s for s in subs if s not in removed]
    for tokens in messages:
        subject = ".".join(tokens)
        for _ in range(2):                            # the second time from the cache
            got = sorted(s.sid for s in table.match(subject))
            want = sorted(s.sid for s in live if _subject_matches(subject, s.subject))
            assert got == want
            assert table.has_interest(subject) == bool(want)
    assert table.count() == len(live)


async def _connect(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    await reader.readline()                           # INFO
    return reader, writer


async def _read_msgs(reader, count, timeout=5.0):
    """`count` MSG frames: (subject, sid, reply, payload) each."""
    got = []
    while len(got) < count:
        line = await asyncio.wait_for(reader.readline(), timeout)
        parts = line.split()
        if not parts or parts[0] != b"MSG":
            continue
        size = int(parts[-1])
        payload = (await asyncio.wait_for(reader.readexactly(size + 2), timeout))[:-2]
        reply = parts[3].decode() if len(parts) == 5 else None
        got.append((parts[1].decode(), parts[2].decode(), reply, payload))
    return got


def test_a_pull_batch_stops_at_the_subscriptions_unsub_limit(tmp_path):
    async def main():
        js = jetstream.open(tmp_path)
        js.add_stream(name="S", subjects=["s.*"])
        for i in range(10):
            js.publish("s.a", b"%d" % i)
        js.add_consumer("S", durable_name="C", ack_policy="explicit")
        server = Server(js, host="127.0.0.1", port=-1)
        stop = serve_in_thread(server)
        reader, writer = await _connect(server.port)
        try:
            reader, writer = await _connect(server.port)
            request = b'{"batch": 10}'
            writer.write(b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB in.1 9\r\nUNSUB 9 3\r\n'
                         b'PUB $JS.API.CONSUMER.MSG.NEXT.S.C in.1 %d\r\n%s\r\nPING\r\n'
                         % (len(request), request))
            await writer.drain()
            msgs = await _read_msgs(reader, 3)
            writer.write(b"PING\r\n")
            await writer.drain()
            rest = await asyncio.wait_for(reader.readuntil(b"PONG\r\nPONG\r\n"), 5)
            writer.close()
        finally:
            stop()
        return msgs, rest
    msgs, rest = asyncio.run(main())
    assert [m[3] for m in msgs] == [b"0", b"1", b"2"]
    assert all(m[1] == "9" and m[2].startswith("$JS.ACK.S.C.1.") for m in msgs)
    assert b"MSG" not in rest                          # the subscription is gone after 3


def test_a_streaming_publisher_gets_every_ack_in_order(tmp_path):
    """Acks to a client that pipelines are coalesced into fewer writes: none may be lost
    or reordered, and the last ones arrive without the client sending anything more."""
    async def main():
        js = jetstream.open(tmp_path)
        js.add_stream(name="S", subjects=["s.*"])
        server = Server(js, host="127.0.0.1", port=-1)
        stop = serve_in_thread(server)
        try:
            reader, writer = await _connect(server.port)
            writer.write(b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB acks.* 1\r\n')
            count = 2000
            for i in range(count):
                writer.write(b"PUB s.a acks.%d 3\r\nabc\r\n" % i)
                if i % 7 == 0:
                    await writer.drain()
                    await asyncio.sleep(0)
            await writer.drain()
            msgs = await _read_msgs(reader, count)
            writer.close()
        finally:
            stop()
        return msgs
    msgs = asyncio.run(main())
    assert [m[0] for m in msgs] == [f"acks.{i}" for i in range(len(msgs))]
    assert [json.loads(m[3])["seq"] for m in msgs] == list(range(1, len(msgs) + 1))


def test_a_subscription_reaching_its_limit_does_not_hide_the_next_one(tmp_path):
    """Two subscriptions on one subject, the first with UNSUB 1: the message goes to
    both, the next only to the second."""
    async def main():
        server = Server(None, host="127.0.0.1", port=-1)
        stop = serve_in_thread(server)
        try:
            reader, writer = await _connect(server.port)
            writer.write(b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB same 1\r\nUNSUB 1 1\r\n'
                         b'SUB same 2\r\nPUB same 1\r\na\r\nPUB same 1\r\nb\r\n')
            await writer.drain()
            msgs = await _read_msgs(reader, 3)
            writer.close()
        finally:
            stop()
        return msgs
    msgs = asyncio.run(main())
    assert sorted((m[1], m[3]) for m in msgs) == [("1", b"a"), ("2", b"a"), ("2", b"b")]
