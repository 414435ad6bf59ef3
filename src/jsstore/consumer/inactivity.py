"""The delete timer of a consumer: nats-server's ``dtmr`` and ``deleteNotActive``.

An ephemeral consumer (and any consumer with an inactive_threshold) is deleted once it
has been inactive for its threshold (the consumer's ``delete_threshold``): a push
consumer while nobody listens on its deliver subject; a pull consumer once no request,
delivery or ack came for that long, no request waits and no delivery is still within
its ack wait.  The timer is a due time like every other; the consumer's ``tick`` runs it.
"""

from __future__ import annotations


class DeleteTimer:
    """When a consumer next checks whether it has been inactive too long."""

    def __init__(self, consumer):
        self.consumer = consumer        # jsstore.consumer.consumer.Consumer
        self.due = 0                    # dtmr: when inactivity is next checked (0: no timer)

    def start(self, due: int) -> None:
        self.due = due
        self.consumer.schedule(due)

    def stop(self) -> None:
        self.due = 0

    def restart(self, now: int) -> None:
        """The threshold changed: count from `now` (or not at all without one)."""
        self.due = 0
        threshold = self.consumer.delete_threshold
        if threshold > 0:
            self.start(now + threshold)

    def activity(self) -> None:
        """suppressDeletion: an ack restarts the inactivity countdown."""
        consumer = self.consumer
        if (consumer.closed or consumer.delete_threshold <= 0
                or (consumer.config.inactive_threshold or 0) <= 0):
            return
        now = consumer.clock()
        if consumer.pull is not None:
            consumer.pull.touch(now)
        if self.due:
            self.start(now + consumer.delete_threshold)

    def check(self, now: int) -> None:
        """deleteNotActive: delete the consumer once its threshold passed."""
        consumer = self.consumer
        self.due = 0
        threshold = consumer.delete_threshold
        if threshold <= 0:
            return
        if consumer.push is not None:
            if consumer.push.active:
                return
        else:
            pull = consumer.pull
            elapsed = now - pull.waiting.last
            if elapsed < threshold:
                self.start(now + threshold - elapsed)
                return
            pull.process_waiting(True, now)
            if pull.waiting:
                self.start(now + threshold)
                return
            latest = consumer.acknowledgements.last_deadline()
            delay = latest + threshold - now if latest else 0
            if delay > 0:
                self.start(now + delay)
                return
        consumer.owner.consumer_inactive(consumer)
