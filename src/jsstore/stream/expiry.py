"""Timed removal of a stream's messages: max_age, per-message TTLs, subject delete markers.

nats-server removes aged messages from a timer (the age check) and TTL'd ones from its
hash wheel; ``expire(stream, now)`` does both for one stream and returns the next time it
has something to do.

Subject delete markers (``subject_delete_marker_ttl``): when an expiry would remove the
only message left on a subject, an empty marker message is stored on that subject instead —
headers ``Nats-Marker-Reason: MaxAge``, ``Nats-TTL: <marker TTL as a Go duration>``,
``Nats-Rollup: sub`` — whose rollup removes the old message; the marker expires by its
own TTL later.  A message that is itself a marker (``Nats-Marker-Reason`` or
``KV-Operation: PURGE``) is just removed.  A message whose ``Nats-TTL`` is ``never``
outlives max_age.

The store's own fast max_age removal (at store time and in ``expire_msgs``) is used when
none of that applies; with markers or TTLs on a max_age stream the age walk runs here, and
the store is told not to remove by age itself.
"""

from __future__ import annotations

from jsstore.errors import StoreError
from jsstore.gocompat.durations import SECOND, format_go_duration
from jsstore.stream import checks as pubchecks
from jsstore.wire import headers as header_block
from jsstore.wire.apierrors import ApiError

MARKER_REASON = "Nats-Marker-Reason"
REASON_MAX_AGE = "MaxAge"
KV_OPERATION = "KV-Operation"
KV_PURGE = b"PURGE"


def marker_header(marker_ttl_seconds: int) -> bytes:
    """The header block of a subject delete marker."""
    return header_block.build([(MARKER_REASON, REASON_MAX_AGE),
                               (pubchecks.MSG_TTL, format_go_duration(marker_ttl_seconds * SECOND)),
                               (pubchecks.ROLLUP, pubchecks.ROLLUP_SUBJECT)])


def is_delete_marker(hdr: bytes | None) -> bool:
    """A subject delete marker, or a KV purge (which plays the same part)."""
    if not hdr:
        return False
    return (header_block.get(hdr, MARKER_REASON) is not None
            or header_block.get(hdr, KV_OPERATION) == KV_PURGE)


def marker_ttl(stream) -> int:
    """The stream's marker TTL in seconds (0: no markers)."""
    return stream.config.subject_delete_marker_ttl // SECOND


def expires_in_stream(config) -> bool:
    """Whether age expiry must walk messages here (markers, or TTL'd messages that may say
    "never") rather than in the store."""
    return config.max_age > 0 and (config.subject_delete_marker_ttl > 0 or bool(config.allow_msg_ttl))


def configure_store(stream) -> None:
    """Keep the store from removing by age, or TTL'd messages at store time, when the
    stream has to decide (markers, never-TTLs)."""
    store = stream.store
    if expires_in_stream(stream.config):
        store.max_age = 0
    store.defer_ttl_expiry = marker_ttl(stream) > 0


def _remove_or_mark(stream, msg, marker_seconds: int, *, via_limits: bool) -> int:
    store = stream.store
    if (marker_seconds > 0 and not is_delete_marker(msg.hdr)
            and store.filtered_state(0, msg.subject).msgs == 1):
        try:
            stream.publish(msg.subject, marker_header(marker_seconds), b"", internal=True)
            return 1            # the marker's rollup removed the message
        except ApiError:
            pass                # (a sealed stream, a full store): remove it plainly
    try:
        if via_limits:
            return int(store.remove_msg_via_limits(msg.seq))
        return int(store.remove_msg(msg.seq))
    except StoreError:
        return 0


def _never_expires(hdr: bytes | None) -> bool:
    if not hdr:
        return False
    try:
        return pubchecks.parse_msg_ttl(header_block.get(hdr, pubchecks.MSG_TTL)) < 0
    except ValueError:
        return False


def _expire_age(stream, now: int) -> int | None:
    """Walk the oldest messages while they are older than max_age; returns when the next
    one ages out (None when nothing will)."""
    store = stream.store
    max_age = stream.config.max_age
    cutoff = now - max_age
    marker_seconds = marker_ttl(stream)
    seq = store.first_seq
    while store.msgs and seq:
        try:
            msg, seq = store.load_next_msg(">", seq)
        except StoreError:
            return None
        if msg.ts > cutoff:
            return msg.ts + max_age
        if not _never_expires(msg.hdr):
            _remove_or_mark(stream, msg, marker_seconds, via_limits=True)
        seq += 1
    return None


def _expire_ttls(stream, now: int) -> None:
    store = stream.store
    marker_seconds = marker_ttl(stream)
    for seq in store.pop_due_ttls(now):
        try:
            msg = store.load_msg(seq)
        except StoreError:
            continue            # removed meanwhile
        _remove_or_mark(stream, msg, marker_seconds, via_limits=False)


def expire(stream, now: int) -> int | None:
    """Remove what has expired at `now`; the next time something will (Unix ns), or None."""
    store = stream.store
    config = stream.config
    next_due = None
    if config.max_age > 0:
        if expires_in_stream(config) or not stream.wall_clock:
            next_due = _expire_age(stream, now)
        else:
            store.expire_msgs()
            if store.msgs:
                next_due = store.first_ts + config.max_age
    if store.next_ttl_expiry <= now:
        _expire_ttls(stream, now)
    if len(store.ttls):
        ttl_due = store.next_ttl_expiry
        next_due = ttl_due if next_due is None else min(next_due, ttl_due)
    return next_due
