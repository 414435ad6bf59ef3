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
name is empty in that Go's text and the field is named as the body spells the key). This
module reproduces both.

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

import json
import unicodedata
from typing import NamedTuple

from jsstore.wire.api import api_level_too_high
from jsstore.gocompat.durations import INT64_MAX, INT64_MIN, format_go_duration

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
REQUIRED_API_LEVEL = b"NATS/1.0 412 Required Api Level\r\n\r\n"
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


# -- Go text helpers ------------------------------------------------------------------------
_ASCII_SPACE = b" \t\n\v\f\r"
# unicode.IsSpace outside ASCII, UTF-8 encoded: U+0085, U+00A0 (2 bytes), the rest 3 bytes
_SPACES_2 = frozenset(chr(c).encode() for c in (0x85, 0xA0))
_SPACES_3 = frozenset(chr(c).encode() for c in (0x1680, *range(0x2000, 0x200B), 0x2028,
                                                 0x2029, 0x202F, 0x205F, 0x3000))
_UNICODE_SPACE_STARTS = (b"\xc2", b"\xe1", b"\xe2", b"\xe3")


def go_trim_space(data: bytes) -> bytes:
    """Go's bytes.TrimSpace: ASCII white space and the Unicode spaces (U+0085, U+00A0,
    U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) off both ends; bytes
    that are not valid UTF-8 are never spaces."""
    data = data.strip(_ASCII_SPACE)
    while data[:1] >= b"\x80" and data.startswith(_UNICODE_SPACE_STARTS):
        if data[:2] in _SPACES_2:
            data = data[2:].lstrip(_ASCII_SPACE)
        elif data[:3] in _SPACES_3:
            data = data[3:].lstrip(_ASCII_SPACE)
        else:
            break
    while data[-1:] >= b"\x80":
        if data[-2:] in _SPACES_2:
            data = data[:-2].rstrip(_ASCII_SPACE)
        elif data[-3:] in _SPACES_3:
            data = data[:-3].rstrip(_ASCII_SPACE)
        else:
            break
    return data


def go_atoi(data: bytes) -> int | None:
    """Go's strconv.Atoi on a 64-bit platform: ``[+-]?[0-9]+`` within int64, else None."""
    digits = data[1:] if data[:1] in (b"+", b"-") else data
    if not digits or not digits.isdigit():
        return None
    value = int(data)
    return value if INT64_MIN <= value <= INT64_MAX else None


def _go_is_print(cp: int) -> bool:
    """strconv.IsPrint: letters, marks, numbers, punctuation, symbols and ASCII space."""
    if cp <= 0xFF:
        return 0x20 <= cp <= 0x7E or (0xA1 <= cp <= 0xFF and cp != 0xAD)
    return unicodedata.category(chr(cp))[0] in "LMNPS"


def _go_is_space(cp: int) -> bool:
    """unicode.IsSpace."""
    return (cp in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029,
                   0x202F, 0x205F, 0x3000) or 0x2000 <= cp <= 0x200A)


_RUNE_ESCAPES = {0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t",
                 0x0B: "\\v"}


def _escape_rune(char: str, quote: str) -> str:
    """strconv's appendEscapedRune (not ASCII-only) for one character."""
    if char == quote or char == "\\":
        return "\\" + char
    cp = ord(char)
    if _go_is_print(cp):
        return char
    escape = _RUNE_ESCAPES.get(cp)
    if escape is not None:
        return escape
    if cp < 0x20 or cp == 0x7F:
        return f"\\x{cp:02x}"
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def _is_escaped_byte(char: str) -> bool:
    """Whether a character decoded with surrogateescape stands for an invalid byte."""
    return "\udc80" <= char <= "\udcff"


def go_quote(data: bytes) -> str:
    """strconv.Quote of the bytes: double quotes, Go escapes, ``\\xNN`` for invalid UTF-8."""
    out = ['"']
    for char in data.decode("utf-8", "surrogateescape"):
        if _is_escaped_byte(char):
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        else:
            out.append(_escape_rune(char, '"'))
    out.append('"')
    return "".join(out)


def go_quote_rune(data: bytes, pos: int) -> str:
    """jsonwire's QuoteRune of the character at `pos`: strconv.QuoteRune of the rune, or
    ``'\\xNN'`` for a byte that does not start valid UTF-8."""
    char = data[pos:pos + 4].decode("utf-8", "surrogateescape")[0]
    if _is_escaped_byte(char):
        return f"'\\x{ord(char) - 0xDC00:x}'"
    return "'" + _escape_rune(char, "'") + "'"


def go_text(data: bytes) -> str:
    """Bytes as Go turns a string into text (JSON-encodes or prints it): valid UTF-8 as
    it is, every byte that is not part of a valid sequence as U+FFFD."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return "".join("\ufffd" if _is_escaped_byte(char) else char
                       for char in data.decode("utf-8", "surrogateescape"))


def _go_string(text: str) -> str:
    """A decoded JSON string as Go keeps it: invalid UTF-8 bytes and unpaired UTF-16
    surrogates become U+FFFD."""
    if text.isascii():
        return text
    return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)


# -- Go's encoding/json (the v1 API on the v2 implementation of Go 1.27) --------------------
MAX_NESTING_DEPTH = 10000


class GoJSONError(ValueError):
    """A JSON body Go's encoding/json refuses; the message is Go's error text."""


_EOF = "unexpected end of JSON input"
_WHITESPACE = b" \t\r\n"
_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")
_DIGIT_BYTES = frozenset(b"0123456789")
_SIMPLE_ESCAPES = frozenset(b'"\\/bfnrt')
_ESCAPE_VALUES = {ord('"'): '"', ord("\\"): "\\", ord("/"): "/", ord("b"): "\b",
                  ord("f"): "\f", ord("n"): "\n", ord("r"): "\r", ord("t"): "\t"}
_LITERALS = {ord("t"): (b"true", True), ord("f"): (b"false", False), ord("n"): (b"null", None)}

# the kinds of a member's value, as UnmarshalTypeError names them
STRING, NUMBER, BOOL, NULL, OBJECT, ARRAY = "string", "number", "bool", "null", "object", "array"


class _Number(str):
    """A JSON number's literal text (kept so errors can quote it as Go does)."""

    __slots__ = ()


class _Object(list):
    """A JSON object as its (name, value) pairs, in order, duplicates kept."""

    __slots__ = ()


def _invalid_character(data: bytes, pos: int, where: str) -> GoJSONError:
    return GoJSONError(f"invalid character {go_quote_rune(data, pos)} {where}")


def _invalid_escape(sequence: bytes) -> GoJSONError:
    """jsonwire's NewInvalidEscapeSequenceError (never a surrogate pair in v1 mode)."""
    text = sequence.decode("utf-8", "surrogateescape")
    if any(char == "`" or char == "\ufffd" or _is_escaped_byte(char) or _go_is_space(ord(char))
           or not _go_is_print(ord(char)) for char in text):
        return GoJSONError(f"invalid escape sequence {go_quote(sequence)} in string")
    return GoJSONError(f"invalid escape sequence `{text}` in string")


def _has_escaped_utf16_prefix(rest: bytes) -> bool:
    """Whether `rest` could be a truncated ``\\uXXXX`` (the input simply ended)."""
    for index, byte in enumerate(rest[:6]):
        if index == 0 and byte != 0x5C:
            return False
        if index == 1 and byte != 0x75:
            return False
        if index >= 2 and byte not in _HEX_DIGITS:
            return False
    return True


def _skip_whitespace(data: bytes, pos: int) -> int:
    end = len(data)
    while pos < end and data[pos] in _WHITESPACE:
        pos += 1
    return pos


def _scan_string(data: bytes, pos: int) -> tuple[int, str]:
    """A string starting at data[pos] (a quote): (the position after it, its value as Go
    unquotes it). GoJSONError as jsonwire's ConsumeString reports."""
    end = len(data)
    pos += 1
    parts: list[str] = []
    run = pos
    while True:
        while pos < end and 0x20 <= data[pos] < 0x80 and data[pos] not in (0x22, 0x5C):
            pos += 1
        if pos >= end:
            raise GoJSONError(_EOF)
        byte = data[pos]
        if byte == 0x22:
            parts.append(data[run:pos].decode("utf-8", "surrogateescape"))
            return pos + 1, _go_string("".join(parts))
        if byte >= 0x80:
            pos += 1                 # any byte of a (valid or not) sequence is allowed
            continue
        if byte < 0x20:
            raise _invalid_character(data, pos, "in string")
        # an escape sequence
        parts.append(data[run:pos].decode("utf-8", "surrogateescape"))
        if pos + 2 > end:
            raise GoJSONError(_EOF)
        kind = data[pos + 1]
        if kind in _SIMPLE_ESCAPES:
            parts.append(_ESCAPE_VALUES[kind])
            pos += 2
        elif kind == 0x75:
            if pos + 6 > end:
                if _has_escaped_utf16_prefix(data[pos:]):
                    raise GoJSONError(_EOF)
                raise _invalid_escape(data[pos:])
            digits = data[pos + 2:pos + 6]
            if not all(digit in _HEX_DIGITS for digit in digits):
                raise _invalid_escape(data[pos:pos + 6])
            code = int(digits, 16)
            pos += 6
            if 0xD800 <= code < 0xDC00 and data[pos:pos + 2] == b"\\u":
                low_digits = data[pos + 2:pos + 6]
                if len(low_digits) == 4 and all(d in _HEX_DIGITS for d in low_digits):
                    low = int(low_digits, 16)
                    if 0xDC00 <= low < 0xE000:
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        pos += 6
            parts.append("\ufffd" if 0xD800 <= code < 0xE000 else chr(code))
        else:
            raise _invalid_escape(data[pos:pos + 2])
        run = pos


def _scan_number(data: bytes, pos: int) -> int:
    """The end of the number starting at data[pos] (jsonwire's ConsumeNumber)."""
    end = len(data)
    if data[pos] == 0x2D:
        pos += 1
    if pos >= end:
        raise GoJSONError(_EOF)
    if data[pos] == 0x30:
        pos += 1
    elif 0x31 <= data[pos] <= 0x39:
        pos += 1
        while pos < end and data[pos] in _DIGIT_BYTES:
            pos += 1
    else:
        raise _invalid_character(data, pos, "in numeric literal")
    if pos < end and data[pos] == 0x2E:
        pos += 1
        if pos >= end:
            raise GoJSONError(_EOF)
        if data[pos] not in _DIGIT_BYTES:
            raise _invalid_character(data, pos, "in numeric literal")
        while pos < end and data[pos] in _DIGIT_BYTES:
            pos += 1
    if pos < end and data[pos] in (0x65, 0x45):
        pos += 1
        if pos < end and data[pos] in (0x2B, 0x2D):
            pos += 1
        if pos >= end:
            raise GoJSONError(_EOF)
        if data[pos] not in _DIGIT_BYTES:
            raise _invalid_character(data, pos, "in numeric literal")
        while pos < end and data[pos] in _DIGIT_BYTES:
            pos += 1
    return pos


def _scan_literal(data: bytes, pos: int) -> tuple[int, bool | None]:
    """true, false or null at data[pos] (jsonwire's ConsumeLiteral)."""
    literal, value = _LITERALS[data[pos]]
    for index, expected in enumerate(literal):
        if pos + index >= len(data):
            raise GoJSONError(_EOF)
        if data[pos + index] != expected:
            raise _invalid_character(
                data, pos + index,
                f"in literal {literal.decode()} (expecting '{chr(expected)}')")
    return pos + len(literal), value


_VALUE, _NAME, _AFTER = 0, 1, 2


def scan_json(data: bytes) -> list | None:
    """Go's syntax check of a whole JSON text, with its error texts (GoJSONError).
    Returns the members of a top-level object as (name, kind, value) triples in order
    (kind STRING/NUMBER/BOOL/NULL with the string, number literal, bool or None; OBJECT or
    ARRAY with None), or None when the top-level value is not an object.

    Iterative, so nesting up to Go's limit of 10000 levels works."""
    end = len(data)
    stack: list[bool] = []          # True for an object, False for an array
    members: list | None = None
    name = ""
    state, pos = _VALUE, 0
    while True:
        if state == _VALUE:
            pos = _skip_whitespace(data, pos)
            if pos >= end:
                raise GoJSONError(_EOF)
            byte = data[pos]
            member = len(stack) == 1 and stack[0]
            if byte == 0x7B or byte == 0x5B:
                if len(stack) + 1 > MAX_NESTING_DEPTH:
                    raise GoJSONError("exceeded max depth")
                is_object = byte == 0x7B
                if not stack and is_object:
                    members = []
                elif member:
                    members.append((name, OBJECT if is_object else ARRAY, None))
                pos = _skip_whitespace(data, pos + 1)
                if pos >= end:
                    raise GoJSONError(_EOF)
                if data[pos] == (0x7D if is_object else 0x5D):
                    pos += 1
                    state = _AFTER
                else:
                    stack.append(is_object)
                    state = _NAME if is_object else _VALUE
                continue
            if byte == 0x22:
                pos, text = _scan_string(data, pos)
                if member:
                    members.append((name, STRING, text))
            elif byte == 0x2D or 0x30 <= byte <= 0x39:
                start = pos
                pos = _scan_number(data, pos)
                if member:
                    members.append((name, NUMBER, data[start:pos].decode()))
            elif byte in _LITERALS:
                pos, value = _scan_literal(data, pos)
                if member:
                    members.append((name, NULL if value is None else BOOL, value))
            else:
                raise _invalid_character(data, pos, "looking for beginning of value")
            state = _AFTER
        elif state == _NAME:
            pos = _skip_whitespace(data, pos)
            if pos >= end:
                raise GoJSONError(_EOF)
            if data[pos] != 0x22:
                raise _invalid_character(data, pos, "looking for beginning of object key string")
            pos, name = _scan_string(data, pos)
            pos = _skip_whitespace(data, pos)
            if pos >= end:
                raise GoJSONError(_EOF)
            if data[pos] != 0x3A:
                raise _invalid_character(data, pos, "after object key")
            pos += 1
            state = _VALUE
        else:
            if not stack:
                pos = _skip_whitespace(data, pos)
                if pos < end:
                    raise _invalid_character(data, pos, "after top-level value")
                return members
            pos = _skip_whitespace(data, pos)
            if pos >= end:
                raise GoJSONError(_EOF)
            byte = data[pos]
            if stack[-1]:
                if byte == 0x2C:
                    state = _NAME
                elif byte == 0x7D:
                    stack.pop()
                else:
                    raise _invalid_character(data, pos, "after object key:value pair")
            elif byte == 0x2C:
                state = _VALUE
            elif byte == 0x5D:
                stack.pop()
            else:
                raise _invalid_character(data, pos, "after array element")
            pos += 1


def _reject_constant(name: str) -> None:
    """NaN and Infinity are not JSON to Go: send such a body to `scan_json` for the text."""
    raise ValueError(f"not JSON: {name}")


def _member(name: str, value) -> tuple[str, str, object]:
    """A member decoded by the json module as a (name, kind, value) triple."""
    name = _go_string(name)
    if isinstance(value, str):
        if isinstance(value, _Number):
            return name, NUMBER, str(value)
        return name, STRING, _go_string(value)
    if value is None:
        return name, NULL, None
    if value is True or value is False:
        return name, BOOL, value
    return name, OBJECT if isinstance(value, _Object) else ARRAY, None


def json_object_members(data: bytes) -> list | None:
    """The top-level members of a JSON text as Go reads it (see `scan_json`), or None when
    the text is valid but not an object; GoJSONError with Go's text when it is not valid.

    The json module reads valid bodies (quickly); whatever it refuses, or anything deep
    enough to need Go's depth limit, is read again by `scan_json` for Go's exact verdict."""
    if data.count(b"[") + data.count(b"{") <= 1000:
        try:
            value = json.loads(data.decode("utf-8", "surrogateescape"),
                               object_pairs_hook=_Object, parse_int=_Number,
                               parse_float=_Number, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            pass
        else:
            if not isinstance(value, _Object):
                return None
            return [_member(name, item) for name, item in value]
    return scan_json(data)


# Go types of struct fields, as UnmarshalTypeError prints them
INT, INT64, DURATION, BOOLEAN, TEXT = "int", "int64", "time.Duration", "bool", "string"
_INTEGER_TYPES = frozenset((INT, INT64, DURATION))
_TOP_LEVEL_KINDS = {b"[": ARRAY, b'"': STRING, b"t": BOOL, b"f": BOOL, b"n": NULL}


def _fold(name: str) -> str | None:
    """A member name as Go's case-insensitive match sees it (simple case folding); None
    when it cannot equal an ASCII field name."""
    if not name.isascii():
        name = name.replace("\u017f", "s").replace("\u212a", "k")
        if not name.isascii():
            return None
    return name.lower()


def _int64(literal: str) -> int | None:
    """strconv.ParseInt(literal, 10, 64) of a JSON number literal (no fraction, no
    exponent), else None."""
    digits = literal[1:] if literal[:1] == "-" else literal
    if not digits.isdigit():
        return None
    value = int(literal)
    return value if INT64_MIN <= value <= INT64_MAX else None


def decode_fields(data: bytes, fields: dict[str, str], type_name: str) -> dict[str, object]:
    """Unmarshal a JSON text into a Go struct (named `type_name`) whose JSON field names
    (lower case) and Go types are `fields`: the values of the fields present, after Go's
    rules (exact then case-insensitive names, null ignored, later duplicates win; a
    top-level null sets nothing). GoJSONError for a text that is not valid JSON, is not an
    object, or has a value of the wrong type (the first one)."""
    members = json_object_members(data)
    if members is None:
        kind = _TOP_LEVEL_KINDS.get(data.lstrip(_WHITESPACE)[:1], NUMBER)
        if kind == NULL:
            return {}
        raise GoJSONError(f"json: cannot unmarshal {kind} into Go value of type {type_name}")
    values: dict[str, object] = {}
    error: str | None = None
    for key, kind, value in members:
        name = key
        go_type = fields.get(name)
        if go_type is None:
            name = _fold(key)
            go_type = fields.get(name) if name is not None else None
            if go_type is None:
                continue
        if kind == NULL:
            continue
        if go_type in _INTEGER_TYPES:
            if kind == NUMBER:
                number = _int64(value)
                if number is not None:
                    values[name] = number
                    continue
                what = f"number {value}"
            else:
                what = kind
        elif go_type == BOOLEAN:
            if kind == BOOL:
                values[name] = value
                continue
            what = kind
        else:
            if kind == STRING:
                values[name] = value
                continue
            what = kind
        if error is None:
            # the field is named as the body spells it (Go reports the JSON pointer)
            error = f"json: cannot unmarshal {what} into Go struct field .{key} of type {go_type}"
    if error is not None:
        raise GoJSONError(error)
    return values


# -- pull requests ----------------------------------------------------------------------------
GET_NEXT_TYPE = "server.JSApiConsumerGetNextRequest"
GET_NEXT_FIELDS = {"expires": DURATION, "batch": INT, "max_bytes": INT, "no_wait": BOOLEAN,
                   "idle_heartbeat": DURATION, "group": TEXT, "min_pending": INT64,
                   "min_ack_pending": INT64, "id": TEXT, "priority": INT}


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
    body = go_trim_space(bytes(payload or b""))
    if not body:
        return ONE_MESSAGE
    if body[0] != 0x7B:
        batch = go_atoi(body)
        return ONE_MESSAGE if batch is None else PullRequest(batch=batch)
    try:
        values = decode_fields(body, GET_NEXT_FIELDS, GET_NEXT_TYPE)
    except GoJSONError as error:
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
