"""The batched delivery run (Consumer._gather_run) against the message-by-message loop:
the same operations give the same deliveries, ack subjects and consumer info."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jsstore
from clocks import SECOND, Clock
from jsstore.consumer import consumer as consumer_module
from jsstore.consumer.consumer import Consumer

OPS = st.lists(st.tuples(st.sampled_from(["pub", "fetch", "ack", "nak", "term", "advance",
                                          "pull_bus", "delete"]),
                         st.integers(0, 7)), max_size=40)


def run(ops, config, fast: bool | str, stream_config=None):
    """`fast`: True (the run, its messages made in C where it can), "python" (the run's
    Python loop only), False (the message-by-message loop only)."""
    clock = Clock()
    js = jsstore.open(clock=clock)
    js.add_stream(name="S", subjects=["s.*"], **(stream_config or {}))
    js.add_consumer("S", durable_name="C", **config)
    sub = js.pull_subscribe("s.*", "C", stream="S")
    seen, outstanding = [], []
    inbox = js.bus.subscribe("_bus", lambda m: seen.append(("bus", m.subject, m.reply, m.hdr)))
    original, block_store = Consumer._gather_run, consumer_module.BlockStore
    if not fast:
        Consumer._gather_run = lambda self, wr, now: False
    elif fast == "python":
        consumer_module.BlockStore = type("NotABlockStore", (), {})
    try:
        for op, arg in ops:
            if op == "pub":
                for i in range(arg + 1):
                    js.publish(f"s.{(arg + i) % 3}", b"m%d" % i)
            elif op == "fetch":
                try:
                    got = sub.fetch(arg + 1, timeout=0)
                except TimeoutError:
                    got = []
                for msg in got:
                    seen.append(("fetch", msg.subject, msg.reply, msg.metadata))
                outstanding.extend(got)
            elif op in ("ack", "nak", "term") and outstanding:
                msg = outstanding.pop(arg % len(outstanding))
                getattr(msg, op)()
            elif op == "delete":
                try:
                    js.delete_msg("S", arg * 2 + 1)
                except Exception:       # (not there: the same either way)
                    pass
            elif op == "advance":
                clock.advance(arg * 5 * SECOND)
                js.tick()
            elif op == "pull_bus":
                js.router().dispatch("$JS.API.CONSUMER.MSG.NEXT.S.C",
                                      b'{"batch":%d,"expires":%d}' % (arg + 1, SECOND),
                                      None, lambda hdr, body: None, "_bus")
            info = js.consumer_info("S", "C")
            seen.append((info.delivered, info.ack_floor, info.num_ack_pending,
                         info.num_redelivered, info.num_pending, info.num_waiting))
    finally:
        Consumer._gather_run, consumer_module.BlockStore = original, block_store
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
def test_runs_made_in_c_match_the_python_run_and_the_loop(ops, config, stream_config):
    """The run's messages made by pullrun.take_run: the same deliveries, ack subjects and
    consumer info as the run's Python loop and the message-by-message loop, with deletes
    and stream limits removing messages on the way."""
    fast = run(ops, config, True, stream_config)
    assert fast == run(ops, config, "python", stream_config)
    assert fast == run(ops, config, False, stream_config)


def test_a_plain_pull_batch_is_made_in_c(monkeypatch):
    """The run made in C is the one taken for a plain pull request."""
    calls = []
    real = consumer_module.take_run

    def counted(*args):
        calls.append(args[3])
        return real(*args)
    monkeypatch.setattr(consumer_module, "take_run", counted)
    ops = [("pub", 7), ("pull_bus", 7), ("ack", 0), ("pub", 7), ("pull_bus", 7)]
    seen = run(ops, {"ack_policy": "explicit"}, True)
    assert calls and sum(1 for entry in seen if entry[0] == "bus") == 16
