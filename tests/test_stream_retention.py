"""Interest and workqueue retention: the mechanism a consumer uses, driven here by acks
applied directly (the consumer issue supplies real consumers)."""

import pytest

import jsstore


class FakeConsumer:
    """needs_ack as nats-server's consumer answers it: above the ack floor, not acked."""

    def __init__(self, name, filters=()):
        self.name = name
        self.filters = list(filters)
        self.acked = set()

    def needs_ack(self, seq, subject):
        return seq not in self.acked


@pytest.fixture(params=["file", "memory"])
def js(request, tmp_path):
    handle = jsstore.open(tmp_path if request.param == "file" else None)
    yield handle
    handle.close()


def register(js, stream_name, consumer):
    js._streams[stream_name].register_interest(consumer.name, consumer.filters, consumer.needs_ack)


def ack(js, stream_name, consumer, seq):
    consumer.acked.add(seq)
    return js._streams[stream_name].ack(consumer.name, seq)


def msgs(js, name):
    return js.stream_info(name).state.messages


def test_interest_stream_keeps_nothing_without_consumers(js):
    js.add_stream(name="I", subjects=["i.*"], retention="interest")
    assert js.request("i.a", b"1", {"Nats-Msg-Id": "m"}) == b'{"stream":"I","seq":1}'
    assert msgs(js, "I") == 0 and js.stream_info("I").state.last_seq == 1
    # the Msg-Id was still recorded
    assert js.publish("i.a", b"1", headers={"Nats-Msg-Id": "m"}).duplicate


def test_interest_removes_once_every_interested_consumer_acked(js):
    js.add_stream(name="I", subjects=["i.*"], retention="interest")
    a, b, only_x = FakeConsumer("A"), FakeConsumer("B"), FakeConsumer("X", ["i.x"])
    for c in (a, b, only_x):
        register(js, "I", c)
    js.publish("i.a", b"1")
    js.publish("i.x", b"2")
    js.publish("i.nobody", b"3")
    assert msgs(js, "I") == 3
    assert not ack(js, "I", a, 1)       # B still needs it
    assert ack(js, "I", b, 1)
    assert not ack(js, "I", a, 2)
    assert not ack(js, "I", b, 2)       # X's filter matches i.x: it still needs it
    assert ack(js, "I", only_x, 2)
    assert msgs(js, "I") == 1
    # a consumer going away releases what only it held
    assert js._streams["I"].unregister_interest("B") == 0   # A has not acked seq 3
    ack(js, "I", a, 3)
    assert msgs(js, "I") == 0


def test_interest_consumer_delete_releases_messages(js):
    js.add_stream(name="I", subjects=["i.*"], retention="interest")
    a, b = FakeConsumer("A"), FakeConsumer("B")
    register(js, "I", a)
    register(js, "I", b)
    for n in range(4):
        js.publish("i.a", str(n).encode())
    for seq in (1, 2):
        ack(js, "I", a, seq)
    assert msgs(js, "I") == 4
    assert js._streams["I"].unregister_interest("B") == 2
    assert msgs(js, "I") == 2
    assert js._streams["I"].unregister_interest("A") == 2    # nobody is left
    assert msgs(js, "I") == 0


def test_workqueue_removes_on_ack_and_keeps_messages_for_the_next_consumer(js):
    js.add_stream(name="W", subjects=["w.*"], retention="workqueue")
    worker = FakeConsumer("W1")
    js.publish("w.a", b"1")              # kept even before a consumer exists
    register(js, "W", worker)
    js.publish("w.a", b"2")
    assert ack(js, "W", worker, 1)
    assert msgs(js, "W") == 1
    assert js._streams["W"].unregister_interest("W1") == 0
    assert msgs(js, "W") == 1


def test_limits_streams_ignore_acks(js):
    js.add_stream(name="L", subjects=["l"])
    c = FakeConsumer("C")
    register(js, "L", c)
    js.publish("l", b"1")
    assert not ack(js, "L", c, 1)
    assert msgs(js, "L") == 1
