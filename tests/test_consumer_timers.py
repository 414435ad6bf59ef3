"""A JetStream's timed consumer work runs for the consumers it is due for: a tick does not
visit the others (ConsumerRegistry's heap of due times), and what is due still comes on
time with many consumers, one of them removed meanwhile."""

import pytest

import jsstore
from clocks import SECOND, Clock
from jsstore.consumer.consumer import Consumer


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def js(clock, tmp_path):
    js = jsstore.open(tmp_path, clock=clock)
    js.add_stream(name="S", subjects=["s.>"])
    yield js
    js.close()


@pytest.fixture
def ticked(monkeypatch):
    names: list[str] = []
    real = Consumer.tick

    def counting(self, now):
        names.append(self.name)
        return real(self, now)
    monkeypatch.setattr(Consumer, "tick", counting)
    return names


def test_a_tick_runs_only_the_due_consumers(js, clock, ticked):
    for i in range(50):
        js.add_consumer("S", durable_name=f"c{i}", filter_subject=f"s.{i}",
                        ack_policy="explicit", ack_wait=30 * SECOND)
        js.publish(f"s.{i}", b"x")
    js.tick()
    assert ticked == []             # new pull consumers with nothing timed: no tick
    # c7 delivers: its ack wait is due in 30 s, nobody else's
    (msg,) = js.pull_subscribe("s.7", "c7", stream="S").fetch(1, timeout=0)
    clock.advance(10 * SECOND)
    js.tick()
    assert ticked == []
    clock.advance(21 * SECOND)
    js.tick()
    assert ticked == ["c7"]
    info = js.consumer_info("S", "c7")
    assert info.num_redelivered == 0 and info.num_ack_pending == 1
    (again,) = js.pull_subscribe("s.7", "c7", stream="S").fetch(1, timeout=0)
    assert again.metadata.num_delivered == 2


def test_due_work_of_many_consumers_comes_in_creation_order(js, clock, ticked):
    subs = []
    for i in range(20):
        js.add_consumer("S", durable_name=f"c{i}", filter_subject=f"s.{i}",
                        ack_policy="explicit", ack_wait=5 * SECOND)
        js.publish(f"s.{i}", b"x")
    for i in reversed(range(20)):   # deliveries in the reverse order, same instant
        subs.append(js.pull_subscribe(f"s.{i}", f"c{i}", stream="S").fetch(1, timeout=0))
    js.delete_consumer("S", "c3")   # a removed consumer is not ticked
    js.tick()
    ticked.clear()
    clock.advance(6 * SECOND)
    js.tick()
    assert ticked == [f"c{i}" for i in range(20) if i != 3]
    for i in range(20):
        if i != 3:
            (msg,) = js.pull_subscribe(f"s.{i}", f"c{i}", stream="S").fetch(1, timeout=0)
            assert msg.metadata.num_delivered == 2
