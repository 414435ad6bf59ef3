"""Message counters (streams with allow_msg_counter), as nats-server 2.12+ computes them.

A counter stream keeps one running total per subject. Every publish carries
`Nats-Incr: <signed base-10 integer>` and an empty payload; the server reads the total from
the body of the subject's last message (`{"val":"<decimal>"}`), adds the increment with
arbitrary precision, stores `{"val":"<sum>"}` and answers `"val":"<sum>"` in the PubAck.

Sourced counters: a message that arrives through a stream source carries the source's
total in its body and `Nats-Stream-Source: <stream> <seq> <filter> <dest> <subject> ...`.
The receiving stream keeps, in the `Nats-Counter-Sources` header of its own last message
for the subject, the last total seen per source stream and source subject
(`{"<stream>":{"<subject>":"<total>"}}`); the increment applied is the difference between
the new total and that last one, and `Nats-Incr` is rewritten to it (`apply_sourced`).

Parsing follows Go: an increment parses with big.Int SetString(s, 10) (an optional `+`/`-`
then ASCII digits, nothing else); a stored body is read with encoding/json into
`{val string}` (keys matched case-insensitively, the last match wins, `null` leaves it
empty) and only a JSON error makes the counter broken. The text of `val` is then read
leniently, as SetString leaves its receiver: the leading `[+-]digits` part counts, an
empty or digit-less value is 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from jsstore.gocompat import json as gojson
from jsstore.wire import headers
from jsstore.wire.apierrors import JSMessageCounterBrokenErr, JSMessageIncrInvalidErr

INCR = "Nats-Incr"
COUNTER_SOURCES = "Nats-Counter-Sources"
STREAM_SOURCE = "Nats-Stream-Source"
VALUE_KEY = "val"

# A sources map: source stream -> source subject -> that source's last total (decimal text).
Sources = dict[str, dict[str, str]]


def _is_decimal(text: str) -> bool:
    """ASCII digits only, at least one (str.isdigit would take other scripts' digits)."""
    return bool(text) and text.isascii() and text.isdigit()


def parse_incr(text: str | bytes) -> int:
    """A `Nats-Incr` value as big.Int SetString(text, 10) reads it: an optional sign and
    ASCII decimal digits (no spaces, underscores or base prefixes).
    Anything else -> JSMessageIncrInvalidErr."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not _is_decimal(digits):
        raise JSMessageIncrInvalidErr()
    value = int(digits)
    return -value if text[:1] == "-" else value


def _lenient_decimal(text: str) -> int:
    """What a big.Int holds after SetString(text, 10), success or not: the leading
    `[+-]digits` run (0 when there are no digits)."""
    sign = -1 if text[:1] == "-" else 1
    pos = 1 if text[:1] in ("+", "-") else 0
    end = pos
    while end < len(text) and "0" <= text[end] <= "9":
        end += 1
    return sign * int(text[pos:end]) if end > pos else 0


# what nats-server decodes a counter body and the sources header into
_COUNTER_BODY = gojson.struct("server.CounterValue", {VALUE_KEY: gojson.STRING_TYPE})
_SOURCES = gojson.map_of(gojson.map_of(gojson.STRING_TYPE))


def counter_text(body: bytes) -> str:
    """The `val` text of a counter body (empty when absent or null).
    JSMessageCounterBrokenErr when Go could not decode the body into `{val string}`."""
    try:
        return gojson.unmarshal(body, _COUNTER_BODY).get(VALUE_KEY, "")
    except gojson.GoJSONError:
        raise JSMessageCounterBrokenErr() from None


def counter_value(body: bytes) -> int:
    """The total stored in a counter message body `{"val":"<decimal>"}`.
    JSMessageCounterBrokenErr when the body is not such JSON."""
    return _lenient_decimal(counter_text(body))


def counter_body(value: int) -> bytes:
    """The body nats-server stores for a total: `{"val":"<decimal>"}`."""
    return b'{"val":"' + str(int(value)).encode("ascii") + b'"}'


# ---- Sourced counters --------------------------------------------------------------------

def parse_sources(value: bytes | str | None) -> Sources:
    """A `Nats-Counter-Sources` header value as map[string]map[string]string ({} when
    absent or empty). JSMessageCounterBrokenErr when it is not that JSON."""
    if not value:
        return {}
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    try:
        sources = gojson.unmarshal(value, _SOURCES)
    except gojson.GoJSONError:
        raise JSMessageCounterBrokenErr() from None
    return {stream: subjects or {} for stream, subjects in sources.items()}


def _go_sorted(mapping: dict) -> list:
    """Go sorts map keys by their UTF-8 bytes before encoding."""
    return sorted(mapping.items(), key=lambda item: item[0].encode("utf-8", "surrogatepass"))


def sources_header(sources: Sources) -> str:
    """The `Nats-Counter-Sources` value for a sources map (json.Marshal: keys sorted, no
    spaces)."""
    ordered = {stream: dict(_go_sorted(subjects)) for stream, subjects in _go_sorted(sources)}
    return gojson.encode(ordered).decode()


def source_origin(stream_source: bytes | str, subject: str) -> tuple[str, str]:
    """(origin stream, origin subject) from a `Nats-Stream-Source` value: the first field,
    and the fifth when there are at least five fields (else the message's own subject)."""
    if isinstance(stream_source, bytes):
        stream_source = stream_source.decode("utf-8", "surrogateescape")
    fields = stream_source.split(" ")
    return fields[0], (fields[4] if len(fields) >= 5 else subject)


@dataclass(slots=True)
class SourcedIncrement:
    """What a sourced counter message changes."""

    delta: int  # the increment to add to the local total (Nats-Incr is rewritten to it)
    sources: Sources  # the updated sources map
    header_value: str  # the new Nats-Counter-Sources value


def sourced_increment(previous: Sources | None, stream_source: bytes | str, subject: str,
                      body: bytes) -> SourcedIncrement:
    """The change a sourced counter message makes: its body holds the source's total for
    the origin subject; the delta is that total minus the one last seen from the same
    source stream and subject (0 when none). `previous` is not modified.
    JSMessageCounterBrokenErr when the body is not a counter body."""
    origin_stream, origin_subject = source_origin(stream_source, subject)
    total_text = counter_text(body)
    total = _lenient_decimal(total_text)
    sources: Sources = {stream: dict(subjects) for stream, subjects in (previous or {}).items()}
    seen = sources.setdefault(origin_stream, {})
    before = _lenient_decimal(seen.get(origin_subject, ""))
    seen[origin_subject] = str(total)
    return SourcedIncrement(delta=total - before, sources=sources,
                            header_value=sources_header(sources))


# ---- One counter publish ------------------------------------------------------------------

@dataclass(slots=True)
class CounterUpdate:
    """The message to store for one counter publish."""

    hdr: bytes | None  # the header block to store (Nats-Incr / Nats-Counter-Sources updated)
    body: bytes  # `{"val":"<total>"}`
    total: int  # the new total (the PubAck's "val")
    sources: Sources  # the sources map now stored with the subject


def previous_state(last_hdr: bytes | None, last_body: bytes | None) -> tuple[int, Sources]:
    """(total, sources) from the subject's last message, or (0, {}) when there is none.
    JSMessageCounterBrokenErr when its body or Nats-Counter-Sources header is broken."""
    if last_body is None:
        return 0, {}
    total = counter_value(last_body)
    return total, parse_sources(headers.get(last_hdr, COUNTER_SOURCES))


def apply_increment(hdr: bytes | None, payload: bytes, subject: str, incr: int,
                    previous_total: int, previous_sources: Sources | None) -> CounterUpdate:
    """The stored message for a counter publish with increment `incr`, given the subject's
    running total and sources map (from `previous_state`, or the running state of earlier
    messages of the same batch). A sourced message (with `Nats-Stream-Source`) adds the
    difference to its source's last total instead and has Nats-Incr rewritten to it. The
    caller then checks the size against max_payload (JSStreamMessageExceedsMaximumErr)."""
    sources: Sources = {stream: dict(subjects)
                        for stream, subjects in (previous_sources or {}).items()}
    stream_source = headers.get(hdr, STREAM_SOURCE)
    if stream_source:
        sourced = sourced_increment(sources, stream_source, subject, payload)
        incr, sources = sourced.delta, sourced.sources
        hdr = headers.set_header(hdr, INCR, str(incr))
    total = previous_total + incr
    if sources:
        hdr = headers.set_header(hdr, COUNTER_SOURCES, sources_header(sources))
    return CounterUpdate(hdr=hdr, body=counter_body(total), total=total, sources=sources)
