"""Interest and workqueue retention: messages leave a stream once its consumers are done.

A consumer of an interest or workqueue stream registers an ``Interest``: its filters and a
``needs_ack(seq, subject)`` answer as nats-server's ``consumer.needAck`` gives it (its
filter matches, the sequence is above its ack floor and not yet acknowledged).  Then:

- a publish that no registered consumer's filter matches is not kept on an interest
  stream (nats-server stores a skip, so the sequence is used and the PubAck has it);
- when a consumer acknowledges a message, it is removed once no registered consumer still
  needs it (interest), or straight away (workqueue, where one consumer owns each subject);
- when a consumer of an interest stream goes away, every message no remaining consumer
  needs is removed.

Limits retention ignores all of this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from jsstore._core.storage.subjects import _subject_matches
from jsstore.errors import StoreError
from jsstore.stream.filterindex import FilterIndex

LIMITS, INTEREST, WORKQUEUE = "limits", "interest", "workqueue"


@dataclass
class Interest:
    """One consumer's claim on a stream's messages."""
    name: str
    filters: list[str]                          # empty: every subject
    needs_ack: Callable[[int, str], bool]       # whether it still needs (seq, subject)

    def matches(self, subject: str) -> bool:
        return not self.filters or any(_subject_matches(subject, f) for f in self.filters)


@dataclass
class RetentionTracker:
    """The registered consumers of one interest or workqueue stream, found by subject
    (a publish or an ack asks only the consumers whose filters may match)."""
    policy: str
    consumers: dict[str, Interest] = field(default_factory=dict)
    by_subject: FilterIndex[Interest] = field(default_factory=FilterIndex)

    def register(self, interest: Interest) -> None:
        self.consumers[interest.name] = interest
        self.by_subject.add(interest.name, interest.filters, interest)

    def unregister(self, name: str) -> None:
        self.consumers.pop(name, None)
        self.by_subject.remove(name)

    def interested(self, subject: str) -> bool:
        """Whether some consumer would take a message on `subject`."""
        return any(c.matches(subject) for c in self.by_subject.candidates(subject))

    def needed(self, seq: int, subject: str, *, besides: str | None = None) -> bool:
        """Whether a consumer (other than `besides`) still needs the message."""
        return any(c.name != besides and c.matches(subject) and c.needs_ack(seq, subject)
                   for c in self.by_subject.candidates(subject))


def tracker_for(config) -> RetentionTracker | None:
    """A tracker for a stream whose retention depends on its consumers, else None."""
    policy = config.retention or LIMITS
    return None if policy == LIMITS else RetentionTracker(policy)


def keep_on_publish(tracker: RetentionTracker | None, subject: str) -> bool:
    """Whether a new message is kept (interest streams drop what nobody would take)."""
    return tracker is None or tracker.policy != INTEREST or tracker.interested(subject)


def acked(tracker: RetentionTracker, store, consumer: str, seq: int) -> bool:
    """A consumer acknowledged `seq`: remove it when nobody needs it anymore. Returns
    whether it was removed."""
    try:
        subject = store.subject_for_seq(seq)
    except (StoreError, ValueError):
        return False                     # already gone
    if tracker.policy == INTEREST and tracker.needed(seq, subject, besides=consumer):
        return False
    try:
        return bool(store.remove_msg(seq))
    except StoreError:
        return False


def forget(tracker: RetentionTracker, store, consumer: str) -> int:
    """A consumer went away: on an interest stream, remove every message no remaining
    consumer needs (a workqueue keeps its messages for the next consumer). Returns how
    many were removed."""
    tracker.unregister(consumer)
    removed = 0
    if tracker.policy != INTEREST:
        return 0
    seq = store.first_seq
    while store.msgs and 0 < seq <= store.last_seq:
        try:
            msg, seq = store.load_next_msg(">", seq)
        except StoreError:
            break
        if not tracker.needed(seq, msg.subject):
            removed += bool(store.remove_msg(seq))
        seq += 1
    return removed
