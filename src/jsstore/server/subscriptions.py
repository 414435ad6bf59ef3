"""The server's subscriptions by subject: literal subjects and inbox-style filters
(``prefix.*``) in dicts, other wildcard filters by their first token with a cache of recent
matches cleared on every change (nats-server's sublist does the same job with a token
trie).

A subject published with ``*`` or ``>`` tokens is matched as nats-server's sublist matches
it: those tokens are ordinary tokens that only a subscription's wildcards take (``a.*``
reaches ``a.*``, ``a.>``, ``*.*`` and ``>``, not ``a.b``; ``a.>`` reaches ``a.*`` too), and
a subject with an empty token reaches nobody (``subject_matches`` in ``_core.subjects``)."""

from __future__ import annotations

import random
import threading

from jsstore._core.subjects import _subject_matches, is_literal
from jsstore.wire.api import ACK_PREFIX

CACHE_LIMIT = 4096


_NONE: list = []


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


def _star_prefix(filter: str) -> str | None:
    """For a filter that is a literal prefix and one trailing ``*`` (``_INBOX.abc.*``,
    what request/reply clients subscribe to), that prefix; else None."""
    if not filter.endswith(".*"):
        return None
    head = filter[:-2]
    return head if is_literal(head) else None


class SubjectTable:
    """Who receives a subject: plain subscriptions, and one member of each queue group.

    Three indexes: literal subjects; filters that are a literal prefix and one trailing
    ``*`` (request/reply inboxes), by that prefix, so that a reply subject is matched by a
    lookup of everything before its last token; every other wildcard filter by its first
    token, with recent matches against those cached."""

    def __init__(self):
        self._literal: dict[str, list[Subscription]] = {}
        self._star: dict[str, list[Subscription]] = {}
        # other wildcard filters by their first token ("" for those starting with * or
        # >): a subject only needs checking against the filters under its own first token
        self._by_first: dict[str, list[Subscription]] = {}
        self._cache: dict[str, list[Subscription]] = {}
        self._lock = threading.Lock()   # JetStream's timer thread asks for interest
        self.ack_watchers = 0           # subscriptions that may match ack subjects
        self.version = 0                # changes with every insert and remove
        self._queued = 0                # subscriptions in queue groups

    def _index(self, filter: str) -> tuple[dict[str, list[Subscription]], str]:
        if is_literal(filter):
            return self._literal, filter
        prefix = _star_prefix(filter)
        if prefix is not None:
            return self._star, prefix
        return self._by_first, _first_token(filter)

    def insert(self, sub: Subscription) -> None:
        with self._lock:
            index, key = self._index(sub.subject)
            index.setdefault(key, []).append(sub)
            if _may_see_acks(sub.subject):
                self.ack_watchers += 1
            if sub.queue:
                self._queued += 1
            self._cache.clear()
            self.version += 1

    def remove(self, sub: Subscription) -> None:
        with self._lock:
            index, key = self._index(sub.subject)
            subs = index.get(key)
            if not subs or sub not in subs:
                return
            subs.remove(sub)
            if not subs:
                del index[key]
            if _may_see_acks(sub.subject):
                self.ack_watchers -= 1
            if sub.queue:
                self._queued -= 1
            self._cache.clear()
            self.version += 1

    def _all(self, subject: str) -> list[Subscription]:
        """Every subscription matching `subject`, in a list the caller may keep (routing
        may remove a subscription, its UNSUB limit reached, while it goes through it)."""
        literal = self._literal.get(subject)
        head, dot, last = subject.rpartition(".")
        star = self._star.get(head) if dot and last else None
        by_first = self._by_first
        if by_first:
            found = self._cache.get(subject)
            if found is None:
                dot = subject.find(".")
                under = by_first.get(subject if dot < 0 else subject[:dot])
                anywhere = by_first.get("")
                found = _NONE
                if under is not None or anywhere is not None:
                    found = [s for group in (under, anywhere) if group
                             for s in group if _subject_matches(subject, s.subject)]
                    if len(self._cache) >= CACHE_LIMIT:
                        self._cache.clear()
                    self._cache[subject] = found
            if found:
                return (literal or _NONE) + (star or _NONE) + found
        if star is None:
            return literal[:] if literal else _NONE
        return literal + star if literal else star[:]

    def match(self, subject: str) -> list[Subscription]:
        """The subscriptions a message on `subject` goes to: every plain one, one random
        member of each queue group."""
        with self._lock:
            found = self._all(subject)
        if not self._queued or not any(s.queue for s in found):
            return found
        plain = [s for s in found if not s.queue]
        groups: dict[str, list[Subscription]] = {}
        for s in found:
            if s.queue:
                groups.setdefault(s.queue, []).append(s)
        return plain + [random.choice(members) for members in groups.values()]

    def count(self) -> int:
        with self._lock:
            return sum(len(v) for index in (self._literal, self._star, self._by_first)
                       for v in index.values())

    def has_interest(self, subject: str) -> bool:
        with self._lock:
            return bool(self._all(subject))

    def matching(self, subject: str) -> list[Subscription]:
        """Every subscription matching `subject`, each member of a queue group included
        (match picks one of each group at random)."""
        with self._lock:
            return list(self._all(subject))

    def sole_star(self, head: str) -> Subscription | None:
        """The subscription that alone receives every subject ``<head>.<token>``: the one
        subscription to ``<head>.*``, in no queue group, with no other filter that could
        match such a subject; else None."""
        with self._lock:
            subs = self._star.get(head)
            if not subs or len(subs) != 1 or subs[0].queue:
                return None
            if self._by_first.get(head.split(".", 1)[0]) or self._by_first.get(""):
                return None
            start = head + "."
            if any(key.startswith(start) for key in self._literal):
                return None
            return subs[0]
