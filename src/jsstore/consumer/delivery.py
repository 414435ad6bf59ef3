"""What a delivery looks like, apart from any consumer's state: where a new consumer
starts (nats-server's ``selectStartingSeqNo``), where a reset may send one back to
(CONSUMER.RESET), the header block of a ``headers_only`` delivery, and the pin header of a
pinned client's delivery.

The delivery loop itself (``gather``, ``getNextMsg``, ``deliverMsg``) is the consumer's:
``jsstore.consumer.consumer.Consumer``.
"""

from __future__ import annotations

from typing import Callable

from jsstore.errors import StoreError

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

MAX_ACK_PENDING = "max ack pending reached"   # getNextMsg's stall (errMaxAckPending)
FIRST_HANDOVER = 8              # a run's first messages, handed to the bus on their own
LONG_RUN = 56                   # ... and written at once when at least this many follow
RUN = 1024                      # then runs of up to this many (Consumer._deliver_run)
RUN_ACK_POLICIES = ("explicit", "all")     # the ack policies runs record deliveries for


def starting_position(config, stream, filters: list[str],
                      time_ns: Callable[[str], int]) -> tuple[int, list[int] | None, int]:
    """selectStartingSeqNo: the stream sequence a new consumer starts at, and, for
    deliver_policy last_per_subject, the sequences to deliver first (None: none) and the
    sequence to carry on after once they are delivered.  `time_ns` reads opt_start_time
    (RFC 3339) as Unix ns."""
    store = stream.store
    state = store.fast_state()
    first, last = state.first_seq, state.last_seq
    start_seq = config.opt_start_seq or 0
    policy = config.deliver_policy or "all"
    last_per_subject, resume = None, 0
    if start_seq:
        seq = start_seq
    elif policy == "all":
        seq = first
    elif policy == "last":
        seq = last if not filters else max(
            [store.filtered_state(1, f).last for f in filters] + [0])
    elif policy == "last_per_subject":
        if (stream.config.max_msgs_per_subject or 0) == 1:
            seq = first
        else:
            seqs = store.multi_last_seqs(filters or [">"], 0, 0)
            resume = last
            last_per_subject = list(seqs) if seqs else None
            seq = seqs[0] if seqs else last
    elif config.opt_start_time:
        # a start time outside int64 nanoseconds (years past 2262 or before 1677) is
        # after (before) every message: clamped, it finds the same starting sequence
        start = max(_INT64_MIN, min(time_ns(config.opt_start_time), _INT64_MAX))
        seq = store.get_seq_from_time(start)
        if filters:
            nearest = last
            for f in filters:
                found = store.filtered_state(first, f).first
                if seq <= found < nearest:
                    nearest = found
            if seq < nearest < last:
                seq = nearest
    else:                                   # new
        seq = last + 1
    if first == 0 and not start_seq:
        seq = 1
    elif seq > last and not start_seq:
        seq = last + 1
    elif seq < first:
        seq = first
    return seq, last_per_subject, resume


def reset_refusal(config, store, seq: int, time_ns: Callable[[str], int]) -> str | None:
    """Why a consumer may not be reset to stream sequence `seq` (> 0), or None when it may
    (CONSUMER.RESET with a sequence, nats-server 2.14): only deliver policies all,
    by_start_sequence and by_start_time move to a sequence, never below their start — the
    first message at or after `seq`, whatever its subject, must not be older than
    opt_start_time (no message there: allowed)."""
    policy = config.deliver_policy or "all"
    if policy == "all":
        return None
    if policy == "by_start_sequence":
        return "below start seq" if seq < (config.opt_start_seq or 0) else None
    if policy == "by_start_time":
        try:
            msg, _ = store.load_next_msg(">", seq)
        except StoreError:
            return None
        start = time_ns(config.opt_start_time) if config.opt_start_time else 0
        return "below start time" if msg.ts < start else None
    return "not allowed"


def headers_only(hdr: bytes | None, payload: bytes) -> bytes:
    """The header block with the payload's size added as Nats-Msg-Size."""
    line = b"Nats-Msg-Size: " + str(len(payload)).encode() + b"\r\n\r\n"
    if not hdr:
        return b"NATS/1.0\r\n" + line
    return hdr[:-2] + line


def with_header(hdr: bytes | None, key: str, value: str) -> bytes:
    """hdr with `key: value` appended (genHeader)."""
    line = f"{key}: {value}\r\n\r\n".encode("utf-8", "surrogateescape")
    if not hdr:
        return b"NATS/1.0\r\n" + line
    return hdr[:-2] + line
