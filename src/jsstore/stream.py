"""One open stream: its configuration, its store and nats-server's publish path.

A publish runs in two steps, as nats-server's does: ``check`` runs every check that can
reject the message, in nats-server's order, and returns a ``Prepared`` message; ``apply``
stores it and does what follows a store (the Msg-Id record, the rollup purge, the
republish, the listeners).  An atomic batch checks all its messages before applying any.

Time comes from the owner's clock (Unix ns).  With the wall clock the store stamps the
message itself; with another clock (tests) the message is stored with that clock's time.
"""

from __future__ import annotations

from typing import Callable

import msgspec

from jsstore import headers as header_block
from jsstore import pubchecks
from jsstore.api import errors as api_errors
from jsstore.consumerstore import rfc3339_nano
from jsstore.errors import StoreError
from jsstore.streamconfig import StreamConfig

NANOS_PER_SECOND = 1_000_000_000
# headers nats-server adds to a republished message, in its order
RP_STREAM, RP_SUBJECT, RP_SEQUENCE = "Nats-Stream", "Nats-Subject", "Nats-Sequence"
RP_TIME_STAMP, RP_LAST_SEQUENCE, RP_MSG_SIZE = "Nats-Time-Stamp", "Nats-Last-Sequence", "Nats-Msg-Size"


class PubAck(msgspec.Struct, omit_defaults=True):
    """The answer to a stored publish: the stream and the message's sequence."""
    stream: str
    seq: int
    duplicate: bool = False        # a Nats-Msg-Id seen inside the window: seq is the original
    domain: str | None = None      # the JetStream domain, when one is configured

    def to_json(self) -> bytes:
        """The PubAck as nats-server writes it (its duplicate form has a space after the
        colon)."""
        head = b'{"stream":' + msgspec.json.encode(self.stream)
        if self.domain:
            head += b',"domain":' + msgspec.json.encode(self.domain)
        head += b',"seq":' + str(self.seq).encode()
        if self.duplicate:
            return head + b',"duplicate": true}'
        return head + b"}"


def pub_error_json(stream: str, error: api_errors.ApiError) -> bytes:
    """A rejected publish's answer: the error, then the stream with sequence 0."""
    return (b'{"error":' + msgspec.json.encode(error.to_dict()) + b',"stream":'
            + msgspec.json.encode(stream) + b',"seq":0}')


class Prepared:
    """A message that passed the publish checks, ready to store."""
    __slots__ = ("subject", "hdr", "payload", "ttl", "msg_id", "rollup", "duplicate_seq")

    def __init__(self, subject: str, hdr: bytes | None, payload: bytes, ttl: int = 0,
                 msg_id: str = "", rollup: str | None = None, duplicate_seq: int | None = None):
        self.subject = subject
        self.hdr = hdr                  # the header block to store (a raised TTL rewritten)
        self.payload = payload
        self.ttl = ttl                  # seconds; 0 none, -1 never
        self.msg_id = msg_id            # Nats-Msg-Id ("" none)
        self.rollup = rollup            # None, "sub" or "all"
        self.duplicate_seq = duplicate_seq  # set: answer duplicate, store nothing


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
        self._configure_republish()

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
        self._configure_republish()

    def _configure_republish(self) -> None:
        rp = self.config.republish
        if rp is None or not rp.dest:
            self.republish = None
            return
        from jsstore.subjtransform import SubjectTransform
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

    # -- the publish path ---------------------------------------------------------------
    def last_seq_for_subject(self, subject: str) -> int:
        """The last sequence stored on a subject (0 when it has none)."""
        try:
            return self.store.load_last_msg(subject).seq
        except (StoreError, ValueError):
            return 0

    def check(self, subject: str, hdr: bytes | None, payload: bytes, now: int) -> Prepared:
        """nats-server's checks of one publish, in its order: sealed; the header checks
        (Expected-Stream, TTL allowed, Expected-Last-(Subject-)Sequence, Msg-Id dedupe,
        Expected-Last-Msg-Id, Rollup); sizes; the TTL. Raises the ApiError it fails with."""
        cfg = self.config
        if cfg.sealed:
            raise api_errors.JSStreamSealedErr()
        if not hdr:
            pubchecks.check_sizes(0, len(payload), cfg.max_msg_size)
            return Prepared(subject, None, payload)
        if not self.dedupe_loaded:
            self.load_dedupe(now)
        checks = pubchecks.check_headers(
            hdr, subject=subject, stream_name=cfg.name, last_seq=self.store.last_seq,
            last_msg_id=self.last_msg_id, last_seq_for_subject=self.last_seq_for_subject,
            dedupe=self.dedupe, now=now, allow_msg_ttl=bool(cfg.allow_msg_ttl),
            allow_rollup_hdrs=bool(cfg.allow_rollup_hdrs), deny_purge=bool(cfg.deny_purge),
            mirror=cfg.mirror is not None)
        if checks.duplicate_seq is not None:
            return Prepared(subject, hdr, payload, msg_id=checks.msg_id,
                            duplicate_seq=checks.duplicate_seq)
        pubchecks.check_sizes(len(hdr), len(payload), cfg.max_msg_size)
        sdm_ttl = cfg.subject_delete_marker_ttl // NANOS_PER_SECOND
        ttl = pubchecks.msg_ttl(hdr, bool(cfg.allow_msg_ttl), sdm_ttl, cfg.max_msgs_per_subject)
        if ttl > 0 and sdm_ttl > 0 and ttl == sdm_ttl:
            # a TTL raised to the marker TTL is written back into the header, in seconds
            given = pubchecks.parse_msg_ttl(header_block.get(hdr, pubchecks.MSG_TTL))
            if given != ttl:
                hdr = header_block.set_header(hdr, pubchecks.MSG_TTL, str(ttl))
        return Prepared(subject, hdr, payload, ttl, checks.msg_id, checks.rollup)

    def apply(self, prepared: Prepared, now: int) -> PubAck:
        """Store a checked message and do what follows: record its Msg-Id, roll up,
        republish, tell the listeners."""
        cfg = self.config
        if prepared.duplicate_seq is not None:
            return PubAck(stream=cfg.name, seq=prepared.duplicate_seq, duplicate=True)
        store = self.store
        subject, hdr, payload = prepared.subject, prepared.hdr, prepared.payload
        previous_on_subject = self.last_seq_for_subject(subject) if self.republish else 0
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
        if self.republish is not None:
            self._republish(seq, subject, hdr, payload, ts, previous_on_subject)
        for listener in self.listeners:
            listener(self, seq, subject, hdr, payload, ts)
        return PubAck(stream=cfg.name, seq=seq)

    def publish(self, subject: str, hdr: bytes | None, payload: bytes) -> PubAck:
        now = self.clock()
        return self.apply(self.check(subject, hdr, payload, now), now)

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
