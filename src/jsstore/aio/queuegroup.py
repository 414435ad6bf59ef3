"""Queue groups of push subscriptions: members sharing a deliver subject and a queue name
each get a share of the deliveries, none twice, as NATS queue subscribers do.

The JetStream's bus has no queue groups, so the group holds the one bus subscription of
its deliver subject and hands each message to one member in turn.
"""

from __future__ import annotations

import asyncio

from jsstore.aio.inbox import Inbox


class QueueGroup:
    """The members of one queue group, and its subscription."""

    def __init__(self, subject: str, queue: str, loop: asyncio.AbstractEventLoop):
        self.key = (subject, queue)
        self.inbox = Inbox(subject, loop, self._arrived)
        self.members: list = []     # PushSubscriptions, each taking messages with take()
        self._turn = 0

    def _arrived(self, raw) -> None:
        if self.members:
            member = self.members[self._turn % len(self.members)]
            self._turn += 1
            member.take(raw)

    async def join(self, member, worker, bus) -> None:
        """Add a member; the first one starts the subscription."""
        self.members.append(member)
        if len(self.members) == 1:
            await worker.run(self.inbox.subscribe, bus)

    async def leave(self, member, worker) -> bool:
        """Remove a member; the last one ends the subscription.  Whether it was the last."""
        if member in self.members:
            self.members.remove(member)
        if self.members:
            return False
        await worker.run(self.inbox.unsubscribe)
        return True
