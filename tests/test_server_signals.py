"""Consumers signalled by a client's read gather once, when the read is handled
(jsstore.jetstream.signals), driven in process: a read of many publishes and of many acks
makes each consumer gather once, every consumer signalled gathers even when another
one's gather fails (that failure is logged as the client's internal error, and the client
stays connected), and outside a read a signal gathers at once."""

from __future__ import annotations

import logging

import jsstore
from clocks import Clock
from inprocess import Conn, messages
from jsstore.consumer.consumer import Consumer
from jsstore.server import Server


def _server():
    js = jsstore.open(clock=Clock())
    js.add_stream(name="S", subjects=["s.*"])
    return js, Server(js, host="127.0.0.1", port=-1)


def _two_push_consumers():
    """A JetStream with push consumers A and B (on d.a and d.b, both watched by one
    connection) served in process, that watcher and a publishing connection."""
    js, server = _server()
    watcher, publisher = Conn(server, 1, "_INBOX.w"), Conn(server, 2, "_INBOX.p")
    watcher.feed(b"SUB d.a 11\r\nSUB d.b 12\r\n")
    for name in ("A", "B"):
        js.add_consumer("S", durable_name=name, deliver_subject=f"d.{name.lower()}",
                        ack_policy="explicit")
    return js, watcher, publisher


def _counting(monkeypatch, fail: str | None = None) -> dict:
    calls: dict[str, int] = {}
    real = Consumer.gather

    def gather(self):
        calls[self.name] = calls.get(self.name, 0) + 1
        if self.name == fail:
            raise RuntimeError("a bug in a consumer's gather")
        real(self)
    monkeypatch.setattr(Consumer, "gather", gather)
    return calls


def test_a_read_of_publishes_and_one_of_acks_gather_each_consumer_once(monkeypatch):
    js, watcher, publisher = _two_push_consumers()
    calls = _counting(monkeypatch)
    publisher.feed(b"".join(b"PUB s.%d 1\r\nx\r\n" % (i % 3) for i in range(50)))
    assert calls == {"A": 1, "B": 1}
    delivered = messages(watcher.read())
    assert len(delivered) == 100
    calls.clear()
    watcher.feed(b"".join(b"PUB %s 0\r\n\r\n" % reply.encode() for _, reply in delivered))
    assert calls == {"A": 1, "B": 1}
    assert [c.num_ack_pending for c in js.consumers_info("S")] == [0, 0]
    js.close()


def test_a_failing_gather_leaves_the_others_and_the_client(monkeypatch, caplog):
    js, watcher, publisher = _two_push_consumers()
    calls = _counting(monkeypatch, fail="A")
    with caplog.at_level(logging.ERROR):
        publisher.feed(b"PUB s.1 1\r\nx\r\nPING\r\n")
    assert calls == {"A": 1, "B": 1}
    assert len(messages(watcher.read())) == 1         # B's delivery
    assert b"PONG" in publisher.read() and not publisher.client.closed
    assert "internal error" in caplog.text and "a bug in a consumer's gather" in caplog.text
    js.close()


def test_outside_a_read_a_signal_gathers_at_once(monkeypatch):
    js, server = _server()
    watcher = Conn(server, 1, "_INBOX.w")
    watcher.feed(b"SUB d.a 11\r\n")
    js.add_consumer("S", durable_name="A", deliver_subject="d.a", ack_policy="explicit")
    calls = _counting(monkeypatch)
    js.publish("s.1", b"x")
    js.publish("s.2", b"y")
    assert calls == {"A": 2}
    assert len(messages(watcher.read())) == 2
    js.close()
