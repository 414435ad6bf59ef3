"""One open stream: its configuration, its store, its Msg-Id window, the consumers an
interest or work-queue stream keeps messages for, and its schedules.  The publish path is
the PublishMixin of jsstore.stream.publish.

Time comes from the owner's clock (Unix ns).  With the wall clock the store stamps the
message itself; with another clock (tests) the message is stored with that clock's time.
"""

from __future__ import annotations

import logging
from typing import Callable

from jsstore.stream import expiry
from jsstore.stream import retention
from jsstore.stream import schedules
from jsstore.wire import headers as header_block
from jsstore.stream import checks as pubchecks
from jsstore.wire import apierrors as api_errors
from jsstore.errors import StoreError
from jsstore.stream.schedules import ScheduleTable
from jsstore.stream.config import StreamConfig
from jsstore.stream.publish import PublishMixin

log = logging.getLogger(__name__)


def dedupe_window(config: StreamConfig) -> pubchecks.DedupeWindow | None:
    """A Msg-Id window for the stream, or None when it has no duplicate_window (mirrors)."""
    if config.duplicate_window <= 0:
        return None
    return pubchecks.DedupeWindow(config.duplicate_window)


# a stored message's listener: (stream, seq, subject, hdr, payload, ts)
StoredListener = Callable[["Stream", int, str, "bytes | None", bytes, int], None]


class Stream(PublishMixin):
    """One open stream: configuration, store, creation time and publish state."""

    def __init__(self, config: StreamConfig, store, created: str, *, recovered: bool = False,
                 clock: Callable[[], int], wall_clock: bool = True,
                 emit: Callable | None = None):
        self.config = config        # normalized, as nats-server keeps it
        self.store = store          # FileStore or MemStore
        self.created = created      # RFC 3339 text
        self.clock = clock          # Unix ns
        self.wall_clock = wall_clock  # clock is time.time_ns: let the store stamp messages
        self.emit = emit            # emit(subject, hdr, payload): republished messages
        self.dedupe = dedupe_window(config)  # Nats-Msg-Id -> (seq, ts) of the last window
        # False until the window and last_msg_id are rebuilt from the stored messages (a
        # recovered stream does that on its first publish, as nats-server's rebuildDedupe)
        self.dedupe_loaded = not recovered
        self.last_msg_id = ""       # the Nats-Msg-Id of the last stored message ("" none)
        self.listeners: list[StoredListener] = []  # told of every stored message
        self.republish = None       # (SubjectTransform-like matcher, headers_only) or None
        self._schedules: ScheduleTable | None = None  # made on first use
        self._ack_head: tuple[str, bytes] | None = None   # publish_plain's PubAck start
        self.on_due: Callable[[int], None] | None = None  # told when timed work comes due
        # the consumers an interest or workqueue stream keeps its messages for
        self.retention = retention.tracker_for(config)
        self._configure_transforms()
        expiry.configure_store(self)

    @property
    def name(self) -> str:
        return self.config.name

    def set_config(self, config: StreamConfig) -> None:
        """Adopt an updated configuration (the store is updated by the caller)."""
        if config.duplicate_window <= 0:
            self.dedupe = None
        elif self.dedupe is None:
            self.dedupe = dedupe_window(config)
        else:
            self.dedupe.set_window(config.duplicate_window)
        self.config = config
        self._configure_transforms()
        expiry.configure_store(self)

    def _configure_transforms(self) -> None:
        transform = self.config.subject_transform
        self.transform = None       # the stream's subject transform: subject -> stored subject
        if transform is not None and transform.dest:
            from jsstore.stream.transform import SubjectTransform
            self.transform = SubjectTransform(transform.src or ">", transform.dest).match
        rp = self.config.republish
        if rp is None or not rp.dest:
            self.republish = None
            return
        from jsstore.stream.transform import SubjectTransform
        self.republish = (SubjectTransform(rp.src or ">", rp.dest).match, rp.headers_only)

    # -- dedupe -------------------------------------------------------------------------
    def load_dedupe(self, now: int) -> None:
        """Refill the window from the messages stored since now - duplicate_window, and
        last_msg_id from the stream's last message when that one is among them."""
        self.dedupe_loaded = True
        store = self.store
        window_ns = self.dedupe.window_ns if self.dedupe is not None else 0
        last_seq = store.last_seq
        seq = store.get_seq_from_time(pubchecks.window_start(now, window_ns))
        found: list[tuple[str | None, int, int]] = []
        while 0 < seq <= last_seq:
            try:
                msg, seq = store.load_next_msg(">", seq)
            except StoreError:
                break
            if seq > last_seq:
                break
            found.append((header_block.get_str(msg.hdr, pubchecks.MSG_ID), seq, msg.ts))
            seq += 1
        if self.dedupe is not None:
            self.dedupe.rebuild(found, now)
        if found and found[-1][1] == last_seq:
            self.last_msg_id = found[-1][0] or ""

    # -- interest and workqueue retention ----------------------------------------------
    def register_interest(self, name: str, filters: list[str],
                          needs_ack: Callable[[int, str], bool]) -> None:
        """A consumer of an interest or workqueue stream (see jsstore.stream.retention)."""
        if self.retention is not None:
            self.retention.register(retention.Interest(name, list(filters), needs_ack))

    def unregister_interest(self, name: str) -> int:
        """The consumer went away; returns how many messages that released."""
        if self.retention is None:
            return 0
        return retention.forget(self.retention, self.store, name)

    def ack(self, consumer: str, seq: int) -> bool:
        """A consumer acknowledged `seq`; returns whether the message left the stream."""
        if self.retention is None:
            return False
        return retention.acked(self.retention, self.store, consumer, seq)

    # -- schedules ----------------------------------------------------------------------
    def schedule_table(self) -> ScheduleTable:
        """The stream's pending schedules (subject -> schedule seq, next fire); a recovered
        stream finds them again in its stored schedule messages."""
        if self._schedules is None:
            self._schedules = ScheduleTable()
            if self.store.msgs and self.config.allow_msg_schedules:
                self._rescan_schedules()
        return self._schedules

    def fire_schedules(self, now: int) -> int | None:
        """Publish what the due schedules fire (onto their targets, through this publish
        path); returns when the next schedule is due (None: none is)."""
        if self._schedules is None:
            if not self.config.allow_msg_schedules or not self.store.msgs:
                return None
            self.schedule_table()
        table = self._schedules
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
                self.publish(fired.target, fired.hdr, fired.data, internal=True)
            except api_errors.ApiError as exc:
                log.warning("stream %s: schedule %s could not fire: %s", self.name, subject,
                            exc.description)
            if fired.next_fire is None:
                table.remove(subject)
            else:
                table.add(subject, seq, fired.next_fire)
        return table.next_fire()

    def _last_of(self, subject: str) -> tuple[bytes | None, bytes] | None:
        try:
            msg = self.store.load_last_msg(subject)
        except (StoreError, ValueError):
            return None
        return (bytes(msg.hdr) if msg.hdr else None), bytes(msg.msg)

    def _rescan_schedules(self) -> None:
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
                    fire_ns, _ = schedules.first_fire(
                        value.decode("utf-8", "replace"),
                        header_block.get_str(msg.hdr, schedules.SCHEDULE_TIME_ZONE),
                        msg.ts, now)
                except ValueError:
                    fire_ns = None
                if fire_ns is not None:
                    self._schedules.add(msg.subject, seq, fire_ns)
            seq += 1
