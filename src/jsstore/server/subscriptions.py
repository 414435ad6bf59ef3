"""The server's subscriptions by subject: literal subjects in a dict, wildcard filters by
their first token, and a cache of recent matches cleared on every change (nats-server's sublist does
the same job with a token trie)."""

from __future__ import annotations

import random
import threading

from jsstore._core.subjects import _subject_matches, is_literal

CACHE_LIMIT = 4096


_NONE: list = []


ACK_PREFIX = "$JS.ACK."


def _may_see_acks(filter: str) -> bool:
    """Whether a subscription on `filter` might match an ack subject ($JS.ACK.…)."""
    return filter.startswith(ACK_PREFIX) or (not is_literal(filter)
                                              and _first_token(filter) in ("$JS", ""))


def _first_token(filter: str) -> str:
    """A wildcard filter's first token, "" when that is itself a wildcard."""
    first = filter.split(".", 1)[0]
    return "" if first in ("*", ">") else first


class Subscription:
    __slots__ = ("client", "subject", "queue", "sid", "max", "delivered")

    def __init__(self, client, subject: str, queue: str | None, sid: str):
        self.client = client
        self.subject = subject
        self.queue = queue
        self.sid = sid
        self.max = 0                    # UNSUB <sid> <max>: deliveries allowed (0: no limit)
        self.delivered = 0


class SubjectTable:
    """Who receives a subject: plain subscriptions, and one member of each queue group."""

    def __init__(self):
        self._literal: dict[str, list[Subscription]] = {}
        # wildcard filters by their first token ("" for those starting with * or >): a
        # subject only needs checking against the filters under its own first token
        self._by_first: dict[str, list[Subscription]] = {}
        self._cache: dict[str, list[Subscription]] = {}
        self._lock = threading.Lock()   # JetStream's timer thread asks for interest
        self.ack_watchers = 0           # subscriptions that may match ack subjects

    def insert(self, sub: Subscription) -> None:
        with self._lock:
            if is_literal(sub.subject):
                self._literal.setdefault(sub.subject, []).append(sub)
            else:
                self._by_first.setdefault(_first_token(sub.subject), []).append(sub)
            if _may_see_acks(sub.subject):
                self.ack_watchers += 1
            self._cache.clear()

    def remove(self, sub: Subscription) -> None:
        with self._lock:
            if is_literal(sub.subject):
                subs = self._literal.get(sub.subject)
                if subs and sub in subs:
                    subs.remove(sub)
                    if not subs:
                        del self._literal[sub.subject]
                else:
                    sub = None
            else:
                first = _first_token(sub.subject)
                group = self._by_first.get(first)
                if group and sub in group:
                    group.remove(sub)
                    if not group:
                        del self._by_first[first]
                else:
                    sub = None
            if sub is not None and _may_see_acks(sub.subject):
                self.ack_watchers -= 1
            self._cache.clear()

    def _all(self, subject: str) -> list[Subscription]:
        found = self._cache.get(subject)
        if found is not None:
            return found
        by_first = self._by_first
        literal = self._literal.get(subject)
        dot = subject.find(".")
        under = by_first.get(subject if dot < 0 else subject[:dot])
        anywhere = by_first.get("")
        if under is None and anywhere is None:
            # no filter to test: nothing worth caching; a copy, as routing may remove a
            # subscription (an UNSUB limit reached) while it goes through the list
            return literal[:] if literal else _NONE
        found = list(literal) if literal else []
        for group in (under, anywhere):
            if group:
                found.extend(s for s in group if _subject_matches(subject, s.subject))
        if len(self._cache) >= CACHE_LIMIT:
            self._cache.clear()
        self._cache[subject] = found
        return found

    def match(self, subject: str) -> list[Subscription]:
        """The subscriptions a message on `subject` goes to: every plain one, one random
        member of each queue group."""
        with self._lock:
            found = self._all(subject)
        if not any(s.queue for s in found):
            return found
        plain = [s for s in found if not s.queue]
        groups: dict[str, list[Subscription]] = {}
        for s in found:
            if s.queue:
                groups.setdefault(s.queue, []).append(s)
        return plain + [random.choice(members) for members in groups.values()]

    def count(self) -> int:
        with self._lock:
            return sum(len(v) for v in (*self._literal.values(), *self._by_first.values()))

    def has_interest(self, subject: str) -> bool:
        with self._lock:
            return bool(self._all(subject))
