"""The server's subscriptions by subject: literal subjects and inbox-style filters
(``prefix.*``) in dicts, other wildcard filters in a tree of tokens (``SubjectTree``, as
nats-server's sublist), with a cache of recent matches cleared on every change.

A subject published with ``*`` or ``>`` tokens is matched as nats-server's sublist matches
it: those tokens are ordinary tokens that only a subscription's wildcards take (``a.*``
reaches ``a.*``, ``a.>``, ``*.*`` and ``>``, not ``a.b``; ``a.>`` reaches ``a.*`` too), and
a subject with an empty token reaches nobody (``subject_matches`` in ``_core.storage.subjects``)."""

from __future__ import annotations

import threading

from jsstore._core.delivery.plans import Subscription
from jsstore._core.storage.subjects import is_literal
from jsstore.wire.api import ACK_PREFIX
from jsstore.wire.subjecttree import SubjectTree

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
    lookup of everything before its last token; every other wildcard filter in a tree of
    tokens, with recent matches against those cached."""

    def __init__(self, pick):
        self._pick = pick       # pick(n): a queue member's index, at random
        # literal subjects and prefixes: {subject or prefix: {subscription: None}}
        self._literal: dict[str, dict] = {}
        self._star: dict[str, dict] = {}
        self._heads: dict[str, int] = {}    # literal subjects by all but their last token
        self._wild = SubjectTree()          # every other wildcard filter
        self._cache: dict[str, list[Subscription]] = {}
        self._lock = threading.Lock()   # JetStream's timer thread asks for interest
        self.ack_watchers = 0           # subscriptions that may match ack subjects
        self.version = 0                # changes with every insert and remove
        self._queued = 0                # subscriptions in queue groups

    def insert(self, sub: Subscription) -> None:
        with self._lock:
            subject = sub.subject
            if is_literal(subject):
                self._literal.setdefault(subject, {})[sub] = None
                head = subject.rpartition(".")[0]
                self._heads[head] = self._heads.get(head, 0) + 1
            elif (prefix := _star_prefix(subject)) is not None:
                self._star.setdefault(prefix, {})[sub] = None
            else:
                self._wild.insert(subject, sub)
                self._cache.clear()
            self._counted(sub, 1)

    def remove(self, sub: Subscription) -> None:
        with self._lock:
            subject = sub.subject
            if is_literal(subject):
                if not _take(self._literal, subject, sub):
                    return
                head = subject.rpartition(".")[0]
                if self._heads[head] == 1:
                    del self._heads[head]
                else:
                    self._heads[head] -= 1
            elif (prefix := _star_prefix(subject)) is not None:
                if not _take(self._star, prefix, sub):
                    return
            else:
                if not self._wild.remove(subject, sub):
                    return
                self._cache.clear()
            self._counted(sub, -1)

    def _counted(self, sub: Subscription, change: int) -> None:
        if _may_see_acks(sub.subject):
            self.ack_watchers += change
        if sub.queue:
            self._queued += change
        self.version += 1

    def _all(self, subject: str) -> list[Subscription]:
        """Every subscription matching `subject`, in a list the caller may keep (routing
        may remove a subscription, its UNSUB limit reached, while it goes through it)."""
        literal = self._literal.get(subject)
        head, dot, last = subject.rpartition(".")
        star = self._star.get(head) if dot and last else None
        wild = _NONE
        if self._wild:
            wild = self._cache.get(subject)
            if wild is None:
                wild = self._wild.match(subject)
                if len(self._cache) >= CACHE_LIMIT:
                    self._cache.clear()
                self._cache[subject] = wild
        if star is None and not wild:
            return list(literal) if literal else _NONE
        return [*(literal or _NONE), *(star or _NONE), *wild]

    def match(self, subject: str, skip=None) -> list[Subscription]:
        """The subscriptions a message on `subject` goes to: every plain one, and of each
        queue group one member picked at random among those that can take it (not
        closed, not of the client `skip`: a publisher without echo), as nats-server
        passes a turn on to the next member."""
        with self._lock:
            found = self._all(subject)
        if not self._queued or not any(s.queue for s in found):
            return found
        plain = [s for s in found if not s.queue]
        groups: dict[str, list[Subscription]] = {}
        for s in found:
            if s.queue:
                groups.setdefault(s.queue, []).append(s)
        for members in groups.values():
            first = self._pick(len(members))
            for i in range(len(members)):
                sub = members[(first + i) % len(members)]
                if not sub.client.closed and sub.client is not skip:
                    plain.append(sub)
                    break
        return plain

    def count(self) -> int:
        with self._lock:
            return self._wild.size + sum(len(v) for index in (self._literal, self._star)
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
        subs = self.star_only(head)
        if subs is None or len(subs) != 1 or subs[0].queue:
            return None
        return subs[0]

    def star_only(self, head: str) -> list[Subscription] | None:
        """The subscriptions to ``<head>.*`` when they are what every subject
        ``<head>.<token>`` reaches (no literal subscription under `head`, no other filter
        that could match such a subject); else None."""
        with self._lock:
            subs = self._star.get(head)
            if not subs or head in self._heads or self._wild.takes_any_under(head):
                return None
            return list(subs)


def _take(index: dict, key: str, sub: Subscription) -> bool:
    """Take `sub` out of index[key]; False when it was not there."""
    subs = index.get(key)
    if subs is None or subs.pop(sub, False) is not None:
        return False
    if not subs:
        del index[key]
    return True
