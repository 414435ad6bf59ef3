"""A read's plain acks (Router.ack_many: grouped by consumer, taken apart and applied in
C by AckState.ack_explicit_run, one signal per consumer) against the same acks sent one at
a time (each its own $JS.ACK message, Acknowledgements.process), each step handled as the
server handles a read: the consumers' signals deferred to its end
(jsstore.jetstream.signals), where each consumer gathers once.  (Gathering at once after
each ack, as a library call does, lets one ack's deliveries come before the next ack;
nats-server's consumers deliver from their own goroutine, whenever it runs.)

Each consumer must see the same deliveries (ack subjects included) in the same order, and
every consumer's info must be the same after every step."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jsstore
from clocks import SECOND, Clock

CONSUMERS = {
    # pull consumers, filtered and not, one stalling on max_ack_pending
    "A": {"ack_policy": "explicit", "filter_subject": "s.1"},
    "B": {"ack_policy": "explicit", "max_ack_pending": 2},
    "C": {"ack_policy": "explicit", "filter_subjects": ["s.0", "s.2"], "max_deliver": 3,
          "ack_wait": 10 * SECOND},
    # push consumers
    "P": {"ack_policy": "explicit", "deliver_subject": "d.p", "max_ack_pending": 40},
    "R": {"ack_policy": "explicit", "deliver_subject": "d.r", "max_ack_pending": 3},
    "Q": {"ack_policy": "explicit", "deliver_subject": "d.q", "filter_subject": "s.0"},
    "N": {"ack_policy": "none", "deliver_subject": "d.n"},
}

OPS = st.lists(st.tuples(st.sampled_from(["pub", "pull", "drain", "acks", "acks", "acks",
                                          "nak", "advance", "stale", "delete"]),
                         st.integers(0, 7), st.integers(0, 2**16)),
               max_size=30)


def run(ops, retention: str, grouped: bool, consumers: dict | None = None):
    # (messages out to every consumer first, so that most examples have acks to send)
    ops = [("pub", 7, 0), ("pull", 5, 0), ("pub", 3, 0)] + list(ops)
    clock = Clock()
    js = jsstore.open(clock=clock)
    js.add_stream(name="S", subjects=["s.*"], retention=retention)
    consumers = CONSUMERS if consumers is None else consumers
    names = [n for n in consumers if retention == "limits" or n != "N"]
    for name in names:
        js.add_consumer("S", durable_name=name, **consumers[name])
    seen = {name: [] for name in names}
    outstanding: list[str] = []

    def taker(name):
        def take(msg):
            seen[name].append((msg.subject, msg.reply, msg.hdr))
            if name != "N" and msg.reply and msg.reply.startswith("$JS.ACK."):
                outstanding.append(msg.reply)
        return take
    subs = [js.bus.subscribe(f"_in.{name}", taker(name)) for name in names]
    subs += [js.bus.subscribe(consumers[name]["deliver_subject"], taker(name))
             for name in names if "deliver_subject" in consumers[name]]
    router = js.router()

    def acks(subjects):
        if grouped:
            router.ack_many(subjects)
        else:
            for subject in subjects:
                router.dispatch(subject, b"", None, lambda hdr, body: None, None)
    states = []
    try:
        for op, arg, seed in ops:
            rnd = random.Random(seed)
            assert js.signals.defer()
            if op == "pub":
                for i in range(arg + 1):
                    js.publish(f"s.{(arg + i) % 3}", b"m%d" % i)
            elif op == "pull":
                for name in names:
                    if "deliver_subject" not in consumers[name]:
                        router.dispatch(f"$JS.API.CONSUMER.MSG.NEXT.S.{name}",
                                        b'{"batch":%d,"expires":%d}' % (arg + 1, 60 * SECOND),
                                        None, lambda hdr, body: None, f"_in.{name}")
            elif op == "drain":
                for name in names:
                    if "deliver_subject" not in consumers[name]:
                        router.dispatch(f"$JS.API.CONSUMER.MSG.NEXT.S.{name}",
                                        b'{"batch":60,"no_wait":true}', None,
                                        lambda hdr, body: None, f"_in.{name}")
            elif op == "acks" and outstanding:
                # some of the deliveries waiting for an ack, in a random order, some twice
                # (drawn from them sorted: the order deliveries to different consumers
                # came in may differ, and need not be the same)
                outstanding.sort()
                picked = rnd.sample(outstanding, min(len(outstanding), arg * 3 + 1))
                picked += rnd.sample(picked, min(len(picked), arg // 3))
                for subject in picked:
                    if subject in outstanding:
                        outstanding.remove(subject)
                acks(picked)
            elif op == "stale" and outstanding:
                outstanding.sort()
                # acks naming what was never delivered, between real ones
                subject = outstanding[arg % len(outstanding)]
                tokens = subject.split(".")
                tokens[5] = str(int(tokens[5]) + 1000)
                acks([subject, ".".join(tokens), subject])
            elif op == "nak" and outstanding:
                outstanding.sort()
                subject = outstanding.pop(arg % len(outstanding))
                router.dispatch(subject, b"-NAK", None, lambda hdr, body: None, None)
            elif op == "advance":
                clock.advance(arg * 4 * SECOND)
                js.tick()
            elif op == "delete":
                seq = arg + 1
                try:
                    js.delete_msg("S", seq)
                except Exception:
                    pass
            js.signals.settle()
            states.append([_info(js, name) for name in names])
    finally:
        for sub in subs:
            sub.unsubscribe()
        js.close()
    return seen, states


def _info(js, name):
    info = js.consumer_info("S", name)
    return (name, info.delivered, info.ack_floor, info.num_ack_pending, info.num_redelivered,
            info.num_pending, info.num_waiting)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS, st.sampled_from(["limits", "limits", "limits", "interest", "workqueue"]))
def test_grouped_acks_match_one_by_one(ops, retention):
    # (a work queue takes no overlapping consumers: the unfiltered pull one alone)
    consumers = {"B": CONSUMERS["B"]} if retention == "workqueue" else None
    assert run(ops, retention, True, consumers) == run(ops, retention, False, consumers)


CAUGHT_UP = {name: CONSUMERS[name] for name in ("A", "C", "P")}
CAUGHT_UP_OPS = st.lists(st.tuples(st.sampled_from(["pub", "drain", "acks", "acks", "stale",
                                                    "delete", "advance"]),
                                   st.integers(0, 7), st.integers(0, 2**16)), max_size=30)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CAUGHT_UP_OPS)
def test_grouped_acks_of_caught_up_consumers_match_one_by_one(ops):
    """Consumers that have looked at every message."""
    assert run(ops, "limits", True, CAUGHT_UP) == run(ops, "limits", False, CAUGHT_UP)


def _gathers(backlog: int) -> tuple[int, object]:
    """Gathers of a push consumer (max_ack_pending 200) while one read acks the 200
    deliveries it has, with `backlog` more messages stored."""
    js = jsstore.open(clock=Clock())
    js.add_stream(name="S", subjects=["s.*"])
    js.add_consumer("S", durable_name="P", deliver_subject="d.p", ack_policy="explicit",
                    max_ack_pending=200)
    got = []
    sub = js.bus.subscribe("d.p", lambda m: got.append(m.reply))
    for _ in range(200 + backlog):
        js.publish("s.x", b"x")
    assert len(got) == 200
    consumer = js.consumers.lookup_locked("S", "P")
    calls = []
    original = consumer.gather

    def counting():
        calls.append(1)
        original()
    consumer.gather = counting
    js.router().ack_many(list(got))
    assert len(got) == 200 + backlog
    info = js.consumer_info("S", "P")
    sub.unsubscribe()
    js.close()
    return len(calls), info


def test_a_caught_up_push_consumer_gathers_once_per_read():
    """The point of grouping: 200 acks of a push consumer with nothing left to deliver,
    one gather (one by one, each ack would gather)."""
    calls, info = _gathers(0)
    assert calls == 1
    assert info.ack_floor.stream_seq == 200 and info.num_ack_pending == 0


def test_a_stalled_push_consumer_gathers_once_per_read():
    """With messages waiting behind max_ack_pending, the 200 acks make room for 150 more
    and one gather delivers them all."""
    calls, info = _gathers(150)
    assert calls == 1
    assert info.delivered.stream_seq == 350 and info.num_ack_pending == 150


# -- AckState runs --------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["explicit", "all", "none"]),
       st.lists(st.tuples(st.sampled_from(["deliver", "ack", "redeliver"]), st.integers(0, 40),
                          st.integers(1, 6)), max_size=25))
def test_update_delivered_run_matches_one_by_one(policy, ops):
    from jsstore._core.storage.ackstate import AckState
    from jsstore.errors import MsgNotFound
    run, loop = AckState(policy), AckState(policy)
    dseq = sseq = 0
    for op, at, count in ops:
        if op == "deliver":
            seqs = [sseq + 1 + i + (at % 3) * i for i in range(count)]
            assert run.update_delivered_run(dseq + 1, seqs, 1000 + at) == any(
                [loop.update_delivered(dseq + 1 + i, seq, 1, 1000 + at)
                 for i, seq in enumerate(seqs)])
            dseq += count
            sseq = seqs[-1]
        elif op == "redeliver" and policy != "none" and sseq:
            seq = at % sseq + 1
            dseq += 1
            for state in (run, loop):
                state.update_delivered(dseq, seq, count + 1, 2000)
        elif op == "ack" and policy != "none" and sseq:
            seq = at % sseq + 1
            for state in (run, loop):
                try:
                    state.update_acks(dseq, seq)
                except MsgNotFound:
                    pass
        assert run.state() == loop.state()


# -- ack subjects taken apart in C ----------------------------------------------------------
NUMBER = st.one_of(st.integers(0, 10**20).map(str), st.sampled_from(["", "x", "1a", "\u0661",
                                                                    "00", "-1", "18446744073709551616"]))
NAME = st.sampled_from(["S", "C", "D", "", "\u00e9"])


def _reference(subjects):
    """The plain v1 acks plain_v1_acks takes (its module's rules, in Python), grouped as it
    groups them; None when one is not."""
    groups: dict = {}
    for subject in subjects:
        tokens = subject.split(".")
        if not subject.isascii() or len(tokens) != 9 or not subject.startswith("$JS.ACK."):
            return None
        delivered, sseq, dseq = tokens[4], tokens[5], tokens[6]
        if not (delivered.isdigit() and sseq.isdigit() and dseq.isdigit()
                and len(delivered) < 19 and len(sseq) < 19 and len(dseq) < 19
                and tokens[7].isdigit() and tokens[8].isdigit() and int(sseq)):
            return None
        group = groups.setdefault((tokens[2], tokens[3]),
                                  [tokens[2], tokens[3], [], [], []])
        group[2].append(int(sseq))
        group[3].append(int(dseq))
        group[4].append(subject)
    return list(groups.values())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(NAME, NAME, NUMBER, NUMBER, NUMBER, NUMBER, NUMBER).map(
        lambda t: "$JS.ACK." + ".".join(t)),
    st.tuples(NAME, NAME, NUMBER).map(lambda t: "$JS.ACK." + ".".join(t)),
    st.sampled_from(["$JS.ACK.S.C.1.2.3.4.5.6", "$JS.ACX.S.C.1.2.3.4.5", "$JS.ACK.S.C.1.2.3.4.5"]),
), max_size=6))
def test_plain_v1_acks_takes_what_the_python_path_takes(subjects):
    from jsstore._core.wire.ackparse import plain_v1_acks
    assert plain_v1_acks(subjects) == _reference(subjects)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(NAME, NAME, NUMBER, NUMBER, NUMBER, NUMBER, NUMBER).map(
    lambda t: "$JS.ACK." + ".".join(t)), min_size=1, max_size=4))
def test_plain_v1_acks_reads_the_seqs_ack_reply_info_reads(subjects):
    """A group's seqs are those the one-by-one path (Acknowledgements.process) reads."""
    from jsstore._core.wire.ackparse import plain_v1_acks
    from jsstore.wire.ackreply import ack_reply_info
    groups = plain_v1_acks(subjects)
    if groups is None:
        return
    for _, _, stream_seqs, delivery_seqs, taken in groups:
        for sseq, dseq, subject in zip(stream_seqs, delivery_seqs, taken):
            assert ack_reply_info(subject)[:2] == (sseq, dseq)
