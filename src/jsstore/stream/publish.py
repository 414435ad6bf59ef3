"""nats-server's publish path for one stream (the PublishMixin of jsstore.stream.stream.Stream).

A publish runs in two steps, as nats-server's does: ``check`` runs every check that can
reject the message, in nats-server's order, and returns a ``Prepared`` message; ``apply``
stores it and does what follows a store (the Msg-Id record, the rollup purge, the
republish, the listeners).  ``publish_plain`` does the commonest publish -- no headers,
into a stream that only stores -- in one step, exactly as the two would.  An atomic batch
checks all its messages before applying any.
"""

from __future__ import annotations

import msgspec

from jsstore.stream import counters
from jsstore.stream import retention
from jsstore.wire import headers as header_block
from jsstore.stream import checks as pubchecks
from jsstore.wire import apierrors as api_errors
from jsstore.stream.batches import BatchView
from jsstore.gocompat.times import rfc3339_nano
from jsstore.errors import StoreError

from jsstore.gocompat.durations import SECOND as NANOS_PER_SECOND

RECORD_OVERHEAD = 30    # a stored record's bytes beyond subject, headers and payload
# headers nats-server adds to a republished message, in its order
RP_STREAM, RP_SUBJECT, RP_SEQUENCE = "Nats-Stream", "Nats-Subject", "Nats-Sequence"
RP_TIME_STAMP, RP_LAST_SEQUENCE, RP_MSG_SIZE = "Nats-Time-Stamp", "Nats-Last-Sequence", "Nats-Msg-Size"


class PubAck(msgspec.Struct, omit_defaults=True):
    """The answer to a stored publish: the stream and the message's sequence."""
    stream: str
    seq: int
    duplicate: bool = False        # a Nats-Msg-Id seen inside the window: seq is the original
    domain: str | None = None      # the JetStream domain, when one is configured
    val: str | None = None         # a counter's new total (decimal text)
    batch: str | None = None       # a committed atomic batch's id
    count: int = 0                 # and how many messages it stored

    def to_json(self) -> bytes:
        """The PubAck as nats-server writes it (its duplicate form has a space after the
        colon)."""
        head = b'{"stream":' + msgspec.json.encode(self.stream)
        if self.domain:
            head += b',"domain":' + msgspec.json.encode(self.domain)
        head += b',"seq":' + str(self.seq).encode()
        if self.duplicate:
            return head + b',"duplicate": true}'
        if self.val is not None:
            head += b',"val":' + msgspec.json.encode(self.val)
        if self.batch is not None:
            head += b',"batch":' + msgspec.json.encode(self.batch) + b',"count":' + str(self.count).encode()
        return head + b"}"


def pub_error_json(stream: str, error: api_errors.ApiError) -> bytes:
    """A rejected publish's answer: the error, then the stream with sequence 0."""
    return (b'{"error":' + msgspec.json.encode(error.to_dict()) + b',"stream":'
            + msgspec.json.encode(stream) + b',"seq":0}')


class Prepared:
    """A message that passed the publish checks, ready to store."""
    __slots__ = ("subject", "hdr", "payload", "ttl", "msg_id", "rollup", "duplicate_seq",
                 "counter", "schedule", "scheduler_purge")

    def __init__(self, subject: str, hdr: bytes | None, payload: bytes, ttl: int = 0,
                 msg_id: str = "", rollup: str | None = None, duplicate_seq: int | None = None):
        self.subject = subject
        self.hdr = hdr                  # the header block to store (a raised TTL rewritten)
        self.payload = payload
        self.ttl = ttl                  # seconds; 0 none, -1 never
        self.msg_id = msg_id            # Nats-Msg-Id ("" none)
        self.rollup = rollup            # None, "sub" or "all"
        self.duplicate_seq = duplicate_seq  # set: answer duplicate, store nothing
        self.counter = None             # counters.CounterUpdate of a counter publish
        self.schedule = None            # schedules.Schedule of a schedule message
        self.scheduler_purge = None     # the schedule subject a fired one-shot purges


class PublishMixin:
    """The publish half of a Stream."""

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
        sdm_ttl = cfg.subject_delete_marker_ttl // NANOS_PER_SECOND
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
            return PubAck(stream=cfg.name, seq=prepared.duplicate_seq, duplicate=True)
        store = self.store
        subject, hdr, payload = prepared.subject, prepared.hdr, prepared.payload
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
            self.schedule_table().add(subject, seq, prepared.schedule.next_fire)
        elif self._schedules is not None and subject in self._schedules:
            self._schedules.remove(subject)   # replaced by a message that is no schedule
        if prepared.scheduler_purge:
            store.purge_ex(prepared.scheduler_purge, 0, 0)
            if self._schedules is not None:
                self._schedules.remove(prepared.scheduler_purge)
        if self.on_due is not None:
            if prepared.ttl > 0:
                self.on_due(ts + prepared.ttl * NANOS_PER_SECOND)
            if cfg.max_age > 0 and store.msgs == 1:
                self.on_due(ts + cfg.max_age)
            if prepared.schedule is not None and prepared.schedule.next_fire is not None:
                self.on_due(prepared.schedule.next_fire)
        if self.republish is not None:
            self._republish(seq, subject, hdr, payload, ts, previous_on_subject)
        for listener in self.listeners:
            listener(self, seq, subject, hdr, payload, ts)
        val = str(prepared.counter.total) if prepared.counter is not None else None
        return PubAck(stream=cfg.name, seq=seq, val=val)

    def publish(self, subject: str, hdr: bytes | None, payload: bytes, *,
                internal: bool = False) -> PubAck:
        now = self.clock()
        return self.apply(self.check(subject, hdr, payload, now, internal=internal), now)

    def publish_plain(self, subject: str, payload: bytes) -> bytes | None:
        """The most common publish in one step: a message without headers, into a stream
        that does nothing with it beyond storing it and telling its listeners (no subject
        transform, counters, retention, republish, schedules; the wall clock). Returns
        the PubAck JSON, exactly what ``publish(...).to_json()`` would; None when any of
        that applies or the message is too large, and the caller takes ``publish``."""
        cfg = self.config
        if (cfg.sealed or self.transform is not None or cfg.allow_msg_counter
                or self.retention is not None or self.republish is not None
                or self._schedules is not None or not self.wall_clock
                or 0 <= cfg.max_msg_size < len(payload)):
            return None
        store = self.store
        try:
            seq, ts = store.store_msg(subject, None, payload, 0)
        except StoreError as exc:
            raise api_errors.JSStreamStoreFailedF(err=str(exc)) from exc
        if self.dedupe_loaded:
            self.last_msg_id = ""
        if self.on_due is not None and cfg.max_age > 0 and store.msgs == 1:
            self.on_due(ts + cfg.max_age)
        for listener in self.listeners:
            listener(self, seq, subject, None, payload, ts)
        head = self._ack_head
        if head is None or head[0] != cfg.name:
            head = self._ack_head = (cfg.name, b'{"stream":' + msgspec.json.encode(cfg.name)
                                     + b',"seq":')
        return head[1] + str(seq).encode() + b"}"

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
        return PubAck(stream=self.config.name, seq=seq)

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
                      batch=batch_id, count=len(prepared))

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
