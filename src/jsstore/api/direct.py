"""DIRECT.GET: reading messages straight off a stream, answered with header blocks.

nats-server subscribes ``$JS.API.DIRECT.GET.<stream>`` (a JSON ``JSApiMsgGetRequest`` body)
and ``$JS.API.DIRECT.GET.<stream>.<subject>`` (the last message on that subject; the body may
only carry ``no_hdr`` and ``max_bytes``) for every stream with ``allow_direct``.  A stream
without ``allow_direct`` has no such subscription: nothing answers (a NATS client sees
"no responders").  ``direct_get`` computes every message nats-server 2.15 sends to the reply
subject, in order, as ``(header block, payload)`` pairs; ``b""`` as the header block means
the message carries no headers (``no_hdr``).

Answers:

* one message: its stored headers (or a fresh ``NATS/1.0`` block) followed by
  ``Nats-Stream``, ``Nats-Subject``, ``Nats-Sequence`` and ``Nats-Time-Stamp`` (Go's
  RFC3339Nano in UTC), appended as nats-server's genHeader does (duplicates are kept);
* a batch (``batch`` set): each message also carries ``Nats-Num-Pending`` (what is left
  after it) and ``Nats-Last-Sequence`` (the previous sequence sent, 0 first), and the batch
  ends with ``NATS/1.0 204 EOB``; with ``no_hdr`` the payloads go bare and the pending count
  is not decremented (nats-server's behaviour);
* ``multi_last``: the last message of every matching subject up to ``up_to_seq`` (or up to
  ``up_to_time``), always with headers, ending with an EOB that also has
  ``Nats-UpTo-Sequence``;
* status blocks: ``404 Message Not Found``, ``404 No Results``, ``408 Empty Request``,
  ``408 Malformed Request``, ``408 Bad Request``, ``412 Required Api Level``,
  ``413 Too Many Results``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jsstore.api import requests
from jsstore.errors import StoreError, TooManyResults
from jsstore.gocompat import json as gojson
from jsstore.gocompat.times import rfc3339_nano
from jsstore.wire.api import REQUIRED_API_LEVEL_STATUS, api_level_too_high

CRLF = b"\r\n"
NO_HEADERS = b""
# nats-server's default MaxPending: the max_bytes of a request that sets none.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# The most subjects one multi_last request may match.
MAX_MULTI_RESULTS = 1024

EMPTY_REQUEST = b"NATS/1.0 408 Empty Request\r\n\r\n"
MALFORMED_REQUEST = b"NATS/1.0 408 Malformed Request\r\n\r\n"
BAD_REQUEST = b"NATS/1.0 408 Bad Request\r\n\r\n"
NOT_FOUND = b"NATS/1.0 404 Message Not Found\r\n\r\n"
NO_RESULTS = b"NATS/1.0 404 No Results\r\n\r\n"
TOO_MANY_RESULTS = b"NATS/1.0 413 Too Many Results\r\n\r\n"
REQUIRED_API_LEVEL = REQUIRED_API_LEVEL_STATUS

_INT64_MAX = (1 << 63) - 1


class MalformedRequest(ValueError):
    """The body is not a JSON object nats-server can decode into a JSApiMsgGetRequest."""


@dataclass(slots=True)
class DirectGetRequest:
    """nats-server's JSApiMsgGetRequest; times are Unix ns, None when not given."""

    seq: int = 0
    last_by_subj: str = ""
    next_by_subj: str = ""
    batch: int = 0
    max_bytes: int = 0
    start_time: int | None = None
    multi_last: list[str] = field(default_factory=list)
    up_to_seq: int = 0
    up_to_time: int | None = None
    no_hdr: bool = False


def parse_request(payload: bytes) -> DirectGetRequest:
    """Decode a request body the way Go's json.Unmarshal fills a JSApiMsgGetRequest
    (`jsstore.api.requests.MSG_GET`): unknown keys ignored, ``null`` leaving a field
    unset, a repeated key keeping its last value. Raises MalformedRequest."""
    try:
        fields = gojson.unmarshal(payload, requests.MSG_GET)
    except gojson.GoJSONError as exc:
        raise MalformedRequest(str(exc)) from None
    return DirectGetRequest(**requests.without_nils(fields))


def _is_empty(request: DirectGetRequest) -> bool:
    return (request.seq == 0 and not request.last_by_subj and not request.next_by_subj
            and not request.multi_last and request.start_time is None)


def _has_conflict(request: DirectGetRequest) -> bool:
    last, nxt, multi = bool(request.last_by_subj), bool(request.next_by_subj), bool(request.multi_last)
    return ((request.seq > 0 and last) or (request.seq > 0 and request.start_time is not None)
            or (request.start_time is not None and last) or (last and nxt)
            or (last and request.batch > 0) or (last and multi) or (nxt and multi)
            or (request.up_to_seq > 0 and request.up_to_time is not None))


def _only_output_options(request: DirectGetRequest) -> bool:
    """Whether a last-by-subject request body sets nothing but no_hdr and max_bytes."""
    return request == DirectGetRequest(max_bytes=request.max_bytes, no_hdr=request.no_hdr)


def _message_header(stored, stream_name: str, extra: tuple[tuple[str, int], ...] = ()) -> bytes:
    """The stored header block (or a fresh one) with the Nats-* fields appended."""
    lines = [b"Nats-Stream: ", stream_name.encode(), CRLF,
             b"Nats-Subject: ", stored.subject.encode("utf-8", "surrogateescape"), CRLF,
             b"Nats-Sequence: ", str(stored.seq).encode(), CRLF,
             b"Nats-Time-Stamp: ", rfc3339_nano(stored.ts).encode(), CRLF]
    for key, value in extra:
        lines += (key.encode(), b": ", str(value).encode(), CRLF)
    lines.append(CRLF)
    hdr = stored.hdr
    # genHeader: everything but the block's final CRLF, then the new line(s), then CRLF.
    start = bytes(hdr[:-2]) if hdr and len(hdr) > 2 else b"NATS/1.0\r\n"
    return start + b"".join(lines)


def _end_of_batch(pending: int, last_seq: int, up_to_seq: int | None = None) -> bytes:
    text = f"NATS/1.0 204 EOB\r\nNats-Num-Pending: {pending}\r\nNats-Last-Sequence: {last_seq}\r\n"
    if up_to_seq is not None:
        text += f"Nats-UpTo-Sequence: {up_to_seq}\r\n"
    return (text + "\r\n").encode()


def _stored_size(stored) -> int:
    """What nats-server counts against max_bytes: subject, stored headers and payload."""
    return len(stored.subject) + (len(stored.hdr) if stored.hdr else 0) + len(stored.msg)


def _num_pending(store, seq: int, filter: str) -> tuple[int, int]:
    try:
        return store.num_pending(seq, filter, False)
    except (StoreError, ValueError):
        return 0, 0


def _get_multi(store, stream_name: str, request: DirectGetRequest) -> list[tuple[bytes, bytes]]:
    max_bytes = request.max_bytes or DEFAULT_MAX_BYTES
    up_to_seq = request.up_to_seq
    if request.up_to_time is not None:
        up_to_seq = store.get_seq_from_time(max(0, min(request.up_to_time, _INT64_MAX)))
        # A time at or before the first message would select nothing before it.
        if up_to_seq <= store.fast_state().first_seq:
            return [(NO_RESULTS, b"")]
        up_to_seq -= 1
    if up_to_seq == 0:
        up_to_seq = store.fast_state().last_seq
    try:
        seqs = sorted(set(store.multi_last_seqs(request.multi_last, up_to_seq, MAX_MULTI_RESULTS)))
    except TooManyResults:
        return [(TOO_MANY_RESULTS, b"")]
    except (StoreError, ValueError) as exc:
        return [(f"NATS/1.0 500 {exc}\r\n\r\n".encode(), b"")]
    if not seqs:
        return [(NO_RESULTS, b"")]
    replies: list[tuple[bytes, bytes]] = []
    pending, last_seq, sent_bytes, sent = len(seqs), 0, 0, 0
    for seq in seqs:
        if seq < request.seq:
            pending = max(pending - 1, 0)
            continue
        try:
            stored = store.load_msg(seq)
        except (StoreError, ValueError):
            replies.append((NOT_FOUND, b""))
            return replies
        pending = max(pending - 1, 0)
        replies.append((_message_header(stored, stream_name, (("Nats-Num-Pending", pending),
                                                              ("Nats-Last-Sequence", last_seq))),
                        bytes(stored.msg)))
        last_seq = stored.seq
        sent_bytes += _stored_size(stored)
        if sent_bytes >= max_bytes:
            break
        sent += 1
        if 0 < request.batch <= sent:
            break
    replies.append((_end_of_batch(pending, last_seq, up_to_seq), b""))
    return replies


def _get(store, stream_name: str, request: DirectGetRequest) -> list[tuple[bytes, bytes]]:
    if request.multi_last:
        return _get_multi(store, stream_name, request)
    if request.start_time is not None:
        seq = store.get_seq_from_time(max(0, min(request.start_time, _INT64_MAX)))
    else:
        seq = request.seq
    is_batch = request.batch != 0
    batch = request.batch if is_batch else 1
    pending = valid_through = 0
    if is_batch:
        pending, valid_through = _num_pending(store, seq, request.next_by_subj)
    max_bytes = request.max_bytes or DEFAULT_MAX_BYTES
    replies: list[tuple[bytes, bytes]] = []
    last_seq = sent_bytes = 0
    for index in range(batch):
        try:
            if seq > 0 and not request.next_by_subj:
                # A single get wants seq itself; a batch steps over deleted sequences.
                stored = store.load_next_msg(">", seq)[0] if is_batch else store.load_msg(seq)
                seq = stored.seq + 1
            elif request.next_by_subj:
                stored, found = store.load_next_msg(request.next_by_subj, seq)
                seq = found + 1
            else:
                stored = store.load_last_msg(request.last_by_subj)
        except (StoreError, ValueError):
            if batch > 1 and index > 0:
                break
            return [(NOT_FOUND, b"")]
        if request.no_hdr:
            hdr = NO_HEADERS
        elif is_batch:
            pending = max(pending - 1, 0)
            hdr = _message_header(stored, stream_name, (("Nats-Num-Pending", pending),
                                                        ("Nats-Last-Sequence", last_seq)))
        else:
            hdr = _message_header(stored, stream_name)
        replies.append((hdr, bytes(stored.msg)))
        last_seq = stored.seq
        sent_bytes += _stored_size(stored)
        if sent_bytes >= max_bytes:
            break
    if is_batch:
        # Messages stored meanwhile change what is left.
        if store.fast_state().last_seq > valid_through:
            pending, _ = _num_pending(store, seq, request.next_by_subj)
        replies.append((_end_of_batch(pending, last_seq), b""))
    return replies


def direct_get(store, stream_name: str, subject_suffix: str | None, hdr: bytes | None,
               payload: bytes, *, now: int) -> list[tuple[bytes, bytes]]:
    """The messages nats-server sends to the reply subject of a DIRECT.GET request.

    ``subject_suffix`` is None for ``$JS.API.DIRECT.GET.<stream>`` and the subject tokens
    after the stream name for ``$JS.API.DIRECT.GET.<stream>.<subject>``; ``hdr`` and
    ``payload`` are the request's header block and body. Take the stream's lock around
    the call. ``now`` (Unix ns) is the caller's clock; every answer depends only on the
    store and the request, as in nats-server, so it is accepted for the routing contract
    and not consulted.
    """
    if api_level_too_high(hdr):
        return [(REQUIRED_API_LEVEL, b"")]
    if subject_suffix is None:
        if not payload:
            return [(EMPTY_REQUEST, b"")]
        try:
            request = parse_request(payload)
        except MalformedRequest:
            return [(MALFORMED_REQUEST, b"")]
        if _is_empty(request):
            return [(EMPTY_REQUEST, b"")]
        if _has_conflict(request):
            return [(BAD_REQUEST, b"")]
    else:
        request = DirectGetRequest()
        if payload:
            try:
                request = parse_request(payload)
            except MalformedRequest:
                return [(MALFORMED_REQUEST, b"")]
            if not _only_output_options(request):
                return [(BAD_REQUEST, b"")]
        if not subject_suffix:
            return [(BAD_REQUEST, b"")]
        request.last_by_subj = subject_suffix
    return _get(store, stream_name, request)
