"""A pull consumer with explicit acks against a plain model of what nats-server does.

Hypothesis drives a file-backed embedded JetStream on a hand clock: publishes, fetches,
acks of every kind (+ACK, -NAK, -NAK with a delay, +WPI, +TERM, a stale ack of an older
delivery), clock advances with the timers run, deletions of messages not delivered yet,
and restarts (close and reopen the store directory).  After every step consumer info and
every delivered message's metadata must match the model:

* a delivery takes the next consumer sequence; redeliveries (ack wait ran out, or a NAK)
  come first, in stream order of when they were queued, before new messages;
* the ack timer: a delivery is due ack_wait after it went out (a NAK with a delay makes
  it due `delay` from the NAK, +WPI restarts the wait); once any deadline has passed,
  every delivery whose wait has run out is queued for redelivery;
* info: delivered is the highest consumer and stream sequence delivered; the ack floor is
  the store's (it moves over an acked delivery that was just above it, up to the next
  one still pending, or to delivered when nothing is pending); num_ack_pending counts the
  unacknowledged messages, num_redelivered those delivered more than once, num_pending
  the stored messages not delivered yet;
* a restart keeps what o.dat keeps (pending deliveries and their times, redelivery
  counts, delivered, ack floor) and forgets the redelivery queue, so NAKed messages come
  back when their ack wait runs out.

Times are whole seconds and the ack wait ends on a half second, so no deadline ever
coincides with the moment the timers run.
"""

from __future__ import annotations

import shutil
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import jsstore
from clocks import SECOND, Clock

ACK_WAIT = 2 * SECOND + SECOND // 2


class Model:
    """The consumer as nats-server's rules describe it (no engine code reused)."""

    def __init__(self):
        self.stored: dict[int, str] = {}     # stream seq -> subject
        self.last_seq = 0
        self.next_seq = 1                    # next stream seq to deliver
        self.dseq = 0                        # last consumer seq used
        self.pending: dict[int, list] = {}   # sseq -> [original dseq, deadline]
        self.latest: dict[int, int] = {}     # sseq -> dseq of its latest delivery
        self.rdc: dict[int, int] = {}        # sseq -> redeliveries so far
        self.rdq: list[int] = []
        self.delivered = (0, 0)
        self.floor = (0, 0)

    def publish(self, subject: str) -> None:
        self.last_seq += 1
        self.stored[self.last_seq] = subject

    def num_pending(self) -> int:
        return sum(1 for seq in self.stored if seq >= self.next_seq)

    def deliver(self, now: int) -> tuple[int, int, int, int] | None:
        """The next delivery: (sseq, dseq, delivery count, num_pending after it)."""
        if self.rdq:
            seq = self.rdq.pop(0)
            self.rdc[seq] = self.rdc.get(seq, 0) + 1
            count = self.rdc[seq] + 1
        else:
            later = [seq for seq in self.stored if seq >= self.next_seq]
            if not later:
                return None
            seq = min(later)
            self.next_seq = seq + 1
            count = 1
        self.dseq += 1
        if seq in self.pending:
            self.pending[seq][1] = now + ACK_WAIT
        else:
            self.pending[seq] = [self.dseq, now + ACK_WAIT]
        self.latest[seq] = self.dseq
        self.delivered = (max(self.delivered[0], self.dseq), max(self.delivered[1], seq))
        return seq, self.dseq, count, self.num_pending()

    def settle(self, seq: int) -> None:
        """+ACK or +TERM of a pending message."""
        original, _ = self.pending.pop(seq)
        self.rdc.pop(seq, None)
        if seq in self.rdq:
            self.rdq.remove(seq)
        if not self.pending:
            self.floor = self.delivered
        elif original == self.floor[0] + 1:
            self.floor = (original, seq)
            above = [s for s in self.pending if s > seq]
            if above and self.delivered[0] > original:
                nxt = min(above)
                if nxt <= self.delivered[1]:
                    self.floor = (self.pending[nxt][0] - 1, nxt - 1)

    def nak(self, seq: int, now: int, delay: int | None) -> None:
        if delay is None:
            if seq not in self.rdq:
                self.rdq.append(seq)
        else:
            if seq in self.rdq:
                self.rdq.remove(seq)
            self.pending[seq][1] = now + delay

    def progress(self, seq: int, now: int) -> None:
        self.pending[seq][1] = now + ACK_WAIT

    def timers(self, now: int) -> None:
        """The ack timer, when any deadline has passed: queue every expired delivery."""
        if not any(deadline < now for _, deadline in self.pending.values()):
            return
        for seq in sorted(self.pending):
            if self.pending[seq][1] <= now and seq not in self.rdq:
                self.rdq.append(seq)

    def restart(self) -> None:
        """The redelivery queue is not kept; the ack timer first runs a second later (and
        every clock advance is at least that)."""
        self.rdq = []

    def delete(self, seq: int) -> None:
        """A deleted message that was waiting for its ack is terminated."""
        del self.stored[seq]
        if seq in self.pending:
            self.settle(seq)


class ConsumerMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="jsstore-model-")
        self.clock = Clock()
        self.model = Model()
        self.outstanding: dict[int, object] = {}    # sseq -> its latest delivered JsMsg
        self.stale: list = []                       # older deliveries, still un-settled
        self.js = jsstore.open(self.directory, clock=self.clock)
        self.js.add_stream(name="S", subjects=["s.*"])
        self.js.add_consumer("S", durable_name="C", ack_policy="explicit", ack_wait=ACK_WAIT,
                             max_ack_pending=-1)
        self.sub = self.js.pull_subscribe("s.*", "C", stream="S")

    def _open(self) -> None:
        self.js = jsstore.open(self.directory, clock=self.clock)
        self.sub = self.js.pull_subscribe("s.*", "C", stream="S")

    def teardown(self) -> None:
        self.js.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def now(self) -> int:
        return self.clock.now

    @rule(count=st.integers(1, 4), subject=st.sampled_from(["s.a", "s.b"]))
    def publish(self, count, subject):
        for _ in range(count):
            self.js.publish(subject, b"x")
            self.model.publish(subject)

    @rule(batch=st.integers(1, 5))
    def fetch(self, batch):
        try:
            got = self.sub.fetch(batch, timeout=0)
        except TimeoutError:
            got = []
        expected = []
        for _ in range(batch):
            one = self.model.deliver(self.now)
            if one is None:
                break
            expected.append(one)
        seen = [(m.metadata.sequence.stream, m.metadata.sequence.consumer,
                 m.metadata.num_delivered, m.metadata.num_pending) for m in got]
        assert seen == expected
        for msg in got:
            seq = msg.metadata.sequence.stream
            if seq in self.outstanding:
                self.stale.append(self.outstanding[seq])
            self.outstanding[seq] = msg

    def _pick(self, data):
        seq = data.draw(st.sampled_from(sorted(self.outstanding)))
        return seq, self.outstanding.pop(seq)

    @precondition(lambda self: self.outstanding)
    @rule(data=st.data(), kind=st.sampled_from(["ack", "term"]))
    def settle(self, data, kind):
        seq, msg = self._pick(data)
        if kind == "ack":
            msg.ack()
        else:
            msg.term("done with it")
        self.model.settle(seq)
        self.stale = [m for m in self.stale if m.metadata.sequence.stream != seq]

    @precondition(lambda self: self.outstanding)
    @rule(data=st.data(), delay=st.sampled_from([None, SECOND // 2, 3 * SECOND // 2]))
    def nak(self, data, delay):
        seq, msg = self._pick(data)
        msg.nak(delay=None if delay is None else delay / SECOND)
        self.model.nak(seq, self.now, delay)

    @precondition(lambda self: self.outstanding)
    @rule(data=st.data())
    def in_progress(self, data):
        seq = data.draw(st.sampled_from(sorted(self.outstanding)))
        self.outstanding[seq].in_progress()
        self.model.progress(seq, self.now)

    @precondition(lambda self: self.stale)
    @rule(data=st.data())
    def stale_ack(self, data):
        """An ack of an older delivery of a message still pending acks it (nats-server
        looks the message up by its stream sequence)."""
        msg = self.stale.pop(data.draw(st.integers(0, len(self.stale) - 1)))
        seq = msg.metadata.sequence.stream
        msg.ack()
        if seq in self.model.pending:
            self.model.settle(seq)
            self.outstanding.pop(seq, None)
            self.stale = [m for m in self.stale if m.metadata.sequence.stream != seq]

    @rule(seconds=st.integers(1, 4))
    def advance(self, seconds):
        self.clock.advance(seconds * SECOND)
        self.js.tick()
        self.model.timers(self.now)

    @precondition(lambda self: self.model.stored)
    @rule(data=st.data())
    def delete(self, data):
        """Delete a stored message: not delivered yet, or waiting for its ack."""
        seq = data.draw(st.sampled_from(sorted(self.model.stored)))
        self.js.delete_msg("S", seq)
        self.model.delete(seq)
        self.outstanding.pop(seq, None)
        self.stale = [m for m in self.stale if m.metadata.sequence.stream != seq]

    @rule()
    def restart(self):
        self.js.close()
        self._open()
        self.js.tick()
        self.model.restart()
        # deliveries made before the restart stay valid ack targets
        for msg in list(self.outstanding.values()) + self.stale:
            msg._js = self.js
            msg._consumer = self.js.consumers.find_locked("S", "C")

    @invariant()
    def info_matches(self):
        info = self.js.consumer_info("S", "C")
        model = self.model
        assert (info.delivered.consumer_seq, info.delivered.stream_seq) == model.delivered
        assert (info.ack_floor.consumer_seq, info.ack_floor.stream_seq) == model.floor
        assert info.num_ack_pending == len(model.pending)
        assert info.num_redelivered == len(model.rdc)
        assert info.num_pending == model.num_pending()


ConsumerMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestConsumerModel = ConsumerMachine.TestCase
