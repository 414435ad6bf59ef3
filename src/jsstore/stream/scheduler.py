"""The schedules of one stream: which schedule messages are pending and when each fires next,
firing the due ones through the stream's publish path, and finding them again in the stored
messages after a restart.

The rules of one schedule (its headers, patterns and the message it fires) are
``jsstore.stream.schedules``; this object only keeps the stream's table of them. It is made
on first use: a stream that never stored a schedule has none, and its publishes skip it.
"""

from __future__ import annotations

import logging
from typing import Callable

from jsstore.deferred import deferred
from jsstore.errors import StoreError
from jsstore.stream import schedules
from jsstore.stream.schedules import ScheduleTable
from jsstore.wire import apierrors as api_errors
from jsstore.wire import headers as header_block

log = logging.getLogger(__name__)

# cron patterns and time zones (zoneinfo) load with the first schedule that has one
cron = deferred("jsstore.stream.cron")

# publish(subject, hdr, payload): the stream's publish path for its own messages
Publish = Callable[[str, "bytes | None", bytes], object]


class StreamSchedules:
    """The pending schedules of one stream (subject -> schedule seq, next fire)."""

    def __init__(self, name: str, store, clock: Callable[[], int], publish: Publish):
        self.name = name            # the stream's, for log lines
        self.store = store          # the stream's store: schedules are stored messages
        self.clock = clock          # Unix ns
        self.publish = publish      # fires a due schedule onto its target
        self.table = ScheduleTable()
        if store.msgs:
            self._rescan()

    def __contains__(self, subject: object) -> bool:
        return subject in self.table

    def stored(self, subject: str, seq: int, schedule, scheduler_purge: str | None) -> None:
        """A message was stored on `subject` at `seq`: a schedule (`schedule` set) replaces
        the subject's entry, any other message removes it; a fired one-shot's message
        (`scheduler_purge`) removes its schedule."""
        if schedule is not None:
            self.table.add(subject, seq, schedule.next_fire)
        elif subject in self.table:
            self.table.remove(subject)      # replaced by a message that is no schedule
        if scheduler_purge:
            self.table.remove(scheduler_purge)

    def fire(self, now: int) -> int | None:
        """Publish what the due schedules fire (onto their targets); returns when the next
        schedule is due (None: none is)."""
        table = self.table
        for subject, seq in table.due(now):
            entry = table.get(subject)
            if entry is None or entry[0] != seq:
                continue
            try:
                msg = self.store.load_msg(seq)
            except StoreError:
                table.remove(subject)
                continue
            fired = schedules.fire(subject, msg.hdr, bytes(msg.msg), entry[1], now,
                                   self._last_of)
            if fired is None:
                table.remove(subject)
                continue
            try:
                self.publish(fired.target, fired.hdr, fired.data)
            except api_errors.ApiError as exc:
                log.warning("stream %s: schedule %s could not fire: %s", self.name, subject,
                            exc.description)
            if fired.next_fire is None:
                table.remove(subject)
            else:
                table.add(subject, seq, fired.next_fire)
        return table.next_fire()

    def _last_of(self, subject: str) -> tuple[bytes | None, bytes] | None:
        """The last message on `subject` (a schedule's Nats-Schedule-Source)."""
        try:
            msg = self.store.load_last_msg(subject)
        except (StoreError, ValueError):
            return None
        return (bytes(msg.hdr) if msg.hdr else None), bytes(msg.msg)

    def _rescan(self) -> None:
        """Find the stored schedule messages again (a recovered stream)."""
        store = self.store
        seq = store.first_seq
        now = self.clock()
        while 0 < seq <= store.last_seq:
            try:
                msg, seq = store.load_next_msg(">", seq)
            except StoreError:
                break
            value = header_block.get(msg.hdr, schedules.SCHEDULE) if msg.hdr else None
            if value:
                try:
                    fire_ns, _ = cron.first_fire(
                        value.decode("utf-8", "replace"),
                        header_block.get_str(msg.hdr, schedules.SCHEDULE_TIME_ZONE),
                        msg.ts, now)
                except ValueError:
                    fire_ns = None
                if fire_ns is not None:
                    self.table.add(msg.subject, seq, fire_ns)
            seq += 1
