"""The members of a stream (its consumers) found by the subject a message is on.

A stream with many consumers must not ask each of them about every message: with
10,000 consumers that each filter one subject, a publish would cost 10,000 filter
matches.  ``FilterIndex`` keeps the members whose filters are all literal subjects in a
dictionary by subject, and the rest (a wildcard filter, no filter at all, or a member
marked ``wide``) in one list that every lookup goes through.  ``candidates(subject)``
gives every member whose filters may match `subject`, in the order the members were
added; a caller still applies its own match to them (it is exact for the literal ones).
"""

from __future__ import annotations

from itertools import count
from typing import Generic, Hashable, Iterable, TypeVar

from jsstore._core.storage.subjects import is_literal

T = TypeVar("T")


class FilterIndex(Generic[T]):
    """Members by the literal subjects they filter on, the others in one list."""

    def __init__(self) -> None:
        self._literal: dict[str, dict[Hashable, tuple[int, T]]] = {}
        self._wide: dict[Hashable, tuple[int, T]] = {}
        self._where: dict[Hashable, tuple[str, ...] | None] = {}   # None: in _wide
        self._order = count()
        self._wide_members: list[T] = []    # _wide's members in order (what most get)
        # a literal subject's candidates, made on first use (forgotten on every change;
        # at most one entry per literal filter)
        self._merged: dict[str, list[T]] = {}

    def __len__(self) -> int:
        return len(self._where)

    def add(self, key: Hashable, filters: Iterable[str], member: T, *,
            wide: bool = False) -> None:
        """Index `member` under `key` (replacing what `key` had) for `filters` (none:
        every subject).  A `wide` member is offered for every subject."""
        self.remove(key)
        self._merged = {}
        filters = tuple(filters)
        entry = (next(self._order), member)
        if wide or not filters or not all(is_literal(f) for f in filters):
            self._wide[key] = entry
            self._where[key] = None
            self._wide_members = [member for _, member in self._wide.values()]
            return
        for subject in filters:
            self._literal.setdefault(subject, {})[key] = entry
        self._where[key] = filters

    def is_wide(self, key: Hashable) -> bool:
        """Whether `key`'s member is offered for every subject."""
        return key in self._where and self._where[key] is None

    def remove(self, key: Hashable) -> None:
        """Drop `key`'s member, if indexed."""
        if key not in self._where:
            return
        self._merged = {}
        filters = self._where.pop(key)
        if filters is None:
            del self._wide[key]
            self._wide_members = [member for _, member in self._wide.values()]
            return
        for subject in filters:
            members = self._literal.get(subject)
            if members is not None:
                members.pop(key, None)
                if not members:
                    del self._literal[subject]

    def candidates(self, subject: str) -> list[T]:
        """The members whose filters may match `subject`, in the order they were added
        (a list the caller must not change)."""
        literal = self._literal.get(subject)
        if not literal:
            return self._wide_members
        found = self._merged.get(subject)
        if found is None:
            entries = list(literal.values())
            entries.extend(self._wide.values())
            entries.sort(key=lambda entry: entry[0])
            found = self._merged[subject] = [member for _, member in entries]
        return found
