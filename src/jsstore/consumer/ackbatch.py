"""The plain acks one read of a client brought, applied consumer by consumer.

Applied one by one, every ack of a consumer that may deliver more (a push consumer, or a
pull consumer with requests waiting) gathers again at once: a push client acking 1,000
deliveries makes its consumer look for more 1,000 times.  When nothing can tell the
difference, the acks of a read are grouped by consumer (each consumer's in the order
sent) and each consumer gathers once after its acks.  That is when, for every ack of the
read, its consumer

  - is open, acks explicitly and its stream keeps messages by limits (no interest or
    work-queue removal hangs on the order of acks across consumers);
  - could not deliver anything between two of its acks: it has no redelivery queued (an
    ack only takes messages out of that queue) and either its acks do not make it gather
    (a pull consumer with no request waiting, no max_ack_pending) or it has looked at
    every message of its stream already (a gather between acks would find nothing; one
    that delivered would change what the following acks find: their ack floor) and
  - names a message it has delivered (a v1 ack subject below its next stream sequence).

Otherwise (by_consumer) the read's acks are applied in order, one by one, as before; or
(from_parsed, all of them plain v1 acks) only that consumer's, each gathering, while the
others are grouped: consumers of streams with limits retention do not depend on each
other, so only the order of the deliveries their gathers make can differ.
"""

from __future__ import annotations


def by_consumer(found: list) -> dict | None:
    """`found`: (consumer, ack subject tokens, subject) in the order sent.  The acks grouped
    by consumer (first appearance first) as AckRun, or None when they must go one by one."""
    groups: dict = {}
    for consumer, tokens, subject in found:
        group = groups.get(consumer)
        if group is None:
            if not _groupable(consumer):
                return None
            group = groups[consumer] = AckRun()
        if len(tokens) != 9:
            return None
        # (what the router's one-by-one path takes as a plain v1 ack, exactly)
        delivered, sseq, dseq = tokens[4], tokens[5], tokens[6]
        if not (delivered.isdigit() and sseq.isdigit() and dseq.isdigit()
                and len(delivered) < 19 and len(sseq) < 19 and len(dseq) < 19
                and (delivered + sseq + dseq).isascii()
                and tokens[7].isdigit() and tokens[8].isdigit()):
            return None
        seq = int(sseq)
        if not 0 < seq < consumer.next_stream_seq:
            return None
        group.stream_seqs.append(seq)
        group.delivery_seqs.append(int(dseq))
        group.acks.append((tokens, subject))
    return groups


def from_parsed(parsed: list, find) -> dict | None:
    """The acks taken apart in C (jsstore._core.wire.ackparse.plain_v1_acks: every one a plain
    v1 ack, grouped by stream and consumer) as consumer -> AckRun; `find(stream, name)`
    the consumer or None (whose acks are dropped, as one by one).  A consumer that does
    not meet the rules above keeps its acks one by one (AckRun.grouped False: each ack
    gathers); consumers of a stream with limits retention are independent of each other,
    so only the order of the deliveries their gathers make changes.  None when a consumer
    of another stream is named: the read goes in order, one by one."""
    groups: dict = {}
    for stream, name, stream_seqs, delivery_seqs, subjects in parsed:
        consumer = find(stream, name)
        if consumer is None:
            continue
        if consumer.stream.retention is not None:
            return None
        run = groups[consumer] = AckRun()
        run.grouped = _groupable(consumer) and max(stream_seqs) < consumer.next_stream_seq
        run.stream_seqs, run.delivery_seqs = stream_seqs, delivery_seqs
        run.subjects = subjects     # (taken apart only when they go one by one)
    return groups


def _groupable(consumer) -> bool:
    """The consumer's part of the rules of the module's docstring."""
    return not (consumer.closed or consumer.ack_policy != "explicit"
                or consumer.stream.retention is not None
                or consumer.acknowledgements.redelivery_queue
                or (consumer.max_ack_pending > 0
                    and (consumer.pull is None or consumer.pull.waiting)
                    and consumer.next_stream_seq <= consumer.stream.store.last_seq))


class AckRun:
    """One consumer's acks of a read: stream and delivery seqs, and (tokens, subject) (or
    just the subjects, `acks` splitting them when asked); with `grouped` False they are
    applied one by one, each gathering."""

    __slots__ = ("stream_seqs", "delivery_seqs", "_acks", "subjects", "grouped")

    def __init__(self):
        self.stream_seqs: list[int] = []
        self.delivery_seqs: list[int] = []
        self._acks: list[tuple] = []
        self.subjects: list[str] | None = None
        self.grouped = True

    @property
    def acks(self) -> list[tuple]:
        """(tokens, subject) of each ack, in order."""
        if self.subjects is not None:
            self._acks = [(subject.split("."), subject) for subject in self.subjects]
            self.subjects = None
        return self._acks


def gather_after(consumer) -> None:
    """What each ack of the group would have done last (Acknowledgements.ack): gather, when
    the consumer may deliver more."""
    if (not consumer.closed and consumer.max_ack_pending > 0
            and (consumer.pull is None or consumer.pull.waiting)):
        consumer.gather()
