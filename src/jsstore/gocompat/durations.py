"""Go's time.Duration text: ``time.ParseDuration`` and ``Duration.String``.

nats-server reads durations as Go text in a few places (``-NAK 5s``, ``@every 1m``) and
writes them with ``%v`` in some status messages (``409 Exceeded MaxRequestExpires of
1m30s``), so both directions follow Go exactly:

* `parse_go_duration` accepts ``[-+]?([0-9]*(\\.[0-9]*)?unit)+`` with the units ``ns``,
  ``us``, ``µs`` (micro sign), ``μs`` (Greek mu), ``ms``, ``s``, ``m`` and ``h``, or a bare
  ``0``. Fractions are converted the way Go converts them (through a float64 per
  component, truncated), overflow past int64 is an error, and the error texts are Go's
  (``time: invalid duration "1..5s"``, ``time: missing unit in duration "1"``,
  ``time: unknown unit "x" in duration "1x"``).
* `format_go_duration` writes ``0s``, ``1.5µs``, ``100ms``, ``1.5s``, ``1m30s``,
  ``2h0m0s``: below one second in the largest unit that keeps the value at least 1, from
  a second up as hours, minutes and seconds with the seconds' fraction, trailing zeros
  of a fraction dropped.

Durations are int nanoseconds, as Go's are; both functions work on the whole int64
range and refuse anything outside it.

The units (``NANOSECOND`` ... ``HOUR``, Go's ``time.Second`` and the rest) and the int64
bounds are defined here once; every module that counts nanoseconds imports them from here
(`jsstore.gocompat.times` too, for RFC 3339 instants).  The Cython core, beneath this
package, keeps its own C constant where it needs one.
"""

from __future__ import annotations

from jsstore.gocompat.quoting import time_quote

NANOSECOND = 1
MICROSECOND = 1_000
MILLISECOND = 1_000_000
SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
_LIMIT = 1 << 63                     # Go's overflow bound for the unsigned accumulator

MICRO_SIGN = "\u00b5"                # what Go writes for microseconds (and accepts)
GREEK_MU = "\u03bc"                  # also accepted when parsing

_UNITS = {"ns": NANOSECOND, "us": MICROSECOND, MICRO_SIGN + "s": MICROSECOND,
          GREEK_MU + "s": MICROSECOND, "ms": MILLISECOND, "s": SECOND, "m": MINUTE,
          "h": HOUR}
_DIGITS = "0123456789"
_TEXT, _ESCAPES = "utf-8", "surrogateescape"


def time_sub(t: int, u: int) -> int:
    """Go's ``t.Sub(u)`` of two times in Unix ns: the Duration between them, saturated at
    Duration's bounds (a pause until the year 2999 has INT64_MAX remaining)."""
    return max(INT64_MIN, min(INT64_MAX, t - u))


def _invalid(original: str) -> ValueError:
    return ValueError("time: invalid duration " + time_quote(original))


def _leading_int(text: str, pos: int) -> tuple[int, int]:
    """Go's leadingInt: the digits at `pos` as an int and where they end; ValueError
    (caller's text) past 1<<63."""
    value, end = 0, len(text)
    while pos < end and text[pos] in _DIGITS:
        if value > _LIMIT // 10:
            raise OverflowError
        value = value * 10 + ord(text[pos]) - 48
        if value > _LIMIT:
            raise OverflowError
        pos += 1
    return value, pos


def _leading_fraction(text: str, pos: int) -> tuple[int, float, int]:
    """Go's leadingFraction: (digits as an int, 10**digits kept as a float, end); digits
    past int64 precision are consumed but ignored."""
    value, scale, overflow, end = 0, 1.0, False, len(text)
    while pos < end and text[pos] in _DIGITS:
        if not overflow:
            if value > INT64_MAX // 10:
                overflow = True
            else:
                following = value * 10 + ord(text[pos]) - 48
                if following > _LIMIT:
                    overflow = True
                else:
                    value = following
                    scale *= 10
        pos += 1
    return value, scale, pos


def parse_go_duration(text: str | bytes) -> int:
    """Nanoseconds of a Go duration ("1h30m", "1.5s", "-2m", "300ms", "0"), exactly as
    time.ParseDuration reads it; ValueError with Go's message otherwise. Bytes are read
    as UTF-8 (invalid bytes never form a unit, so they are errors)."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode(_TEXT, _ESCAPES)
    original, pos, negative = text, 0, False
    if text[:1] in ("-", "+"):
        negative, pos = text[0] == "-", 1
    if text[pos:] == "0":
        return 0
    end = len(text)
    if pos == end:
        raise _invalid(original)
    total = 0
    while pos < end:
        if text[pos] != "." and text[pos] not in _DIGITS:
            raise _invalid(original)
        start = pos
        try:
            whole, pos = _leading_int(text, pos)
        except OverflowError:
            raise _invalid(original) from None
        has_whole = pos != start
        fraction, scale, has_fraction = 0, 1.0, False
        if pos < end and text[pos] == ".":
            fraction, scale, after = _leading_fraction(text, pos + 1)
            has_fraction, pos = after != pos + 1, after
        if not has_whole and not has_fraction:
            raise _invalid(original)
        unit_start = pos
        while pos < end and text[pos] != "." and text[pos] not in _DIGITS:
            pos += 1
        if pos == unit_start:
            raise ValueError("time: missing unit in duration " + time_quote(original))
        unit_text = text[unit_start:pos]
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise ValueError("time: unknown unit " + time_quote(unit_text) + " in duration "
                             + time_quote(original))
        if whole > _LIMIT // unit:
            raise _invalid(original)
        whole *= unit
        if fraction > 0:
            # Go adds float64(f) * (float64(unit) / scale), truncated to an integer
            whole += int(float(fraction) * (float(unit) / scale))
            if whole > _LIMIT:
                raise _invalid(original)
        total += whole
        if total > _LIMIT:
            raise _invalid(original)
    if negative:
        return -total
    if total > INT64_MAX:
        raise _invalid(original)
    return total


def _fraction(value: int, precision: int) -> tuple[str, int]:
    """Go's fmtFrac: ".ddd" for the low `precision` digits of `value` with trailing zeros
    (and the point, when nothing is left) dropped, and the value without those digits."""
    value, low = divmod(value, 10 ** precision)
    if not low:
        return "", value
    digits = str(low).rjust(precision, "0").rstrip("0")
    return "." + digits, value


def format_go_duration(ns: int) -> str:
    """Go's Duration.String() of `ns` nanoseconds: "0s", "750ns", "1.5µs", "100ms",
    "1.5s", "1m30s", "2h0m0s", "-3m0.5s". ValueError outside the int64 range."""
    if not INT64_MIN <= ns <= INT64_MAX:
        raise ValueError(f"duration {ns} is outside the int64 range")
    magnitude = -ns if ns < 0 else ns
    sign = "-" if ns < 0 else ""
    if magnitude < SECOND:
        if magnitude == 0:
            return "0s"
        if magnitude < MICROSECOND:
            return f"{sign}{magnitude}ns"
        if magnitude < MILLISECOND:
            fraction, whole = _fraction(magnitude, 3)
            return f"{sign}{whole}{fraction}{MICRO_SIGN}s"
        fraction, whole = _fraction(magnitude, 6)
        return f"{sign}{whole}{fraction}ms"
    fraction, seconds = _fraction(magnitude, 9)
    minutes, seconds = divmod(seconds, 60)
    text = f"{seconds}{fraction}s"
    if minutes:
        hours, minutes = divmod(minutes, 60)
        text = f"{minutes}m{text}"
        if hours:
            text = f"{hours}h{text}"
    return sign + text
