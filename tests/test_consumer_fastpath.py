"""The runs of first deliveries made in C (Consumer._deliver_run: runs.take_run) against
the message-by-message loop: the same operations give the same deliveries, ack subjects
and consumer info, for pull requests (over the bus and an embedded fetch's sink) and push
consumers alike."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jsstore
from clocks import SECOND, Clock
from jsstore.consumer import consumer as consumer_module
from jsstore.consumer.consumer import Consumer

OPS = st.lists(st.tuples(st.sampled_from(["pub", "fetch", "ack", "nak", "term", "advance",
                                          "pull_bus", "delete"]),
                         st.integers(0, 7)), max_size=40)


def run(ops, config, fast: bool, stream_config=None):
    """`fast`: runs where they may go (False: the message-by-message loop only).  With a
    deliver_subject in `config` the consumer is a push one: what it delivers is acked,
    nak'ed or terminated as fetched messages are."""
    clock = Clock()
    js = jsstore.open(clock=clock)
    js.add_stream(name="S", subjects=["s.*"], **(stream_config or {}))
    js.add_consumer("S", durable_name="C", **config)
    push = "deliver_subject" in config
    seen, outstanding = [], []
    router = js.router()
    if push:
        def pushed(m):
            seen.append(("push", m.subject, m.reply, m.hdr))
            if m.reply and m.reply.startswith("$JS.ACK."):  # (not heartbeats, flow control)
                outstanding.append(m.reply)
        inbox = js.bus.subscribe(config["deliver_subject"], pushed)
    else:
        sub = js.pull_subscribe("s.*", "C", stream="S")
        inbox = js.bus.subscribe("_bus", lambda m: seen.append(("bus", m.subject, m.reply,
                                                                m.hdr)))
    original = Consumer._runs_now
    if not fast:
        Consumer._runs_now = lambda self: False
    try:
        for op, arg in ops:
            if op == "pub":
                for i in range(arg + 1):
                    js.publish(f"s.{(arg + i) % 3}", b"m%d" % i)
            elif op == "fetch" and not push:
                try:
                    got = sub.fetch(arg + 1, timeout=0)
                except TimeoutError:
                    got = []
                for msg in got:
                    seen.append(("fetch", msg.subject, msg.reply, msg.metadata))
                outstanding.extend(got)
            elif op in ("ack", "nak", "term") and outstanding:
                msg = outstanding.pop(arg % len(outstanding))
                if push:
                    payload = {"ack": b"", "nak": b"-NAK", "term": b"+TERM"}[op]
                    router.dispatch(msg, payload, None, lambda hdr, body: None, None)
                else:
                    getattr(msg, op)()
            elif op == "delete":
                try:
                    js.delete_msg("S", arg * 2 + 1)
                except Exception:       # (not there: the same either way)
                    pass
            elif op == "advance":
                clock.advance(arg * 5 * SECOND)
                js.tick()
            elif op == "pull_bus" and not push:
                router.dispatch("$JS.API.CONSUMER.MSG.NEXT.S.C",
                                b'{"batch":%d,"expires":%d}' % (arg + 1, SECOND),
                                None, lambda hdr, body: None, "_bus")
            info = js.consumer_info("S", "C")
            seen.append((info.delivered, info.ack_floor, info.num_ack_pending,
                         info.num_redelivered, info.num_pending, info.num_waiting))
    finally:
        Consumer._runs_now = original
        inbox.unsubscribe()
        js.close()
    return seen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS, st.sampled_from([{"ack_policy": "explicit"},
                             {"ack_policy": "explicit", "max_ack_pending": 3},
                             {"ack_policy": "all", "filter_subject": "s.1"},
                             {"ack_policy": "explicit", "max_deliver": 2, "ack_wait": 10 * SECOND},
                             {"ack_policy": "none"}]))
def test_batched_delivery_matches_the_loop(ops, config):
    assert run(ops, config, fast=True) == run(ops, config, fast=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS, st.sampled_from([{"ack_policy": "explicit"},
                             {"ack_policy": "explicit", "max_ack_pending": 5},
                             {"ack_policy": "explicit", "filter_subject": "s.2"},
                             {"ack_policy": "explicit", "filter_subjects": ["s.0", "s.2"]},
                             {"ack_policy": "explicit", "max_deliver": 2,
                              "ack_wait": 10 * SECOND}]),
       st.sampled_from([{}, {"max_msgs": 6}, {"max_msgs_per_subject": 2}]))
def test_runs_match_the_loop_as_the_stream_loses_messages(ops, config, stream_config):
    """Deletes and stream limits removing messages on the way."""
    assert run(ops, config, True, stream_config) == run(ops, config, False, stream_config)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS, st.sampled_from([{"ack_policy": "explicit"},
                             {"ack_policy": "explicit", "max_ack_pending": 3},
                             {"ack_policy": "all", "filter_subject": "s.1"},
                             {"ack_policy": "explicit", "filter_subjects": ["s.0", "s.2"],
                              "max_deliver": 2, "ack_wait": 10 * SECOND},
                             {"ack_policy": "none"},
                             {"ack_policy": "explicit", "headers_only": True},
                             {"ack_policy": "explicit", "idle_heartbeat": 5 * SECOND,
                              "flow_control": True},
                             {"ack_policy": "explicit", "rate_limit_bps": 8000}]),
       st.sampled_from([{}, {"max_msgs": 6}]))
def test_push_runs_match_the_loop(ops, config, stream_config):
    config = dict(config, deliver_subject="d.c")
    assert run(ops, config, True, stream_config) == run(ops, config, False, stream_config)


@pytest.mark.parametrize("config", [{"ack_policy": "explicit"},
                                    {"ack_policy": "explicit", "deliver_subject": "d.c"}])
def test_runs_are_taken(monkeypatch, config):
    """The runs made in C are the ones taken for a plain pull request and a push
    consumer."""
    calls = []
    real = consumer_module.take_run

    def counted(*args):
        calls.append(args[3])
        return real(*args)
    monkeypatch.setattr(consumer_module, "take_run", counted)
    ops = [("pub", 7), ("pull_bus", 7), ("ack", 0), ("pub", 7), ("pull_bus", 7)]
    seen = run(ops, config, True)
    assert calls and sum(1 for entry in seen if entry[0] in ("bus", "push")) == 16


@pytest.mark.parametrize("fast", [True, False])
def test_names_beyond_ascii_in_a_run(fast, monkeypatch):
    """Stream and consumer names need not be ASCII: the run's ack subjects carry them as
    the loop's do (a run once refused them)."""
    if not fast:
        monkeypatch.setattr(Consumer, "_runs_now", lambda self: False)
    js = jsstore.open(clock=Clock())
    js.add_stream(name="Straße", subjects=["s.>"])
    js.add_consumer("Straße", durable_name="Zoë", ack_policy="explicit")
    for _ in range(3):
        js.publish("s.x", b"m")
    got = js.pull_subscribe("s.>", "Zoë", stream="Straße").fetch(3, timeout=0)
    assert [m.reply.rsplit(".", 5)[0] for m in got] == ["$JS.ACK.Straße.Zoë"] * 3
    for msg in got:
        msg.ack()
    assert js.consumer_info("Straße", "Zoë").num_ack_pending == 0
    js.close()
