"""Subject filters in a tree of tokens, as nats-server's sublist keeps subscriptions: a
question about one subject walks its tokens, looking at the literal token's, ``*``'s and
``>``'s children at each level, so that its cost follows the subject, not the number of
filters (a scan of every filter made one client's 50,000 ``*.x.N`` subscriptions slow every
other client's messages, and a stream of 10,000 subjects take seconds to create).

Each filter carries items (a subscription, a position in a list); the questions:

- ``match(subject)``: the items of every filter matching a published subject, as
  ``_core.storage.subjects.subject_matches`` decides it (a ``*`` or ``>`` token in the subject is an
  ordinary token that only a filter's wildcards take; a subject with an empty token
  reaches no wildcard filter);
- ``overlapping(filter)``: the items of every filter that some subject matches together
  with `filter` (``filters_overlap``);
- ``supersets(filter)``: the items of every filter matching all that `filter` matches
  (``is_subset_match``);
- ``takes_any_under(head)``: whether some filter matches a subject ``<head>.<token>``.

Filters are added and removed in constant time per token; nodes left empty are pruned.
A query whose own wildcards stand where the tree branches widely visits those branches: the
cost of ``*`` is the number of distinct tokens at its level.
"""

from __future__ import annotations

from typing import Iterator

STAR, REST = "*", ">"


class _Node:
    __slots__ = ("children", "ending", "rest")

    def __init__(self):
        self.children: dict[str, _Node] = {}
        self.ending: dict = {}      # items of the filters ending here: {item: None}
        self.rest: dict = {}        # items of the filters with ">" here

    def empty(self) -> bool:
        return not (self.children or self.ending or self.rest)


class SubjectTree:
    """Items by subject filter."""

    def __init__(self):
        self._root = _Node()
        self.size = 0

    def __bool__(self) -> bool:
        return self.size > 0

    def insert(self, filter: str, item) -> None:
        tokens = filter.split(".")
        node = self._root
        for token in tokens[:-1]:
            node = node.children.setdefault(token, _Node())
        if tokens[-1] == REST:
            node.rest[item] = None
        else:
            node.children.setdefault(tokens[-1], _Node()).ending[item] = None
        self.size += 1

    def remove(self, filter: str, item) -> bool:
        """Take `item` out of `filter`'s; False when it was not there."""
        tokens = filter.split(".")
        path = [self._root]
        for token in tokens[:-1]:
            child = path[-1].children.get(token)
            if child is None:
                return False
            path.append(child)
        if tokens[-1] == REST:
            held = path[-1].rest
        else:
            child = path[-1].children.get(tokens[-1])
            if child is None:
                return False
            path.append(child)
            held = child.ending
        if held.pop(item, False) is not None:
            return False
        self.size -= 1
        for depth in range(len(path) - 1, 0, -1):      # path[depth] was reached by
            if not path[depth].empty():                 # tokens[depth - 1]
                break
            del path[depth - 1].children[tokens[depth - 1]]
        return True

    def match(self, subject: str) -> list:
        """The items of every filter matching the published `subject`."""
        tokens = subject.split(".")
        if "" in tokens:
            return []
        return list(self._walk(tokens, _published))

    def overlapping(self, filter: str) -> Iterator:
        """The items of every filter with which `filter` has a subject in common."""
        return self._walk(filter.split("."), _overlap)

    def supersets(self, filter: str) -> Iterator:
        """The items of every filter matching each subject `filter` matches (`filter`'s
        own among them)."""
        return self._walk(filter.split("."), _superset)

    def takes_any_under(self, head: str) -> bool:
        """Whether some filter matches a subject ``<head>.<token>``."""
        return next(self._walk(head.split(".") + [STAR], _overlap), _NOTHING) is not _NOTHING

    def _walk(self, tokens: list[str], step) -> Iterator:
        count = len(tokens)
        stack = [(self._root, 0)]
        while stack:
            node, depth = stack.pop()
            if depth == count:
                yield from node.ending
                continue
            # a tree ">" here takes the one token or more the query has left, in every
            # question (the query's own ">" too: prefix.> contains prefix.>)
            yield from node.rest
            token = tokens[depth]
            if token == REST and step is _overlap:
                # the query's ">" takes one token or more: everything below this node
                yield from _everything(node.children.values())
                continue
            step(node, token, depth, stack)


_NOTHING = object()


def _published(node: _Node, token: str, depth: int, stack: list) -> None:
    """A published token: its own child, and a filter's "*" (which takes any token)."""
    child = node.children.get(token)
    if child is not None:
        stack.append((child, depth + 1))
    if token != STAR:
        star = node.children.get(STAR)
        if star is not None:
            stack.append((star, depth + 1))


def _overlap(node: _Node, token: str, depth: int, stack: list) -> None:
    """A filter's token against the tree's: "*" meets every token, a literal its own and
    "*"."""
    if token == STAR:
        stack.extend((child, depth + 1) for child in node.children.values())
    else:
        _published(node, token, depth, stack)


def _superset(node: _Node, token: str, depth: int, stack: list) -> None:
    """Filters containing the query's token: its own, and "*" unless the query's token is
    ">" (which takes more than one token)."""
    if token == REST:
        return          # (only a tree ">" contains it: yielded as node.rest)
    _published(node, token, depth, stack)


def _everything(nodes) -> Iterator:
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield from node.ending
        yield from node.rest
        stack.extend(node.children.values())
