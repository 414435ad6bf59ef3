"""One open stream: its configuration, its store, its Msg-Id window, the consumers an
interest or work-queue stream keeps messages for, its schedules, and nats-server's publish
path for it.

A publish runs in two steps, as nats-server's does: ``check`` runs every check that can
reject the message, in nats-server's order, and returns a ``Prepared`` message; ``apply``
stores it and does what follows a store (the Msg-Id record, the rollup purge, the
republish, the listeners).  The commonest publish -- no headers, into a stream that only
stores -- is the core's (``plain_target``: a ``_core.delivery.streamtarget.StreamTarget``,
which serves the server's publish plans and ``publish_plain``), exactly as the two steps
would do it.  An atomic batch checks all its messages before applying any.

Time comes from the owner's clock (Unix ns).  With the wall clock the store stamps the
message itself; with another clock (tests) the message is stored with that clock's time.
"""

from __future__ import annotations

from typing import Callable

from jsstore._core.delivery.streamtarget import StreamTarget
from jsstore._core.storage.engine import BlockStore
from jsstore._core.storage.record import message_size
from jsstore.errors import MsgNotFound, StoreEOF, StoreError
from jsstore.gocompat import json as gojson
from jsstore.gocompat.durations import SECOND
from jsstore.gocompat.times import rfc3339_nano
from jsstore.store.contract import FILE_STORAGE
from jsstore.stream import checks as pubchecks
from jsstore.stream import counters, expiry, retention
from jsstore.stream.batches import BatchView
from jsstore.stream.config import StreamConfig
from jsstore.stream.puback import Prepared, PubAck
from jsstore.stream.scheduler import StreamSchedules
from jsstore.stream.transform import SubjectTransform
from jsstore.wire import apierrors as api_errors
from jsstore.wire import headers as header_block

RECORD_OVERHEAD = 30    # a stored record's bytes beyond subject, headers and payload
# headers nats-server adds to a republished message, in its order
RP_STREAM, RP_SUBJECT, RP_SEQUENCE = "Nats-Stream", "Nats-Subject", "Nats-Sequence"
RP_TIME_STAMP, RP_LAST_SEQUENCE, RP_MSG_SIZE = "Nats-Time-Stamp", "Nats-Last-Sequence", "Nats-Msg-Size"


def dedupe_window(config: StreamConfig) -> pubchecks.DedupeWindow | None:
    """A Msg-Id window for the stream, or None when it has no duplicate_window (mirrors)."""
    if config.duplicate_window <= 0:
        return None
    return pubchecks.DedupeWindow(config.duplicate_window)


# a stored message's listener: (stream, seq, subject, hdr, payload, ts)
StoredListener = Callable[["Stream", int, str, "bytes | None", bytes, int], None]


class Stream:
    """One open stream: configuration, store, creation time and publish state."""

    def __init__(self, config: StreamConfig, store, created: str, *, recovered: bool = False,
                 clock: Callable[[], int], wall_clock: bool = True,
                 emit: Callable | None = None, domain: str | None = None):
        self.config = config        # normalized, as nats-server keeps it
        self.store = store          # FileStore or MemStore
        self.created = created      # RFC 3339 text
        self.clock = clock          # Unix ns
        self.wall_clock = wall_clock  # clock is time.time_ns: let the store stamp messages
        self.emit = emit            # emit(subject, hdr, payload): republished messages
        self.domain = domain        # the JetStream domain its PubAcks name
        # usage_check(storage, size) raises when the account may not store a message of
        # `size` bytes more (its limits)
        self.usage_check: Callable[[str, int], None] | None = None
        self.dedupe = dedupe_window(config)  # Nats-Msg-Id -> (seq, ts) of the last window
        # False until the window and last_msg_id are rebuilt from the stored messages (a
        # recovered stream does that on its first publish, as nats-server's rebuildDedupe)
        self.dedupe_loaded = not recovered
        self.last_msg_id = ""       # the Nats-Msg-Id of the last stored message ("" none)
        self.listeners: list[StoredListener] = []  # told of every stored message
        self.republish = None       # (SubjectTransform-like matcher, headers_only) or None
        self.schedules: StreamSchedules | None = None  # made on first use
        self.on_due: Callable[[int], None] | None = None  # told when timed work comes due
        self._plain: StreamTarget | None = None      # plain_target's, while it holds
        # told when what plain_target gives changes (the owner's plans are made again)
        self.on_plain_change: Callable[[], None] | None = None
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
        self._plain_changed()

    def _configure_transforms(self) -> None:
        transform = self.config.subject_transform
        self.transform = None       # the stream's subject transform: subject -> stored subject
        if transform is not None and transform.dest:
            self.transform = SubjectTransform(transform.src or ">", transform.dest).match
        rp = self.config.republish
        if rp is None or not rp.dest:
            self.republish = None
            return
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
    def schedule_table(self) -> StreamSchedules:
        """The stream's pending schedules; a recovered stream finds them again in its
        stored schedule messages."""
        if self.schedules is None:
            self.schedules = StreamSchedules(self.config.name, self.store, self.clock,
                                             self._publish_internal)
            self._plain_changed()       # (a stream with schedules does more than store)
        return self.schedules

    def fire_schedules(self, now: int) -> int | None:
        """Publish what the due schedules fire (onto their targets, through this publish
        path); returns when the next schedule is due (None: none is)."""
        if self.schedules is None:
            if not self.config.allow_msg_schedules or not self.store.msgs:
                return None
            self.schedule_table()
        return self.schedules.fire(now)

    def _publish_internal(self, subject: str, hdr: bytes | None, payload: bytes) -> PubAck:
        """The stream's own messages (fired schedules) through the publish path."""
        return self.publish(subject, hdr, payload, internal=True)

    # -- reading and removing messages ------------------------------------------------------
    def get_msg(self, seq: int = 0, last_by_subject: str | None = None,
                next_by_subject: str | None = None):
        """The stored message at seq; the last on a subject; or the first at or after seq
        (default 1) matching next_by_subject (the STREAM.MSG.GET request's forms; the
        caller has checked that exactly one is asked for)."""
        try:
            if next_by_subject:
                return self.store.load_next_msg(next_by_subject, seq)[0]
            if last_by_subject:
                return self.store.load_last_msg(last_by_subject)
            return self.store.load_msg(seq)
        except (StoreError, ValueError) as exc:
            raise api_errors.JSNoMessageFoundErr() from exc

    def delete_msg(self, seq: int, *, no_erase: bool = False,
                   want_subject: bool = False) -> str | None:
        """Remove one message, erased (overwritten) unless no_erase; returns its subject
        when `want_subject` (for the consumers), else None. A message that is not there
        fails as nats-server's store of the same kind fails: a file store with "stream
        store EOF" past the last sequence, "no message found" below the first, "sequence N
        not found" between them; a memory store with "sequence N not found"."""
        cfg, store = self.config, self.store
        if cfg.sealed:
            raise api_errors.JSStreamSealedErr()
        if cfg.deny_delete:
            raise api_errors.JSStreamMsgDeleteFailedF(err="message delete not permitted")
        in_file = store.type() == FILE_STORAGE
        if in_file and seq > store.last_seq:
            raise api_errors.JSStreamMsgDeleteFailedF(err=StoreEOF.text)
        subject = None
        if want_subject:
            try:
                subject = store.load_msg(seq).subject
            except (StoreError, ValueError):
                subject = None
        try:
            removed = 0 < seq <= store.last_seq and (store.remove_msg(seq) if no_erase
                                                     else store.erase_msg(seq))
        except StoreError as exc:
            raise api_errors.JSStreamMsgDeleteFailedF(err=str(exc)) from exc
        if not removed:
            if in_file and seq < store.first_seq:   # no block holds it any more
                raise api_errors.JSStreamMsgDeleteFailedF(err=MsgNotFound.text)
            raise api_errors.JSSequenceNotFoundErrF(seq=seq)
        return subject

    def purge(self, filter: str = "", seq: int = 0, keep: int = 0) -> int:
        """Remove messages: all; or those matching filter, below seq, or all but the last
        `keep` (per subject with a filter; not both seq and keep). Returns how many were
        removed."""
        if self.config.sealed:
            raise api_errors.JSStreamSealedErr()
        if self.config.deny_purge:
            raise api_errors.JSStreamPurgeFailedF(err="stream purge not permitted")
        try:
            if filter or seq > 0 or keep > 0:
                return self.store.purge_ex(filter, seq, keep)
            return self.store.purge()
        except StoreError as exc:
            raise api_errors.JSStreamGeneralErrorF(err=str(exc)) from exc

    # -- the publish path ----------------------------------------------------------------
    def last_seq_for_subject(self, subject: str) -> int:
        """The last sequence stored on a subject (0 when it has none)."""
        try:
            return self.store.load_last_msg(subject).seq
        except (StoreError, ValueError):
            return 0

    def check(self, subject: str, hdr: bytes | None, payload: bytes, now: int, *,
              internal: bool = False, batch: BatchView | None = None) -> Prepared:
        """nats-server's checks of one publish, in its order: sealed; the header checks
        (counter increment, Expected-Stream, TTL allowed, Expected-Last-(Subject-)Sequence,
        schedules, Msg-Id dedupe, Expected-Last-Msg-Id, Rollup, increment missing); the
        counter; sizes; the TTL. Raises the ApiError it fails with. `internal` marks the
        stream's own messages (fired schedules, subject delete markers)."""
        cfg = self.config
        if cfg.sealed:
            raise api_errors.JSStreamSealedErr()
        if self.transform is not None and not internal:
            subject = self.transform(subject) or subject
        if not hdr:
            if cfg.allow_msg_counter:
                raise api_errors.JSMessageIncrMissingErr()
            pubchecks.check_sizes(0, len(payload), cfg.max_msg_size)
            return Prepared(subject, None, payload)
        if not self.dedupe_loaded:
            self.load_dedupe(now)
        checks = pubchecks.check_headers(
            hdr, subject=subject, stream_name=cfg.name, last_seq=self.store.last_seq,
            last_msg_id=self.last_msg_id, last_seq_for_subject=self.last_seq_for_subject,
            dedupe=self.dedupe, now=now, allow_msg_ttl=bool(cfg.allow_msg_ttl),
            allow_rollup_hdrs=bool(cfg.allow_rollup_hdrs), deny_purge=bool(cfg.deny_purge),
            mirror=cfg.mirror is not None, allow_msg_counter=bool(cfg.allow_msg_counter),
            payload_len=len(payload), sourced=internal and b"Nats-Stream-Source" in hdr,
            allow_msg_schedules=bool(cfg.allow_msg_schedules), stream_subjects=cfg.subjects,
            internal=internal)
        if checks.duplicate_seq is not None:
            return Prepared(subject, hdr, payload, msg_id=checks.msg_id,
                            duplicate_seq=checks.duplicate_seq)
        hdr = checks.hdr
        counter = None
        if checks.incr is not None and cfg.allow_msg_counter:
            previous = batch.counter(subject) if batch is not None else None
            counter = self.count(subject, hdr, payload, checks.incr, previous)
            hdr, payload = counter.hdr, counter.body
        pubchecks.check_sizes(len(hdr) if hdr else 0, len(payload), cfg.max_msg_size)
        sdm_ttl = cfg.subject_delete_marker_ttl // SECOND
        ttl = pubchecks.msg_ttl(hdr, bool(cfg.allow_msg_ttl), sdm_ttl, cfg.max_msgs_per_subject)
        if ttl > 0 and sdm_ttl > 0 and ttl == sdm_ttl:
            # a TTL raised to the marker TTL is written back into the header, in seconds
            given = pubchecks.parse_msg_ttl(header_block.get(hdr, pubchecks.MSG_TTL))
            if given != ttl:
                hdr = header_block.set_header(hdr, pubchecks.MSG_TTL, str(ttl))
        prepared = Prepared(subject, hdr, payload, ttl, checks.msg_id, checks.rollup)
        prepared.counter = counter
        prepared.schedule = checks.schedule
        prepared.scheduler_purge = checks.scheduler_purge
        return prepared

    def count(self, subject: str, hdr: bytes | None, payload: bytes, incr: int,
              previous: tuple[int, dict] | None = None):
        """The counter message for an increment on `subject`: the total so far comes from
        the subject's last message (or `previous`, inside a batch)."""
        if previous is None:
            try:
                last = self.store.load_last_msg(subject)
                previous = counters.previous_state(last.hdr, bytes(last.msg))
            except (StoreError, ValueError):
                previous = (0, {})
        return counters.apply_increment(hdr, payload, subject, incr, previous[0], previous[1])

    def apply(self, prepared: Prepared, now: int) -> PubAck:
        """Store a checked message and do what follows: record its Msg-Id, roll up,
        republish, tell the listeners."""
        cfg = self.config
        if prepared.duplicate_seq is not None:
            return PubAck(stream=cfg.name, seq=prepared.duplicate_seq, duplicate=True,
                          domain=self.domain)
        store = self.store
        subject, hdr, payload = prepared.subject, prepared.hdr, prepared.payload
        if self.usage_check is not None:
            memory = cfg.storage == "memory"
            self.usage_check(cfg.storage, message_size(
                len(subject), len(hdr) if hdr else 0, len(payload), hdr is not None, memory))
        previous_on_subject = self.last_seq_for_subject(subject) if self.republish else 0
        if self.retention is not None and not retention.keep_on_publish(self.retention, subject):
            return self._skip_uninteresting(prepared)
        try:
            if self.wall_clock:
                seq, ts = store.store_msg(subject, hdr, payload, prepared.ttl)
            else:
                seq, ts = store.last_seq + 1, now
                store.store_raw_msg(subject, hdr, payload, seq, ts, prepared.ttl, True)
        except StoreError as exc:
            raise api_errors.JSStreamStoreFailedF(err=str(exc)) from exc
        msg_id = prepared.msg_id
        if self.dedupe_loaded:
            self.last_msg_id = msg_id
        if msg_id and self.dedupe is not None:
            self.dedupe.record(msg_id, seq, ts)
        if prepared.rollup is not None:
            # nats-server purges with keep 1: the subject's older messages ("sub") or every
            # message before this one ("all")
            try:
                store.purge_ex(subject if prepared.rollup == pubchecks.ROLLUP_SUBJECT else "", 0, 1)
            except StoreError as exc:
                raise api_errors.JSStreamRollupFailedF(err=str(exc)) from exc
        if prepared.schedule is not None:
            self.schedule_table()
        if self.schedules is not None:
            self.schedules.stored(subject, seq, prepared.schedule, prepared.scheduler_purge)
        if prepared.scheduler_purge:
            store.purge_ex(prepared.scheduler_purge, 0, 0)
        if self.on_due is not None:
            if prepared.ttl > 0:
                self.on_due(ts + prepared.ttl * SECOND)
            if cfg.max_age > 0 and store.msgs == 1:
                self.on_due(ts + cfg.max_age)
            if prepared.schedule is not None and prepared.schedule.next_fire is not None:
                self.on_due(prepared.schedule.next_fire)
        if self.republish is not None:
            self._republish(seq, subject, hdr, payload, ts, previous_on_subject)
        for listener in self.listeners:
            listener(self, seq, subject, hdr, payload, ts)
        val = str(prepared.counter.total) if prepared.counter is not None else None
        return PubAck(stream=cfg.name, seq=seq, val=val, domain=self.domain)

    def publish(self, subject: str, hdr: bytes | None, payload: bytes, *,
                internal: bool = False) -> PubAck:
        now = self.clock()
        return self.apply(self.check(subject, hdr, payload, now, internal=internal), now)

    def publish_plain(self, subject: str, payload: bytes) -> bytes | None:
        """The most common publish in one step: a message without headers, into a stream
        that does nothing with it beyond storing it and telling its listeners. Returns the
        PubAck JSON, exactly what ``publish(...).to_json()`` would; None when the stream
        does more or the message is too large, and the caller takes ``publish``."""
        target = self.plain_target()
        if target is None or 0 <= target.max_msg_size < len(payload):
            return None
        cfg = self.config
        if self.usage_check is not None:
            self.usage_check(cfg.storage, message_size(len(subject), 0, len(payload), False,
                                                       cfg.storage == "memory"))
        try:
            return target.publish(subject, payload)
        except StoreError as exc:
            raise api_errors.JSStreamStoreFailedF(err=str(exc)) from exc

    def plain_target(self) -> StreamTarget | None:
        """The core's publish into this stream of a message without headers, while the
        stream does nothing with such a message beyond storing it and telling its
        listeners (no subject transform, counters, retention, republish, schedules; the
        wall clock; a sealed stream takes nothing) and its store is a BlockStore that writes
        without an fsync of its own; else None.  (The account's limits are the caller's to check.)"""
        cfg = self.config
        store = self.store
        if (cfg.sealed or self.transform is not None or cfg.allow_msg_counter
                or self.retention is not None or self.republish is not None
                or self.schedules is not None or not self.wall_clock
                # (a store of another kind, plugged in, keeps its own store_msg)
                or not isinstance(store, BlockStore)
                or getattr(store, "synced_writes", True)):
            return None
        target = self._plain
        if target is None:
            domain = b',"domain":' + gojson.encode(self.domain) if self.domain else b""
            target = self._plain = StreamTarget(
                self, store, b'{"stream":' + gojson.encode(cfg.name) + domain
                + b',"seq":', self.listeners, self.on_due if cfg.max_age > 0 else None,
                cfg.max_age, cfg.max_msg_size)
        return target

    def _plain_changed(self) -> None:
        self._plain = None
        if self.on_plain_change is not None:
            self.on_plain_change()

    def _skip_uninteresting(self, prepared: Prepared) -> PubAck:
        """An interest stream with no consumer for the subject: the sequence is used up,
        nothing is kept (the Msg-Id is still recorded)."""
        try:
            seq = self.store.skip_msg()
        except StoreError as exc:
            raise api_errors.JSStreamStoreFailedF(err=str(exc)) from exc
        if self.dedupe_loaded:
            self.last_msg_id = prepared.msg_id
        if prepared.msg_id and self.dedupe is not None:
            self.dedupe.record(prepared.msg_id, seq, self.clock())
        return PubAck(stream=self.config.name, seq=seq, domain=self.domain)

    # -- atomic batches -----------------------------------------------------------------
    def commit_batch(self, batch_id: str, messages, now: int) -> PubAck:
        """Store a committed batch, all or nothing: every message is checked first (the
        batch rules of jsstore.stream.batches, then the publish checks, with counters and limits
        counted across the batch); the first failure rejects the whole batch."""
        cfg = self.config
        if cfg.sealed:
            raise api_errors.JSStreamSealedErr()
        if not self.dedupe_loaded:
            self.load_dedupe(now)
        view = BatchView(self.store.last_seq)
        dedupe = self.dedupe

        def in_window(msg_id: str) -> bool:
            return dedupe is not None and dedupe.check(msg_id, now) is not None
        prepared: list[Prepared] = []
        for msg in messages:
            view.check(msg.hdr, msg.subject, in_window, self.last_seq_for_subject)
            one = self.check(msg.subject, msg.hdr, msg.payload, now, batch=view)
            view.record(msg.subject, one.hdr)
            if one.counter is not None:
                view.set_counter(msg.subject, one.counter.total, one.counter.sources)
            prepared.append(one)
        self._check_batch_limits(prepared)
        ack = None
        for one in prepared:
            ack = self.apply(one, now)
        return PubAck(stream=cfg.name, seq=ack.seq if ack else self.store.last_seq,
                      batch=batch_id, count=len(prepared), domain=self.domain)

    def _check_batch_limits(self, prepared: list[Prepared]) -> None:
        """Discard-new limits over the whole batch, before anything is stored."""
        cfg = self.config
        if cfg.discard != "new":
            return
        store = self.store
        if cfg.max_msgs > 0 and store.msgs + len(prepared) > cfg.max_msgs:
            raise api_errors.JSStreamStoreFailedF(err="maximum messages exceeded")
        if cfg.max_bytes > 0:
            added = sum(RECORD_OVERHEAD + len(p.subject) + len(p.payload)
                        + (4 + len(p.hdr) if p.hdr else 0) for p in prepared)
            if store.bytes + added > cfg.max_bytes:
                raise api_errors.JSStreamStoreFailedF(err="maximum bytes exceeded")
        if cfg.discard_new_per_subject and cfg.max_msgs_per_subject > 0:
            per_subject: dict[str, int] = {}
            for p in prepared:
                per_subject[p.subject] = per_subject.get(p.subject, 0) + 1
            for subject, added in per_subject.items():
                if store.filtered_state(0, subject).msgs + added > cfg.max_msgs_per_subject:
                    raise api_errors.JSStreamStoreFailedF(
                        err="maximum messages per subject exceeded")

    # -- republish ----------------------------------------------------------------------
    def _republish(self, seq: int, subject: str, hdr: bytes | None, payload: bytes, ts: int,
                   previous_on_subject: int) -> None:
        mapper, headers_only = self.republish
        destination = mapper(subject)
        if destination is None or self.emit is None:
            return
        fields = [(RP_STREAM, self.config.name), (RP_SUBJECT, subject),
                  (RP_SEQUENCE, str(seq)), (RP_TIME_STAMP, rfc3339_nano(ts)),
                  (RP_LAST_SEQUENCE, str(previous_on_subject))]
        if headers_only:
            fields.append((RP_MSG_SIZE, str(len(payload))))
        out = hdr
        if not out:
            out = header_block.build(fields)
        else:
            for key, value in fields:
                out = header_block.append_header(out, key, value)
        self.emit(destination, out, b"" if headers_only else payload)
