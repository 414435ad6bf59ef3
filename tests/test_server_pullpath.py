"""The pull path through the server: plain acks one read brings are applied after what
the read asked for is written, a pull request overtakes them only where its answer cannot
differ, and a pull batch's first messages are written before the rest are read.

A connection is driven in process (a stand-in transport collects what is written), on a
hand clock, so every case is exact: what was written, in which order, and the consumer's
state after each read."""

from __future__ import annotations

import json
import random

import pytest

import jsstore
from clocks import SECOND, Clock
from inprocess import Conn, messages
from jsstore.server import Server


def acks_for(delivered: list[tuple[str, str]]) -> bytes:
    return b"".join(b"PUB %s 0\r\n\r\n" % reply.encode() for _, reply in delivered)


def pull(batch: int, **extra) -> bytes:
    return json.dumps({"batch": batch, **extra}).encode()


NEXT = "$JS.API.CONSUMER.MSG.NEXT.ORDERS.C"


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def js(clock, tmp_path):
    js = jsstore.open(tmp_path, clock=clock)
    js.add_stream(name="ORDERS", subjects=["orders.*"])
    for i in range(40):
        js.publish("orders.new", b"%d" % i)
    yield js
    js.close()


@pytest.fixture
def conn(js):
    return Conn(Server(js, host="127.0.0.1", port=-1))


def sseqs(delivered) -> list[int]:
    return [int(reply.split(".")[5]) for _, reply in delivered]


def test_acks_and_the_next_request_in_one_read(js, conn):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    conn.feed(conn.request(NEXT, pull(10)))
    first = messages(conn.read())
    assert sseqs(first) == list(range(1, 11))
    router = conn.client.account.router
    apply, written_before = router.ack_many, []

    def ack_many(subjects):
        written_before.append(b"".join(conn.transport.writes))
        apply(subjects)
    router.ack_many = ack_many
    conn.feed(acks_for(first) + conn.request(NEXT, pull(10)))
    # the request was answered first (its messages were written before the acks were
    # applied, all in one go), and every ack was applied by the end of the read
    assert len(written_before) == 1 and sseqs(messages(written_before[0])) == list(range(11, 21))
    second = messages(conn.read())
    assert sseqs(second) == list(range(11, 21))
    info = js.consumer_info("ORDERS", "C")
    assert info.num_ack_pending == 10
    assert info.ack_floor.stream_seq == 10


def test_acks_go_first_when_max_ack_pending_would_bind(js, conn):
    """With every delivered message still pending the request would find the consumer
    at max_ack_pending: the acks before it must count, as they do in order."""
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit", max_ack_pending=5)
    conn.feed(conn.request(NEXT, pull(5)))
    first = messages(conn.read())
    assert sseqs(first) == [1, 2, 3, 4, 5]
    out = b""
    conn.feed(acks_for(first) + conn.request(NEXT, pull(5, no_wait=True)))
    out = conn.read()
    assert sseqs(messages(out)) == [6, 7, 8, 9, 10]
    assert b"409" not in out and b"404" not in out


def test_acks_go_first_when_redeliveries_wait(js, conn, clock):
    """Messages whose ack wait ran out are queued for redelivery; the client's acks of
    them, sent before its next request, must keep them from being delivered again."""
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit", ack_wait=SECOND)
    conn.feed(conn.request(NEXT, pull(3)))
    first = messages(conn.read())
    clock.advance(3 * SECOND)
    js.tick()
    conn.feed(acks_for(first) + conn.request(NEXT, pull(3, no_wait=True)))
    assert sseqs(messages(conn.read())) == [4, 5, 6]
    assert js.consumer_info("ORDERS", "C").num_redelivered == 0


def test_an_ack_is_seen_by_the_api_request_after_it(js, conn):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    conn.feed(conn.request(NEXT, pull(4)))
    first = messages(conn.read())
    conn.feed(acks_for(first[:3]) + conn.request("$JS.API.CONSUMER.INFO.ORDERS.C", b""))
    out = conn.read()
    info = json.loads(out[out.index(b"{"):out.rindex(b"}") + 1])
    assert info["num_ack_pending"] == 1
    assert info["ack_floor"]["stream_seq"] == 3


def test_acks_on_their_own_are_applied_by_the_end_of_the_read(js, conn):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    conn.feed(conn.request(NEXT, pull(6)))
    first = messages(conn.read())
    conn.feed(acks_for(first[1:]))      # all but the first
    assert js.consumer_info("ORDERS", "C").num_ack_pending == 1
    assert conn.read() == b""


def test_a_double_ack_is_answered_in_order(js, conn):
    """An ack with a reply asks for an answer: it is not held back."""
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    conn.feed(conn.request(NEXT, pull(2)))
    first = messages(conn.read())
    conn.feed(b"PUB %s _INBOX.t.ack 0\r\n\r\n" % first[0][1].encode()
              + conn.request(NEXT, pull(1)))
    out = conn.read()
    assert out.index(b"_INBOX.t.ack") < out.index(b"$JS.ACK")
    assert js.consumer_info("ORDERS", "C").ack_floor.stream_seq == 1


def test_acks_to_unknown_consumers_and_odd_subjects_change_nothing(js, conn):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    conn.feed(conn.request(NEXT, pull(2)))
    first = messages(conn.read())
    conn.feed(b"PUB $JS.ACK.ORDERS.NOPE.1.1.1.1.0 0\r\n\r\n"
              b"PUB $JS.ACK.NOPE.C.1.1.1.1.0 0\r\n\r\n"
              b"PUB $JS.ACK.ORDERS.C.1 0\r\n\r\n"
              b"PUB $JS.ACK.ORDERS.C.x.y.z.1.0 0\r\n\r\n" + acks_for(first[1:]))
    info = js.consumer_info("ORDERS", "C")
    assert (info.num_ack_pending, info.ack_floor.stream_seq) == (1, 0)


def test_a_subscriber_to_ack_subjects_still_sees_every_ack(js):
    server = Server(js, host="127.0.0.1", port=-1)
    conn, watcher = Conn(server, 1), Conn(server, 2)
    watcher.feed(b"SUB $JS.ACK.> 7\r\n")
    assert server.global_account.table.ack_watchers == 1
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    conn.feed(conn.request(NEXT, pull(3)))
    first = messages(conn.read())
    conn.feed(acks_for(first))
    seen = watcher.read()
    assert seen.count(b"MSG $JS.ACK.ORDERS.C.") == 3
    assert js.consumer_info("ORDERS", "C").num_ack_pending == 0
    watcher.feed(b"UNSUB 7\r\n")
    assert server.global_account.table.ack_watchers == 0


@pytest.mark.parametrize("subject,watches", [
    ("$JS.ACK.>", True), ("$JS.>", True), ("*.ACK.>", True), (">", True),
    ("$JS.ACK.ORDERS.C.1.1.1.1.0", True), ("$JS.API.>", True), ("_INBOX.*", False),
    ("$JS.API.INFO", False), ("orders.*", False)])
def test_the_table_counts_subscriptions_that_may_see_acks(subject, watches):
    from jsstore.server.subscriptions import SubjectTable, Subscription
    table = SubjectTable(random.Random(0).randrange)
    subs = [Subscription(None, subject, None, "1"), Subscription(None, subject, "q", "2")]
    for sub in subs:
        table.insert(sub)
    assert table.ack_watchers == (2 if watches else 0)
    table.remove(subs[0])
    table.remove(subs[0])                   # twice: counted once
    assert table.ack_watchers == (1 if watches else 0)
    table.remove(subs[1])
    assert table.ack_watchers == 0


def test_a_long_pull_batch_is_written_first_few_then_the_rest(js, conn):
    from jsstore.consumer.delivery import FIRST_HANDOVER, LONG_RUN
    for i in range(LONG_RUN + FIRST_HANDOVER):
        js.publish("orders.new", b"more %d" % i)
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    wanted = FIRST_HANDOVER + LONG_RUN
    conn.feed(conn.request(NEXT, pull(wanted)))
    # the first few were written while the read was handled, the rest wait for the
    # loop turn's write
    assert [sseqs(messages(w)) for w in conn.transport.writes] == [
        list(range(1, FIRST_HANDOVER + 1))]
    assert sseqs(messages(conn.read())) == list(range(1, wanted + 1))


def test_a_short_pull_batch_is_written_at_once(js, conn):
    """Fewer than LONG_RUN after the first few: one write (a write of its own for the
    first few would cost a system call and gain nothing)."""
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    conn.feed(conn.request(NEXT, pull(30)))
    assert conn.transport.writes == []
    assert sseqs(messages(conn.read())) == list(range(1, 31))


def test_acks_after_one_that_asks_for_an_answer_are_applied(js, conn):
    """A double ack (with a reply) applies the acks held before it; the plain acks after
    it must still be applied by the end of the read."""
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    conn.feed(conn.request(NEXT, pull(3)))
    first = messages(conn.read())
    conn.feed(acks_for(first[:1]) + b"PUB %s _INBOX.t.ack 0\r\n\r\n" % first[1][1].encode()
              + acks_for(first[2:]))
    info = js.consumer_info("ORDERS", "C")
    assert (info.num_ack_pending, info.ack_floor.stream_seq) == (0, 3)
