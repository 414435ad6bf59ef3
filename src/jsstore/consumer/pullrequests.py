"""Pull requests and the status messages around them, as nats-server 2.15 does them.

A pull request is a message to ``$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`` (or the
rest of a ``+NXT`` ack); its body, after Go's bytes.TrimSpace, is read by
``nextReqFromMsg``:

* empty: one message (``batch`` 1);
* starting with ``{``: a ``JSApiConsumerGetNextRequest`` through Go's encoding/json
  (``expires``, ``batch``, ``max_bytes``, ``no_wait``, ``idle_heartbeat`` and the embedded
  priority group's ``group``, ``min_pending``, ``min_ack_pending``, ``id``, ``priority``).
  Durations are integers of nanoseconds (``"1s"`` or ``1.5`` are type errors). Keys
  match case-insensitively by Unicode simple folding (``MAX_BYTES``, ``expireſ``; the
  underscores must be there), unknown keys are ignored, ``null`` leaves a field alone, a
  later duplicate wins, invalid UTF-8 and unpaired surrogates in strings become U+FFFD.
  A field left out is zero, so ``{"expires": ...}`` asks for a
  batch of 0, which nats-server serves as one message (the request ends after any
  delivery once its count is down to zero or below) while reporting the 0 in
  ``Nats-Pending-Messages``. An idle heartbeat more than half of ``expires`` (Go int64
  arithmetic, so a huge one wraps) is refused;
* anything else: Go's strconv.Atoi (``[+-]?[0-9]+`` within int64, so ``-5`` and ``0`` are
  batches too); a body Atoi refuses (``abc``, ``1.5``, ``1_000``) is a batch of 1, not an
  error.

A bad JSON body is answered ``400 Bad Request - <Go's error text>``. nats-server 2.15.1 is
built with Go 1.27, whose encoding/json runs on the v2 implementation: syntax is checked
over the whole body first (``invalid character 'x' after object key:value pair``,
``unexpected end of JSON input``, ``invalid escape sequence `\\x` in string``,
``exceeded max depth`` past 10000 levels), then types, where the first mismatch wins
(``json: cannot unmarshal string into Go struct field .batch of type int``: the struct
name is empty in that Go's text and the field is named as the body spells the key):
``jsstore.gocompat.json.unmarshal`` reproduces both.

`check_request` then runs the checks ``processNextMsgRequest`` makes against the consumer
configuration before queueing, in nats-server's order (the first failing one answers):

1. ``batch > max_batch`` (when max_batch > 0): 409 Exceeded MaxRequestBatch of <n>
2. ``expires > max_expires`` (both > 0): 409 Exceeded MaxRequestExpires of <Go duration>
3. ``max_bytes`` over the configured max_bytes (both > 0): 409 Exceeded MaxRequestMaxBytes of <n>
4. JSON bodies only (they always carry a priority group, possibly empty), any policy:
   a. ``min_pending`` or ``min_ack_pending`` set, policy not overflow:
      400 Bad Request - Not a Overflow Priority consumer
   b. ``id`` set, policy not pinned_client: 400 Bad Request - Not a Pinned Client Priority consumer
   c. ``priority`` outside 0..9: 400 Bad Request - Priority must be between 0 and 9
5. JSON bodies on a consumer with a priority policy:
   a. no ``group``: 400 Bad Request - Priority Group missing
   b. ``group`` not in priority_groups: 400 Bad Request - Invalid Priority Group
   c. a client is pinned and ``id`` is another one: 423 Nats-Pin-Id mismatch

Before those (`check_pull_request` runs the lot): a push consumer answers ``409 Consumer is
push based``, a ``Nats-Required-Api-Level`` above ours ``412 Required Api Level``, and a bad
body the 400 above. After them nats-server looks at its wait queue: `no_wait_status` (404
No Messages / 408 Requests Pending for no_wait requests) and ``409 Exceeded MaxWaiting``
(not sent to a request with an idle heartbeat) are the engine's, with the builders here.

nats-server compares ``expires`` as clock times (now + expires after now + max_expires), so
a request a nanosecond over the limit can pass while its clock reading ages; this module
compares the durations themselves.

Every status message nats-server sends to a pull request (or a push consumer's deliver
subject) is a header block built here, byte for byte.
"""

from __future__ import annotations

from typing import NamedTuple

from jsstore.gocompat import json as gojson
from jsstore.gocompat.durations import INT64_MAX, format_go_duration
from jsstore.gocompat.text import atoi, trim_space
from jsstore.wire.api import REQUIRED_API_LEVEL_STATUS, api_level_too_high

# -- status messages ------------------------------------------------------------------------
PENDING_MESSAGES = "Nats-Pending-Messages"     # JSPullRequestPendingMsgs
PENDING_BYTES = "Nats-Pending-Bytes"           # JSPullRequestPendingBytes
PIN_ID = "Nats-Pin-Id"                         # JSPullRequestNatsPinId (on pinned deliveries)
LAST_CONSUMER = "Nats-Last-Consumer"           # JSLastConsumerSeq
LAST_STREAM = "Nats-Last-Stream"               # JSLastStreamSeq
CONSUMER_STALLED = "Nats-Consumer-Stalled"     # JSConsumerStalled

NO_MESSAGES = b"NATS/1.0 404 No Messages\r\n\r\n"
REQUESTS_PENDING = b"NATS/1.0 408 Requests Pending\r\n\r\n"
EXCEEDED_MAX_WAITING = b"NATS/1.0 409 Exceeded MaxWaiting\r\n\r\n"
CONSUMER_IS_PUSH_BASED = b"NATS/1.0 409 Consumer is push based\r\n\r\n"
CONSUMER_DELETED = b"NATS/1.0 409 Consumer Deleted\r\n\r\n"
LEADERSHIP_CHANGE = b"NATS/1.0 409 Leadership Change\r\n\r\n"
REQUIRED_API_LEVEL = REQUIRED_API_LEVEL_STATUS
PIN_ID_MISMATCH = b"NATS/1.0 423 Nats-Pin-Id mismatch\r\n\r\n"
FLOW_CONTROL_REQUEST = b"NATS/1.0 100 FlowControl Request\r\n\r\n"

# the texts after "Bad Request - "
HEARTBEAT_TOO_LARGE = "heartbeat value too large"
NOT_OVERFLOW = "Not a Overflow Priority consumer"
NOT_PINNED = "Not a Pinned Client Priority consumer"
PRIORITY_RANGE = "Priority must be between 0 and 9"
GROUP_MISSING = "Priority Group missing"
GROUP_INVALID = "Invalid Priority Group"


def _pending(status: str, messages: int, size: int) -> bytes:
    """A status line with Nats-Pending-Messages and Nats-Pending-Bytes (%d each)."""
    return (f"NATS/1.0 {status}\r\n{PENDING_MESSAGES}: {messages}\r\n"
            f"{PENDING_BYTES}: {size}\r\n\r\n").encode()


def bad_request(error: str) -> bytes:
    """``400 Bad Request - <error>``: a body nats-server can not read, or a priority group
    it refuses."""
    return b"NATS/1.0 400 Bad Request - " + error.encode("utf-8", "surrogateescape") + b"\r\n\r\n"


def no_messages() -> bytes:
    """``404 No Messages``: a no_wait request with nothing to deliver."""
    return NO_MESSAGES


def requests_pending() -> bytes:
    """``408 Requests Pending``: a no_wait request while the waiting ones already want
    more than is pending."""
    return REQUESTS_PENDING


def request_timeout(messages: int, size: int) -> bytes:
    """``408 Request Timeout``: the request expired wanting `messages` more (up to `size`
    more bytes when it set max_bytes, else 0)."""
    return _pending("408 Request Timeout", messages, size)


def interest_expired(messages: int, size: int) -> bytes:
    """``408 Interest Expired``: a request that came through an account import lost its
    reader."""
    return _pending("408 Interest Expired", messages, size)


def exceeded_max_waiting() -> bytes:
    """``409 Exceeded MaxWaiting``: the wait queue is full (not sent when the request asked
    for idle heartbeats)."""
    return EXCEEDED_MAX_WAITING


def exceeded_max_request_batch(max_batch: int) -> bytes:
    """``409 Exceeded MaxRequestBatch of <max_batch>``."""
    return f"NATS/1.0 409 Exceeded MaxRequestBatch of {max_batch}\r\n\r\n".encode()


def exceeded_max_request_expires(max_expires_ns: int) -> bytes:
    """``409 Exceeded MaxRequestExpires of <max_expires as a Go duration>``."""
    return (f"NATS/1.0 409 Exceeded MaxRequestExpires of {format_go_duration(max_expires_ns)}"
            "\r\n\r\n").encode()


def exceeded_max_request_max_bytes(max_bytes: int) -> bytes:
    """``409 Exceeded MaxRequestMaxBytes of <max_bytes>``."""
    return f"NATS/1.0 409 Exceeded MaxRequestMaxBytes of {max_bytes}\r\n\r\n".encode()


def message_size_exceeds_max_bytes(messages: int, size: int) -> bytes:
    """``409 Message Size Exceeds MaxBytes``: the next message is bigger than what the
    request has left; the request ends."""
    return _pending("409 Message Size Exceeds MaxBytes", messages, size)


def batch_completed(messages: int, size: int) -> bytes:
    """``409 Batch Completed`` (JsPullRequestRemainingBytesT): the batch is done but the
    request had max_bytes left."""
    return _pending("409 Batch Completed", messages, size)


def consumer_is_push_based() -> bytes:
    """``409 Consumer is push based``: a pull request to a push consumer."""
    return CONSUMER_IS_PUSH_BASED


def consumer_deleted() -> bytes:
    """``409 Consumer Deleted``: sent to every waiting request when the consumer goes."""
    return CONSUMER_DELETED


def leadership_change() -> bytes:
    """``409 Leadership Change``: waiting requests of a replicated consumer whose leader
    changed."""
    return LEADERSHIP_CHANGE


def required_api_level() -> bytes:
    """``412 Required Api Level``: the request's Nats-Required-Api-Level is above ours."""
    return REQUIRED_API_LEVEL


def pin_id_mismatch() -> bytes:
    """``423 Nats-Pin-Id mismatch``: a request carrying an id other than the pinned one."""
    return PIN_ID_MISMATCH


def wrong_pin_id(messages: int, size: int) -> bytes:
    """``423 Nats-Wrong-Pin-Id``: a waiting request with a stale pin id, dropped."""
    return _pending("423 Nats-Wrong-Pin-Id", messages, size)


def idle_heartbeat(last_consumer_seq: int, last_stream_seq: int,
                   stalled: str | None = None) -> bytes:
    """``100 Idle Heartbeat`` with the last delivered consumer and stream sequences, and
    ``Nats-Consumer-Stalled: <flow control reply>`` while a flow control request is
    unanswered."""
    text = (f"NATS/1.0 100 Idle Heartbeat\r\n{LAST_CONSUMER}: {last_consumer_seq}\r\n"
            f"{LAST_STREAM}: {last_stream_seq}\r\n")
    if stalled:
        text += f"{CONSUMER_STALLED}: {stalled}\r\n"
    return (text + "\r\n").encode("utf-8", "surrogateescape")


def flow_control_request() -> bytes:
    """``100 FlowControl Request``: sent to a push consumer's deliver subject with the
    ``$JS.FC...`` reply the client answers."""
    return FLOW_CONTROL_REQUEST


# -- pull requests ----------------------------------------------------------------------------
# JSApiConsumerGetNextRequest with its embedded PriorityGroup, as Go decodes it
GET_NEXT_REQUEST = gojson.struct("server.JSApiConsumerGetNextRequest", {
    "expires": gojson.DURATION, "batch": gojson.INT, "max_bytes": gojson.INT,
    "no_wait": gojson.BOOL, "idle_heartbeat": gojson.DURATION, "group": gojson.STRING_TYPE,
    "min_pending": gojson.INT64, "min_ack_pending": gojson.INT64, "id": gojson.STRING_TYPE,
    "priority": gojson.INT})


class PullRequest(NamedTuple):
    """A decoded pull request (nextReqFromMsg). `group` is None for a body that is not JSON
    (nats-server then has no priority group at all) and the group name, possibly "",
    for a JSON one; durations are nanoseconds, 0 meaning none."""

    batch: int = 1                  # messages wanted; 0 or less is served as one
    expires: int = 0                # ns until the request expires (0: never; < 0: at once)
    max_bytes: int = 0              # byte budget over the messages sent (0: none)
    no_wait: bool = False           # answer 404/408 rather than wait when nothing is there
    idle_heartbeat: int = 0         # ns between heartbeats while waiting (0: none)
    group: str | None = None        # priority group ("" when the JSON names none)
    min_pending: int = 0            # overflow: serve only once num_pending reaches this
    min_ack_pending: int = 0        # overflow: ... or ack pending reaches this
    id: str = ""                    # pinned_client: the pin id the client holds
    priority: int = 0               # prioritized: 0 (first) .. 9


class PullRequestError(ValueError):
    """A pull request body nats-server refuses; `status` is the 400 it answers."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    @property
    def status(self) -> bytes:
        return bad_request(self.message)


ONE_MESSAGE = PullRequest()
_WRAP = 1 << 64


def _wrap64(value: int) -> int:
    """Go int64 arithmetic: wrap around."""
    value %= _WRAP
    return value - _WRAP if value > INT64_MAX else value


def parse_request(payload: bytes | None) -> PullRequest:
    """The pull request a body asks for, exactly as nats-server's nextReqFromMsg reads it
    (see the module notes); PullRequestError for a JSON body it answers 400 to."""
    body = trim_space(bytes(payload or b""))
    if not body:
        return ONE_MESSAGE
    if body[0] != 0x7B:
        batch = atoi(body)
        return ONE_MESSAGE if batch is None else PullRequest(batch=batch)
    try:
        values = gojson.unmarshal(body, GET_NEXT_REQUEST, struct_name="")
    except gojson.GoJSONError as error:
        raise PullRequestError(str(error)) from None
    heartbeat = values.get("idle_heartbeat", 0)
    expires = values.get("expires", 0)
    if heartbeat > 0 and _wrap64(heartbeat * 2) > expires:
        raise PullRequestError(HEARTBEAT_TOO_LARGE)
    return PullRequest(batch=values.get("batch", 0), expires=expires,
                       max_bytes=values.get("max_bytes", 0), no_wait=values.get("no_wait", False),
                       idle_heartbeat=heartbeat, group=values.get("group", ""),
                       min_pending=values.get("min_pending", 0),
                       min_ack_pending=values.get("min_ack_pending", 0),
                       id=values.get("id", ""), priority=values.get("priority", 0))


def _setting(config, name: str, default):
    value = getattr(config, name, default)
    return default if value is None else value


def check_request(config, request: PullRequest, *, pin_id: str = "") -> bytes | None:
    """The status nats-server answers a parsed request with before queueing it (None: it
    passes), running its checks in its order (module notes, steps 1-5). `config` is any
    object with max_batch, max_expires, max_bytes, priority_groups and priority_policy
    ("none", "overflow", "pinned_client", "prioritized"; None counts as "none");
    `pin_id` is the currently pinned client's id ("" when nothing is pinned)."""
    max_batch = _setting(config, "max_batch", 0)
    if max_batch > 0 and request.batch > max_batch:
        return exceeded_max_request_batch(max_batch)
    max_expires = _setting(config, "max_expires", 0)
    if request.expires and max_expires > 0 and request.expires > max_expires:
        return exceeded_max_request_expires(max_expires)
    max_bytes = _setting(config, "max_bytes", 0)
    if request.max_bytes > 0 and max_bytes > 0 and request.max_bytes > max_bytes:
        return exceeded_max_request_max_bytes(max_bytes)
    group = request.group
    if group is None:
        return None
    policy = _setting(config, "priority_policy", "none") or "none"
    if (request.min_pending or request.min_ack_pending) and policy != "overflow":
        return bad_request(NOT_OVERFLOW)
    if request.id and policy != "pinned_client":
        return bad_request(NOT_PINNED)
    if not 0 <= request.priority <= 9:
        return bad_request(PRIORITY_RANGE)
    if policy == "none":
        return None
    if not group:
        return bad_request(GROUP_MISSING)
    if group not in (_setting(config, "priority_groups", ()) or ()):
        return bad_request(GROUP_INVALID)
    if pin_id and request.id and request.id != pin_id:
        return pin_id_mismatch()
    return None


def renews_pin(config, request: PullRequest, pin_id: str) -> bool:
    """Whether the request carries the pinned id, which restarts the pin's timer in
    nats-server (after `check_request` passed)."""
    return (request.group is not None and bool(pin_id) and request.id == pin_id
            and (_setting(config, "priority_policy", "none") or "none") != "none")


def check_pull_request(config, payload: bytes | None, hdr: bytes | None = None, *,
                       pin_id: str = "") -> tuple[PullRequest | None, bytes | None]:
    """Everything nats-server answers a pull request with before queueing it, in order:
    409 Consumer is push based (config.deliver_subject set), 412 Required Api Level (the
    request's headers), 400 for a body it can not read, then `check_request`. Returns
    (the request, None) when it may be queued, else (None, the status to send)."""
    if _setting(config, "deliver_subject", ""):
        return None, CONSUMER_IS_PUSH_BASED
    if hdr and api_level_too_high(hdr):
        return None, REQUIRED_API_LEVEL
    try:
        request = parse_request(payload)
    except PullRequestError as error:
        return None, error.status
    status = check_request(config, request, pin_id=pin_id)
    if status is not None:
        return None, status
    return request, None


def no_wait_status(request: PullRequest, msgs_pending: int, batch_pending: int) -> bytes | None:
    """What nats-server answers a no_wait request with once it passed the checks:
    `msgs_pending` is the consumer's num_pending plus its redelivery queue, `batch_pending`
    what the requests already waiting still want. 404 No Messages when nothing is pending
    and the request has no expiry, 408 Requests Pending when the waiting requests already
    want more than is pending; None to queue it."""
    if not request.no_wait:
        return None
    if msgs_pending == 0 and request.expires == 0:
        return NO_MESSAGES
    if 0 < msgs_pending < batch_pending:
        return REQUESTS_PENDING
    return None


def queue_full_status(request: PullRequest) -> bytes | None:
    """The answer to a request that finds the wait queue full: 409 Exceeded MaxWaiting,
    except for a request with idle heartbeats (nats-server stays silent so the client
    waits for missed heartbeats instead of retrying at once)."""
    return None if request.idle_heartbeat else EXCEEDED_MAX_WAITING
