"""In-process messages: what JetStream sends out, and who receives it.

Everything an embedded JetStream emits — answers to requests, advisories, republished
messages, snapshot chunks, consumer deliveries — is a ``Msg`` published on its ``Bus``.
Embedded users subscribe to what they want to see; a server subscribes once to ``>`` and
forwards to its clients.

    sub = js.bus.subscribe("$JS.EVENT.ADVISORY.>", print)
    ...
    sub.unsubscribe()

A subject with ``*`` or ``>`` tokens (a stored message published on one, say) reaches
the subscriptions whose wildcards take those tokens, as in nats-server: ``a.*`` goes to
``a.*``, ``a.>`` and ``>``, not to ``a.b``.

Callbacks run synchronously, in the thread that publishes, in subscription order.  A
callback may publish or call back into JetStream; a message published from inside a
callback is delivered after the current one has reached every subscriber (no unbounded
recursion, and every subscriber sees messages in publish order).  An exception raised by a
callback is logged and does not reach the publisher (a subscriber can not fail a store).
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from typing import Callable

import msgspec

from jsstore._core.storage.subjects import _subject_matches, is_literal, is_valid_subject
from jsstore.deferred import deferred_logger

log = deferred_logger(__name__)


class Msg(msgspec.Struct):
    """One NATS message."""
    subject: str
    data: bytes = b""
    hdr: bytes | None = None        # a raw NATS header block ("NATS/1.0\r\n...\r\n\r\n")
    reply: str | None = None
    # where the message goes when that is not its subject: a consumer delivers a stored
    # message (its own subject) to a pull request's reply inbox or a deliver subject
    to: str | None = None


class Subscription:
    """A callback registered for the subjects a filter matches."""
    __slots__ = ("bus", "filter", "callback", "sid", "active")

    def __init__(self, bus: Bus, filter: str, callback: Callable[[Msg], None], sid: int):
        self.bus = bus
        self.filter = filter
        self.callback = callback
        self.sid = sid
        self.active = True

    def unsubscribe(self) -> None:
        self.bus._remove(self)


class Bus:
    """Subject-addressed delivery to in-process subscribers."""

    def __init__(self):
        self._literal: dict[str, list[Subscription]] = {}   # exact subject -> subscriptions
        self._wildcard: list[Subscription] = []             # filters with * or >
        self._sids = itertools.count(1)
        self._lock = threading.Lock()
        self._local = threading.local()                     # per-thread delivery queue
        self._watchers: list[Callable[[str], None]] = []    # told of interest changes
        self._outside = None        # a server's clients: has_interest(subject), deliver(msg)

    def attach(self, outside) -> None:
        """Reach subscribers beyond this process's callbacks (a server's clients):
        `outside.has_interest(subject)` counts as interest, and every published message
        is also handed to `outside.deliver(msg)` when it has interest.  The outside
        calls `interest_changed(filter)` when its subscriptions change."""
        self._outside = outside

    def interest_changed(self, filter: str) -> None:
        """Subscriptions outside changed: tell the watchers."""
        if self._watchers:
            self._interest_changed(filter)

    def watch_interest(self, callback: Callable[[str], None]) -> None:
        """Call `callback(filter)` after every subscribe and unsubscribe (outside the bus's
        lock): push consumers start or stop as their deliver subject gains or loses
        listeners."""
        self._watchers.append(callback)

    def _interest_changed(self, filter: str) -> None:
        for watcher in list(self._watchers):
            try:
                watcher(filter)
            except Exception:
                log.exception("interest watcher failed on %r", filter)

    def subscribe(self, filter: str, callback: Callable[[Msg], None]) -> Subscription:
        """Deliver every message whose subject `filter` matches to `callback(msg)`."""
        if not is_valid_subject(filter, True):
            raise ValueError(f"invalid subject filter {filter!r}")
        with self._lock:
            sub = Subscription(self, filter, callback, next(self._sids))
            if is_literal(filter):
                self._literal.setdefault(filter, []).append(sub)
            else:
                self._wildcard.append(sub)
        if self._watchers:
            self._interest_changed(filter)
        return sub

    def _remove(self, sub: Subscription) -> None:
        with self._lock:
            if not sub.active:
                return
            sub.active = False
            if is_literal(sub.filter):
                subs = self._literal.get(sub.filter, [])
                subs.remove(sub)
                if not subs:
                    self._literal.pop(sub.filter, None)
            else:
                self._wildcard.remove(sub)
        if self._watchers:
            self._interest_changed(sub.filter)

    def _matching(self, subject: str) -> list[Subscription]:
        if not self._literal and not self._wildcard:
            return []               # (a server's bus: its clients are the outside)
        with self._lock:
            found = list(self._literal.get(subject, ()))
            found.extend(s for s in self._wildcard if _subject_matches(subject, s.filter))
        if len(found) > 1:
            found.sort(key=lambda s: s.sid)
        return found

    def has_interest(self, subject: str) -> bool:
        """Whether any subscription would receive a message on `subject`."""
        if self._literal or self._wildcard:
            with self._lock:
                if subject in self._literal:
                    return True
                if any(_subject_matches(subject, s.filter) for s in self._wildcard):
                    return True
        outside = self._outside
        return outside is not None and outside.has_interest(subject)

    def publish_batch(self, msgs: list[Msg], at_once: bool = False) -> int:
        """Deliver messages that all go to one target (a consumer's burst to one inbox),
        in order: to the outside in one hand-over when only it listens there, else one by
        one as `publish` does.  With `at_once` the outside writes them out now (the first
        messages of a long run: the receiver starts on them while the rest are made),
        else with the rest of its loop turn's output.  Returns how many receivers matched
        the first."""
        if not msgs:
            return 0
        first = msgs[0]
        target = first.to or first.subject
        outside = self._outside
        many = getattr(outside, "deliver_many", None)
        if many is None or self._matching(target):
            counts = [self.publish(msg) for msg in msgs]
            return counts[0]
        return many(msgs, at_once) if outside.has_interest(target) else 0

    def run_target(self, to: str):
        """What a consumer's run to `to` may be rendered through in the core (the outside's
        Interest, jsstore._core.delivery.runs.take_run) when only the outside listens
        there and it can take the run now; else None (the run goes as bus messages)."""
        outside = self._outside
        find = getattr(outside, "run_target", None)
        if find is None or self._matching(to):
            return None
        return find(to)

    def ran(self, at_once: bool) -> None:
        """A run was rendered through run_target's Interest: write it out with the loop
        turn's other output or, `at_once`, now (see publish_batch)."""
        self._outside.ran(at_once)

    def publish(self, msg: Msg) -> int:
        """Deliver `msg` to every subscription matching ``msg.to`` (when set) or its
        subject; returns how many matched."""
        target = msg.to or msg.subject
        outside = self._outside
        delivered = 0
        if outside is not None and outside.has_interest(target):
            delivered = outside.deliver(msg)
        subs = self._matching(target)
        if not subs:
            return delivered
        queue = getattr(self._local, "queue", None)
        if queue is not None:               # inside a callback: deliver after the current one
            queue.append((subs, msg))
            return len(subs)
        queue = self._local.queue = deque([(subs, msg)])
        try:
            while queue:
                targets, current = queue.popleft()
                for sub in targets:
                    if sub.active:
                        try:
                            sub.callback(current)
                        except Exception:
                            log.exception("subscriber of %r failed on %r", sub.filter,
                                          current.subject)
        finally:
            self._local.queue = None
        return len(subs) + delivered
