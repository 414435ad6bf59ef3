"""AckState: nats-server's consumer-state semantics and the o.dat codec.

The state machine drives AckState and ``AckModel`` (a plain-Python transcription of
nats-server's consumerMemStore rules, dicts and sorted lists only) with the same calls and
compares the full state after every step, including restarts through encode/decode.
"""

from __future__ import annotations

import bisect
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from jsstore._core.storage.ackstate import AckState, decode
from jsstore.errors import CorruptStreamState, MsgNotFound, NoAckPolicy
from jsstore.store.contract import ConsumerState, Pending, SequencePair

SECOND = 1_000_000_000
U64 = 1 << 64


class AckModel:
    """Reference model: the rules of nats-server's consumer stores over plain dicts."""

    def __init__(self, ack_policy: str, max_deliver: int) -> None:
        self.ack_policy = ack_policy
        self.max_deliver = max_deliver
        self.reset(0)

    def reset(self, sseq: int) -> None:
        self.delivered = [0, 0]       # consumer, stream
        self.floor = [0, 0]
        self.pending: dict[int, list[int]] = {}   # sseq -> [dseq, ts]
        self.sorted_pending: list[int] = []
        self.redelivered: dict[int, int] = {}
        self.set_starting(sseq)

    def set_starting(self, sseq: int) -> None:
        self.delivered[1] = self.floor[1] = sseq

    def update_starting(self, sseq: int) -> None:
        if sseq > self.delivered[1]:
            self.delivered[1] = sseq
            if self.ack_policy == "none":
                self.floor[1] = sseq

    def _drop(self, sseq: int) -> None:
        if self.pending.pop(sseq, None) is not None:
            self.sorted_pending.pop(bisect.bisect_left(self.sorted_pending, sseq))

    def update_delivered(self, dseq: int, sseq: int, dc: int, ts: int) -> None:
        if dc != 1 and self.ack_policy == "none":
            raise NoAckPolicy()
        if dseq <= self.floor[0]:
            return
        if self.ack_policy == "none":
            if dseq > self.delivered[0]:
                self.delivered[0] = self.floor[0] = dseq
            if sseq > self.delivered[1]:
                self.delivered[1] = self.floor[1] = sseq
            return
        if sseq <= self.delivered[1]:
            if sseq in self.pending:
                self.pending[sseq][1] = ts
        else:
            if sseq not in self.pending:
                bisect.insort(self.sorted_pending, sseq)
            self.pending[sseq] = [dseq, ts]
        self.delivered[0] = max(self.delivered[0], dseq)
        self.delivered[1] = max(self.delivered[1], sseq)
        if dc > 1:
            if self.max_deliver > 0 and dc > self.max_deliver:
                self._drop(sseq)
            if self.redelivered.get(sseq, 0) < dc - 1:
                self.redelivered[sseq] = dc - 1

    def update_acks(self, dseq: int, sseq: int) -> None:
        if self.ack_policy == "none":
            raise NoAckPolicy()
        self.redelivered.pop(sseq, None)
        if dseq <= self.floor[0]:
            return
        if sseq not in self.pending:
            raise MsgNotFound()
        if self.ack_policy in ("all", "flow_control"):
            gap = (sseq - self.floor[1]) % U64
            self.floor = [dseq, sseq]
            if gap > len(self.pending):
                for seq in [s for s in self.pending if s <= sseq]:
                    self._drop(seq)
                    self.redelivered.pop(seq, None)
            else:
                seq, low = sseq, sseq - gap
                while seq > low and self.pending:
                    self._drop(seq)
                    self.redelivered.pop(seq, None)
                    seq -= 1
            return
        original = self.pending[sseq][0]
        if dseq > original > 0:
            dseq = original
        self._drop(sseq)
        if not self.pending:
            self.floor = list(self.delivered)
        elif dseq == self.floor[0] + 1:
            self.floor = [dseq, sseq]
            if self.delivered[0] > dseq:
                i = bisect.bisect_right(self.sorted_pending, sseq)
                if i < len(self.sorted_pending) and self.sorted_pending[i] <= self.delivered[1]:
                    nxt = self.sorted_pending[i]
                    if self.pending[nxt][0] > 0:
                        self.floor = [self.pending[nxt][0] - 1, nxt - 1]

    def remove_redelivered_below(self, seq: int) -> None:
        if seq:
            self.redelivered = {s: c for s, c in self.redelivered.items() if s >= seq}

    def after_restart(self) -> None:
        """What an o.dat round trip keeps: whole-second timestamps, no redelivered at the floor."""
        for entry in self.pending.values():
            entry[1] = entry[1] // SECOND * SECOND
        self.redelivered.pop(self.floor[1], None)

    def state(self) -> ConsumerState:
        return ConsumerState(
            SequencePair(*self.delivered), SequencePair(*self.floor),
            {s: Pending(d, t) for s, (d, t) in sorted(self.pending.items())} or None,
            dict(sorted(self.redelivered.items())) or None)


def outcome(fn, *args):
    try:
        fn(*args)
    except (NoAckPolicy, MsgNotFound) as exc:
        return type(exc)
    return None


class AckStateMachine(RuleBasedStateMachine):
    @initialize(ack_policy=st.sampled_from(["none", "all", "explicit", "flow_control"]),
                max_deliver=st.sampled_from([-1, 0, 1, 2, 3]))
    def setup(self, ack_policy, max_deliver):
        self.acks = AckState(ack_policy=ack_policy, max_deliver=max_deliver)
        self.model = AckModel(ack_policy, max_deliver)
        self.clock = 1_700_000_000 * SECOND

    def both(self, method, *args):
        assert outcome(getattr(self.acks, method), *args) == outcome(getattr(self.model, method), *args)

    def tick(self, ns):
        self.clock += ns
        return self.clock

    @rule(gap=st.integers(1, 5), elapsed=st.integers(0, 3 * SECOND))
    def deliver_next(self, gap, elapsed):
        m = self.model
        self.both("update_delivered", m.delivered[0] + 1, m.delivered[1] + gap, 1, self.tick(elapsed))

    @precondition(lambda self: self.model.pending or self.model.redelivered)
    @rule(data=st.data(), elapsed=st.integers(0, 3 * SECOND))
    def redeliver(self, data, elapsed):
        m = self.model
        sseq = data.draw(st.sampled_from(sorted(set(m.pending) | set(m.redelivered))))
        dc = m.redelivered.get(sseq, 0) + 2
        self.both("update_delivered", m.delivered[0] + 1, sseq, dc, self.tick(elapsed))

    @precondition(lambda self: self.model.pending)
    @rule(data=st.data(), later_dseq=st.booleans())
    def ack_pending(self, data, later_dseq):
        m = self.model
        sseq = data.draw(st.sampled_from(sorted(m.pending)))
        dseq = m.delivered[0] if later_dseq else m.pending[sseq][0]
        self.both("update_acks", dseq, sseq)

    @rule(dseq=st.integers(0, 40), sseq=st.integers(0, 60))
    def ack_anything(self, dseq, sseq):
        self.both("update_acks", dseq, sseq)

    @rule(dseq=st.integers(0, 40), sseq=st.integers(0, 60), dc=st.integers(1, 4),
          ts=st.integers(0, 2_000_000_000 * SECOND))
    def deliver_anything(self, dseq, sseq, dc, ts):
        self.both("update_delivered", dseq, sseq, dc, ts)

    @rule(sseq=st.integers(0, 60))
    def update_starting(self, sseq):
        self.both("update_starting", sseq)

    @rule(sseq=st.integers(0, 60))
    def set_starting(self, sseq):
        self.both("set_starting", sseq)

    @rule(seq=st.integers(0, 60))
    def remove_redelivered_below(self, seq):
        self.both("remove_redelivered_below", seq)

    @rule(sseq=st.integers(0, 20))
    def reset(self, sseq):
        self.both("reset", sseq)

    @rule()
    def restart(self):
        encoded = self.acks.encode()
        self.acks = AckState(ack_policy=self.model.ack_policy, max_deliver=self.model.max_deliver)
        self.acks.load_encoded(encoded)
        self.model.after_restart()

    @invariant()
    def same_state(self):
        if not hasattr(self, "model"):
            return
        expected = self.model.state()
        assert self.acks.state() == expected
        assert self.acks.num_pending == len(self.model.pending)
        assert self.acks.num_redelivered == len(self.model.redelivered)
        assert (self.acks.delivered_consumer, self.acks.delivered_stream) == tuple(self.model.delivered)
        assert (self.acks.ack_floor_consumer, self.acks.ack_floor_stream) == tuple(self.model.floor)

    @invariant()
    def load_round_trips(self):
        if not hasattr(self, "model"):
            return
        copy = AckState(ack_policy=self.model.ack_policy)
        copy.load(self.acks.state())
        assert copy.state() == self.acks.state()


AckStateMachine.TestCase.settings = settings(
    max_examples=300, stateful_step_count=60, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestAckStateMachine = AckStateMachine.TestCase


@pytest.mark.parametrize("ack_policy", ["explicit", "all"])
def test_long_random_run_matches_model(ack_policy):
    """Thousands of pending entries: exercises map growth, order compaction and rebuilds."""
    rng = random.Random(7)
    acks, model = AckState(ack_policy=ack_policy, max_deliver=5), AckModel(ack_policy, 5)
    ts = 1_700_000_000 * SECOND
    for step in range(30_000):
        roll = rng.random()
        if roll < 0.45 or not model.pending:
            args = (model.delivered[0] + 1, model.delivered[1] + rng.randint(1, 3), 1, ts + step)
            method = "update_delivered"
        elif roll < 0.55:
            sseq = rng.choice(model.sorted_pending)
            args = (model.delivered[0] + 1, sseq, model.redelivered.get(sseq, 0) + 2, ts + step)
            method = "update_delivered"
        elif roll < 0.58 and ack_policy == "all":
            sseq = model.sorted_pending[rng.randrange(len(model.sorted_pending))]
            args, method = (model.pending[sseq][0], sseq), "update_acks"
        else:
            # mostly near the floor, so the floor keeps moving over acked gaps
            i = min(int(rng.expovariate(0.05)), len(model.sorted_pending) - 1)
            sseq = model.sorted_pending[i]
            args, method = (model.pending[sseq][0], sseq), "update_acks"
        assert outcome(getattr(acks, method), *args) == outcome(getattr(model, method), *args)
        if step % 5000 == 0:
            assert acks.state() == model.state()
    assert acks.state() == model.state()
    restored = AckState(ack_policy=ack_policy, max_deliver=5)
    restored.load_encoded(acks.encode())
    model.after_restart()
    assert restored.state() == model.state()


def test_ack_floor_moves_over_acked_gap():
    acks = AckState()
    for i in range(1, 11):
        acks.update_delivered(i, i * 2, 1, i * SECOND)
    acks.update_acks(1, 2)   # floor jumps to just below the next pending seq (4, dseq 2)
    assert (acks.ack_floor_consumer, acks.ack_floor_stream) == (1, 3)
    acks.update_acks(3, 6)   # not next to the floor: floor stays
    assert (acks.ack_floor_consumer, acks.ack_floor_stream) == (1, 3)
    acks.update_acks(2, 4)   # closes the gap up to 8 (dseq 4)
    assert (acks.ack_floor_consumer, acks.ack_floor_stream) == (3, 7)
    assert acks.pending_entry(8) == (4, 4 * SECOND)
    assert acks.pending_entry(6) is None


def test_redelivery_keeps_original_delivery_seq_and_max_deliver_drops():
    acks = AckState(max_deliver=2)
    acks.update_delivered(1, 10, 1, 1 * SECOND)
    acks.update_delivered(2, 10, 2, 5 * SECOND)
    assert acks.pending_entry(10) == (1, 5 * SECOND)
    assert acks.redelivery_count(10) == 1
    acks.update_delivered(3, 10, 3, 9 * SECOND)     # over max_deliver: no longer pending
    assert acks.pending_entry(10) is None and acks.redelivery_count(10) == 2
    assert (acks.delivered_consumer, acks.delivered_stream) == (3, 10)
    with pytest.raises(MsgNotFound):
        acks.update_acks(3, 10)
    assert acks.redelivery_count(10) == 0           # an ack clears the count regardless


def test_ack_none_moves_floor_with_delivered():
    acks = AckState(ack_policy="none")
    acks.update_delivered(1, 5, 1, 0)
    assert acks.state().ack_floor == SequencePair(1, 5)
    with pytest.raises(NoAckPolicy):
        acks.update_delivered(2, 6, 2, 0)
    with pytest.raises(NoAckPolicy):
        acks.update_acks(1, 5)
    acks.update_starting(9)
    assert acks.state().ack_floor == SequencePair(1, 9)


def test_ack_all_acks_everything_below():
    acks = AckState(ack_policy="all")
    for i in range(1, 6):
        acks.update_delivered(i, i, 1, 0)
    acks.update_delivered(6, 2, 2, 0)
    acks.update_acks(4, 4)
    state = acks.state()
    assert state.ack_floor == SequencePair(4, 4)
    assert sorted(state.pending) == [5] and state.redelivered is None


def test_ack_all_walks_down_from_the_ack_when_the_gap_is_small():
    # nats-server walks sseq, sseq-1, ... down to the old floor when the gap is no larger
    # than the pending count, dropping redelivery counts on the way; otherwise it drops every
    # pending seq at or below sseq and only their counts.
    acks = AckState(ack_policy="all")
    acks.load(ConsumerState(SequencePair(3, 3), SequencePair(1, 1),
                            {1: Pending(1, 0), 3: Pending(3, 0)}, {2: 1}))
    acks.update_acks(3, 3)                          # gap 2 == 2 pending: walk 3, 2
    assert acks.state() == ConsumerState(SequencePair(3, 3), SequencePair(3, 3),
                                         {1: Pending(1, 0)}, None)
    acks.load(ConsumerState(SequencePair(3, 3), SequencePair(0, 0),
                            {2: Pending(2, 0), 3: Pending(3, 0)}, {1: 1}))
    acks.update_acks(3, 3)                          # gap 3 > 2 pending: drop all <= 3
    assert acks.state() == ConsumerState(SequencePair(3, 3), SequencePair(3, 3), None, {1: 1})


def test_stale_updates_are_ignored():
    acks = AckState()
    acks.update_delivered(1, 1, 1, 0)
    acks.update_acks(1, 1)
    assert acks.update_delivered(1, 1, 1, 0) is False
    assert acks.update_acks(1, 1) is False
    assert acks.num_pending == 0


def test_remove_redelivered_below():
    acks = AckState()
    for sseq in (3, 7, 9):
        acks.update_delivered(sseq, sseq, 1, 0)
        acks.update_delivered(sseq + 10, sseq, 3, 0)
    assert acks.remove_redelivered_below(8) is True
    assert acks.state().redelivered == {9: 2}
    assert acks.remove_redelivered_below(0) is False


def test_bad_ack_policy():
    with pytest.raises(ValueError):
        AckState(ack_policy="sometimes")


# -- o.dat bytes ------------------------------------------------------------------------------

def hand_state():
    return ConsumerState(
        delivered=SequencePair(6, 12), ack_floor=SequencePair(2, 5),
        pending={7: Pending(3, 1000 * SECOND + 400_000_000),    # 1000.4 s
                 9: Pending(5, 998 * SECOND),                    # 998 s
                 11: Pending(6, 1003 * SECOND + 200_000_000)},   # 1003.2 s (after mints)
        redelivered={7: 2})


def test_encode_hand_computed_bytes():
    acks = AckState()
    acks.load(hand_state())
    # now = 1000.6 s rounds to mints = 1001. Per entry: sseq - 5, dseq - 2, mints - ts_seconds.
    expected = bytes([
        22, 2,                 # magic, version
        2, 5, 6, 12,           # ack floor (consumer, stream), delivered (consumer, stream)
        3,                     # three pending entries
        0xD2, 0x0F,            # varint 1001 (zig-zag 2002)
        2, 1, 2,               # sseq 7: offset 2, dseq offset 1, varint 1 (1001 - 1000)
        4, 3, 6,               # sseq 9: offset 4, dseq offset 3, varint 3 (1001 - 998)
        6, 4, 3,               # sseq 11: offset 6, dseq offset 4, varint -2 (1001 - 1003)
        1,                     # one redelivered entry
        2, 2,                  # sseq 7 (offset 2), count 2
    ])
    assert acks.encode(now_ns=1000 * SECOND + 600_000_000) == expected
    decoded = decode(expected)
    assert decoded.delivered == SequencePair(6, 12) and decoded.ack_floor == SequencePair(2, 5)
    assert decoded.pending == {7: Pending(3, 1000 * SECOND), 9: Pending(5, 998 * SECOND),
                               11: Pending(6, 1003 * SECOND)}
    assert decoded.redelivered == {7: 2}


def test_encode_rounds_like_go():
    acks = AckState()
    acks.load(ConsumerState(SequencePair(1, 1), SequencePair(0, 0), {1: Pending(1, 0)}, None))
    assert acks.encode(now_ns=1000 * SECOND + 500_000_000)[7:9] == bytes([0xD2, 0x0F])  # 1001
    assert acks.encode(now_ns=1000 * SECOND + 499_999_999)[7:9] == bytes([0xD0, 0x0F])  # 1000


def test_encode_empty_state():
    assert AckState().encode() == bytes([22, 2, 0, 0, 0, 0, 0, 0])
    assert decode(bytes([22, 2, 0, 0, 0, 0, 0, 0])) == ConsumerState()


def test_encode_wraps_offsets_below_the_floor():
    # A redelivered count below the ack floor is stored as a wrapped (10-byte) offset.
    acks = AckState()
    acks.load(ConsumerState(SequencePair(10, 10), SequencePair(10, 10), None, {4: 3}))
    encoded = acks.encode()
    assert encoded[-11:] == bytes([0xFA] + [0xFF] * 8 + [0x01, 3])   # 2**64 - 6, count 3
    assert decode(encoded).redelivered == {4: 3}


def test_decode_version_1():
    buf = bytes([
        22, 1,
        3, 10,        # ack floor consumer 3, stream 10
        2, 5,         # next-to-deliver: delivered = (2 + 3 - 1, 5 + 10 - 1) = (4, 14)
        1,            # one pending entry
        0xD0, 0x0F,   # varint 1000: v1 base
        2, 6,         # sseq 12, varint 3: ts = (3 + 1000) s, no delivery seq in v1
        2,            # two redelivered entries
        2, 4,         # sseq 12, count 4
        0, 5,         # offset 0: skipped, as nats-server does
    ])
    state = decode(buf)
    assert state.ack_floor == SequencePair(3, 10)
    assert state.delivered == SequencePair(4, 14)
    assert state.pending == {12: Pending(0, 1003 * SECOND)}
    assert state.redelivered == {12: 4}


def test_decode_tolerates_what_nats_tolerates():
    # Ends right after the sequences: no pending, no redelivered.
    assert decode(bytes([22, 2, 1, 2, 3, 4])) == ConsumerState(SequencePair(3, 4), SequencePair(1, 2))
    # Redelivered list cut short: the entries read so far are kept.
    state = decode(bytes([22, 2, 0, 0, 5, 5, 0, 3, 1, 2, 2]))
    assert state.redelivered == {1: 2}


@pytest.mark.parametrize("buf", [
    b"",
    b"\x16",
    b"\x17\x02\x00\x00\x00\x00\x00\x00",                  # bad magic
    b"\x16\x03\x00\x00\x00\x00\x00\x00",                  # unknown version
    b"\x16\x02\x01\x02\x03",                              # truncated sequences
    b"\x16\x02" + b"\xff" * 11,                           # overlong varint
    b"\x16\x02\x00" + b"\x80" * 9 + b"\x02" + b"\x00\x00", # varint overflows 64 bits
    b"\x16\x02\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01\x00\x00\x00",  # stream seq 2**63
    b"\x16\x02\x00\x00\x05\x05\x02\xd0\x0f\x01\x01\x00",  # second pending entry missing
    b"\x16\x02\x00\x00\x05\x05\x01",                      # pending without timestamp base
    b"\x16\x02\x00\x00\x05\x05\x01\xd0\x0f\x00\x01\x02\x00",  # pending stream seq 0
])
def test_decode_rejects_garbage(buf):
    with pytest.raises(CorruptStreamState):
        decode(buf)
    acks = AckState()
    acks.load(hand_state())
    before = acks.state()
    with pytest.raises(CorruptStreamState):
        acks.load_encoded(buf)
    assert acks.state() == before          # a failed load leaves the state alone


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=64))
def test_decode_never_crashes_on_random_bytes(buf):
    try:
        decode(buf)
    except CorruptStreamState:
        pass


@settings(max_examples=1000, deadline=None)
@given(st.data())
def test_decode_never_crashes_on_damaged_encodings(data):
    acks = AckState()
    acks.load(hand_state())
    buf = bytearray(acks.encode())
    for _ in range(data.draw(st.integers(1, 4))):
        buf[data.draw(st.integers(0, len(buf) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(buf)))
    try:
        decode(bytes(buf[:cut]))
    except CorruptStreamState:
        pass


def _plain_scan(items, now, ack_wait, keep_from, next_wait, backoff, rdc):
    """checkPending's pass written plainly over (sseq, dseq, ts) items."""
    stale, expired = [], []
    for seq, dseq, ts in items:
        if seq < keep_from:
            stale.append((seq, dseq))
            continue
        elapsed, deadline = now - ts, ack_wait
        if backoff:
            dc = max(rdc.get(seq, 0), 0)
            nbi = dc + 1
            if dc + 1 >= len(backoff):
                dc = nbi = len(backoff) - 1
            deadline = backoff[dc]
            next_wait = min(next_wait, backoff[nbi])
        if elapsed >= deadline:
            expired.append(seq)
        elif deadline - elapsed < next_wait:
            next_wait = deadline - elapsed
    return stale, expired, next_wait


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(1, 60), st.integers(0, 100)), max_size=40),
       st.integers(0, 30), st.integers(0, 120), st.booleans(),
       st.dictionaries(st.integers(1, 60), st.integers(-1, 5)))
def test_scan_pending_matches_check_pending(deliveries, acks, now, with_backoff, rdc):
    state = AckState("explicit")
    dseq = 0
    for sseq, ts in sorted(deliveries):
        dseq += 1
        state.update_delivered(dseq, sseq, 1, ts)
    for sseq, _dseq, _ts in state.pending_items()[:acks:3]:
        state.update_acks(state.pending_entry(sseq)[0], sseq)
    backoff = [10, 20, 40] if with_backoff else None
    items = state.pending_items()
    keep_from = items[len(items) // 3][0] if items else 0
    got = state.scan_pending(now, 30, keep_from, 1000, backoff, rdc)
    assert got == _plain_scan(items, now, 30, keep_from, 1000, backoff, rdc)
    assert got[1] == sorted(got[1])
