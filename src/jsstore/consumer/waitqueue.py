"""The pull requests a consumer is holding: nats-server's ``waitQueue``.

A pull request asks for up to ``wanted`` messages (and at most ``max_bytes`` bytes) before
it ``expires``.  Requests wait in arrival order, at most ``max_waiting`` of them.  Each message
goes to the request at the head; a request that still wants more moves to the tail, so
concurrent requests are served round robin.  With the ``prioritized`` priority policy,
requests are kept sorted by their priority (0 first, FIFO within one priority) and a
served request goes back to the end of its own priority band.

Times are Unix nanoseconds from the consumer's clock; 0 means "never".
"""

from __future__ import annotations

from typing import Callable, Iterator

NO_PRIORITY = 1 << 31          # a request without a priority sorts after every priority


class WaitingRequest:
    """One pull request waiting for messages."""

    __slots__ = ("reply", "wanted", "delivered", "max_bytes", "expires", "received",
                 "heartbeat", "next_heartbeat", "no_wait", "group", "min_pending",
                 "min_ack_pending", "pin_id", "priority", "sink")

    def __init__(self, reply: str, batch: int, *, max_bytes: int = 0, expires: int = 0,
                 received: int = 0, heartbeat: int = 0, no_wait: bool = False,
                 group: str | None = None, min_pending: int = 0, min_ack_pending: int = 0,
                 pin_id: str = "", priority: int | None = None,
                 sink: Callable | None = None):
        self.reply = reply                  # where messages and status replies go
        self.wanted = batch                 # n: messages still wanted
        self.delivered = 0                  # messages sent so far
        self.max_bytes = max_bytes          # bytes still allowed (0: no byte limit)
        self.expires = expires              # Unix ns; 0 never (no_wait requests end at EOS)
        self.received = received            # Unix ns the request arrived
        self.heartbeat = heartbeat          # ns between idle heartbeats (0: none)
        self.next_heartbeat = received + heartbeat if heartbeat else 0
        self.no_wait = no_wait
        self.group = group                  # priority group (None: the request named none)
        self.min_pending = min_pending      # overflow: serve only from this num_pending
        self.min_ack_pending = min_ack_pending  # overflow: ... or this num_ack_pending
        self.pin_id = pin_id                # pinned_client: the pin the client holds
        self.priority = priority            # prioritized: 0 (first) to 9
        self.sink = sink                    # embedded fetch: called with each Msg instead of the bus

    @property
    def sort_priority(self) -> int:
        return NO_PRIORITY if self.priority is None else self.priority

    def __repr__(self) -> str:
        return (f"WaitingRequest(reply={self.reply!r}, wanted={self.wanted}, "
                f"delivered={self.delivered}, max_bytes={self.max_bytes}, "
                f"expires={self.expires})")


class WaitQueue:
    """The requests of one pull consumer, head first."""

    def __init__(self, max_waiting: int, prioritized: bool = False):
        self.max = max_waiting
        self.prioritized = prioritized
        self._items: list[WaitingRequest] = []
        self.last = 0                       # Unix ns of the last request or delivery

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __iter__(self) -> Iterator[WaitingRequest]:
        return iter(list(self._items))

    def is_full(self) -> bool:
        return len(self._items) >= self.max

    def peek(self) -> WaitingRequest | None:
        return self._items[0] if self._items else None

    def add(self, wr: WaitingRequest) -> bool:
        """Queue a request (sorted by priority when prioritized); False when full."""
        if self.is_full():
            return False
        if self.prioritized:
            self._insert_sorted(wr)
        else:
            self._items.append(wr)
        self.last = wr.received
        return True

    def _insert_sorted(self, wr: WaitingRequest) -> None:
        priority = wr.sort_priority
        index = len(self._items)
        for i, other in enumerate(self._items):
            if other.sort_priority > priority:
                index = i
                break
        self._items.insert(index, wr)

    def remove(self, wr: WaitingRequest) -> None:
        try:
            self._items.remove(wr)
        except ValueError:
            pass

    def cycle(self) -> None:
        """Move the head to the tail (it stays queued)."""
        if len(self._items) > 1:
            self._items.append(self._items.pop(0))

    def pop(self) -> WaitingRequest | None:
        """Take one message's worth from the head: count it, and requeue the request at
        the tail (or, prioritized, at the end of its band) while it wants more, else
        remove it."""
        if not self._items:
            return None
        wr = self._items[0]
        wr.delivered += 1
        wr.wanted -= 1
        if wr.wanted <= 0:
            self._items.pop(0)
        elif len(self._items) > 1:
            self._items.pop(0)
            if self.prioritized:
                self._insert_sorted(wr)
            else:
                self._items.append(wr)
        return wr

    def take(self, count: int) -> None:
        """`count` pops at once (a run of messages to the head request)."""
        items = self._items
        if len(items) == 1:
            wr = items[0]
            wr.delivered += count
            wr.wanted -= count
            if wr.wanted <= 0:
                items.pop(0)
            return
        for _ in range(count):
            self.pop()

    def clear(self) -> list[WaitingRequest]:
        """Remove and return every request."""
        items, self._items = self._items, []
        return items
