"""Which of a stream's consumers a newly stored message concerns, without a look at each.

A stream with many filtered consumers (1,000 pull consumers on ``orders.<id>``) would
otherwise test every filter for every message it stores.  The index sorts the consumers
once: those whose filters are all literal subjects are found by the message's subject in
a dict; the others (no filter, or a filter with a wildcard) are tested as before.  The
consumers come out in the order of the registry's dict (creation order), exactly those
``Consumer.is_filtered_match`` accepts, so that what follows from a message (deliveries,
their order) is what the plain loop over every consumer gives.

A literal filter matches exactly its own subject: a stored subject with a ``*`` or ``>``
token is a token like any other to a filter (``jsstore._core.subjects``), so a literal
filter never takes it.

The index is rebuilt when the registry's consumers or a consumer's filters change: each
change bumps ``GENERATION`` (``changed()``), and ``FilterIndex.consumers_for`` compares.
"""

from __future__ import annotations

from jsstore._core.subjects import is_literal

GENERATION = 0


def changed() -> None:
    """A consumer came, went or changed its filters: every index is rebuilt when next used."""
    global GENERATION
    GENERATION += 1


class FilterIndex:
    """The consumers of one stream (the registry's name -> Consumer dict, read live)."""

    __slots__ = ("consumers", "generation", "size", "always", "by_subject")

    def __init__(self, consumers: dict):
        self.consumers = consumers
        self.generation = -1
        self.size = -1
        self.always: tuple = ()           # (ordinal, consumer): their filters tested
        self.by_subject: dict[str, tuple] = {}

    def _rebuild(self) -> None:
        always = []
        by_subject: dict[str, list] = {}
        for ordinal, consumer in enumerate(self.consumers.values()):
            filters = consumer.filters
            if filters and all(is_literal(f) for f in filters):
                for subject in dict.fromkeys(filters):
                    by_subject.setdefault(subject, []).append((ordinal, consumer))
            else:
                always.append((ordinal, consumer))
        self.always = tuple(always)
        self.by_subject = {subject: tuple(found) for subject, found in by_subject.items()}
        self.generation = GENERATION
        self.size = len(self.consumers)

    def consumers_for(self, subject: str) -> list:
        """The consumers a message on `subject` may concern, in the registry's order: the
        literal filters equal to it, and every consumer tested as before (the caller's
        ``on_stored`` still tests its filters)."""
        if self.generation != GENERATION or self.size != len(self.consumers):
            self._rebuild()
        hits = self.by_subject.get(subject, ())
        always = self.always
        if not always:
            return [consumer for _, consumer in hits]
        if not hits:
            return [consumer for _, consumer in always]
        return [consumer for _, consumer in sorted(always + hits, key=_ordinal)]


def _ordinal(entry: tuple) -> int:
    return entry[0]
