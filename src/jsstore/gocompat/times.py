"""Go's time.Time as nats-server reads and writes it: RFC 3339 text, and the zero time.

nats-server takes times as ``time.Parse(time.RFC3339, s)`` reads them (schedules' ``@at``)
and as ``time.Time``'s JSON decoding reads them (every time in a request or a config).
The two accept the same texts -- Go's stricter JSON checks of RFC 3339 (go.dev/issue/54580)
are switched off -- so one parser, `parse_go_time`, serves both, and nats-server answers
alike: one-digit hours, ``,`` before the fraction and offsets up to ``+24:60`` pass.
Either way more than nine fraction digits are truncated, and an error is Go's
``time.ParseError`` text (`TimeParseError`), quoted as the time package quotes.

Times are written as Go's ``time.RFC3339Nano`` (what ``encoding/json`` writes for a
``time.Time``): `format_go_time` for a parsed time in its own offset, and `rfc3339_nano`
for Unix nanoseconds in UTC -- the form of every timestamp in nats-server's answers and
files, written once per message on some paths, so the date-and-seconds part is cached.

The units (``SECOND``, ``MILLISECOND``, ...) and int64 bounds are ``time.Duration``'s and
live in `jsstore.gocompat.durations`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from jsstore.gocompat.durations import SECOND
from jsstore.gocompat.quoting import time_quote

RFC3339 = "2006-01-02T15:04:05Z07:00"           # Go's layout, named in ParseError texts
ZERO_TIME = "0001-01-01T00:00:00Z"              # Go's zero time.Time as JSON writes it
ZERO_TIME_NS = -62135596800 * SECOND            # ... as Unix nanoseconds
_DAY = 86400                                    # seconds


class GoTime(NamedTuple):
    """A parsed time: wall clock fields in the offset it was written with."""
    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    nanos: int
    offset: int                         # seconds east of UTC


class TimeParseError(ValueError):
    """Go's time.ParseError text for a value that is not RFC 3339."""


def _cannot_parse(value: bytes, value_elem: bytes, layout_elem: str) -> TimeParseError:
    return TimeParseError(f"parsing time {time_quote(value)} as {time_quote(RFC3339)}: "
                          f"cannot parse {time_quote(value_elem)} as {time_quote(layout_elem)}")


def _out_of_range(value: bytes, what: str) -> TimeParseError:
    return TimeParseError(f"parsing time {time_quote(value)}: {what} out of range")


def _digit(data: bytes, index: int) -> bool:
    return index < len(data) and 0x30 <= data[index] <= 0x39


def _getnum(data: bytes, fixed: bool) -> tuple[int, bytes] | None:
    """Go's getnum: one or two digits (exactly two when fixed); None when not a number."""
    if not _digit(data, 0):
        return None
    if not _digit(data, 1):
        return None if fixed else (data[0] - 0x30, data[1:])
    return (data[0] - 0x30) * 10 + data[1] - 0x30, data[2:]


def days_in_month(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def parse_go_time(text: str | bytes) -> GoTime:
    """Parse `text` as Go's time.Parse(time.RFC3339, ...) does, with its error texts
    (TimeParseError): fractional seconds after '.' or ',', one-digit hours, 'Z' or
    +hh:mm offsets up to +24:60, more than nine fraction digits truncated."""
    whole = text.encode("utf-8", "replace") if isinstance(text, str) else bytes(text)
    value = whole
    if len(value) < 4 or not all(_digit(value, i) for i in range(4)):
        raise _cannot_parse(whole, value, "2006")
    year, value = int(value[:4]), value[4:]
    fields = []
    for separator, element, fixed, limit, what in (
            (b"-", "01", True, 13, "month"), (b"-", "02", True, None, None),
            (b"T", "15", False, 24, "hour"), (b":", "04", True, 60, "minute"),
            (b":", "05", True, 60, "second")):
        if not value.startswith(separator):
            raise _cannot_parse(whole, value, separator.decode())
        value = value[1:]
        parsed = _getnum(value, fixed)
        if parsed is None:
            raise _cannot_parse(whole, value, element)
        number, value = parsed
        if limit is not None and (number >= limit or (what == "month" and number == 0)):
            raise _out_of_range(whole, what)
        fields.append(number)
    nanos = 0
    if len(value) >= 2 and value[:1] in (b".", b",") and _digit(value, 1):
        end = 2
        while _digit(value, end):
            end += 1
        digits = value[1:min(end, 10)]
        nanos = int(digits) * 10 ** (9 - len(digits))
        value = value[end:]
    offset, value = _parse_offset(whole, value)
    if value:
        raise TimeParseError(f"parsing time {time_quote(whole)}: extra text: {time_quote(value)}")
    month, day, hour, minute, second = fields
    if day < 1 or day > days_in_month(month, year):
        raise _out_of_range(whole, "day")
    return GoTime(year, month, day, hour, minute, second, nanos, offset)


def _parse_offset(whole: bytes, value: bytes) -> tuple[int, bytes]:
    """The Z07:00 element: 'Z', or a sign, two hour digits, ':' and two minute digits.
    As in Go, an offset out of range is reported before a bad sign or digit."""
    if value[:1] == b"Z":
        return 0, value[1:]
    if len(value) < 6 or value[3:4] != b":":
        raise _cannot_parse(whole, value, "Z07:00")
    hours = _getnum(value[1:3], True)
    minutes = _getnum(value[4:6], True) if hours is not None else None
    hour, minute = (hours or (0,))[0], (minutes or (0,))[0]
    out_of_range = None
    if hour > 24:
        out_of_range = "time zone offset hour"
    if minute > 60:
        out_of_range = "time zone offset minute"
    if out_of_range:
        raise _out_of_range(whole, out_of_range)
    if hours is None or minutes is None or value[:1] not in (b"+", b"-"):
        raise _cannot_parse(whole, value, "Z07:00")
    offset = (hour * 60 + minute) * 60
    return (-offset if value[:1] == b"-" else offset), value[6:]


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36524
                   - day_of_era // 146096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + (3 if shifted_month < 10 else -9)
    return year_of_era + era * 400 + (month <= 2), month, day


def unix_ns(t: GoTime) -> int:
    """The instant of a parsed time as Unix nanoseconds."""
    seconds = (_days_from_civil(t.year, t.month, t.day) * _DAY + t.hour * 3600
               + t.minute * 60 + t.second - t.offset)
    return seconds * SECOND + t.nanos


def from_unix_ns(ns: int, offset: int = 0) -> GoTime:
    """The wall clock of Unix nanoseconds `ns` at `offset` seconds east of UTC."""
    seconds, nanos = divmod(ns, SECOND)
    days, rest = divmod(seconds + offset, _DAY)
    year, month, day = _civil_from_days(days)
    return GoTime(year, month, day, rest // 3600, rest // 60 % 60, rest % 60, nanos, offset)


def parse_time_ns(text: str | bytes) -> int:
    """Unix nanoseconds of an RFC 3339 text (`parse_go_time`, TimeParseError)."""
    return unix_ns(parse_go_time(text))


def marshal_error(t: GoTime) -> str | None:
    """Why Go's Time.MarshalJSON refuses `t` (None when it does not): time.Parse takes an
    offset up to +24:60, JSON can not carry one of 24 hours or more."""
    if abs(t.offset) // 60 // 60 >= 24:
        return "Time.MarshalJSON: timezone hour outside of range [0,23]"
    return None


def format_go_time(t: GoTime, *, fraction: bool = True) -> str:
    """Go's time.RFC3339Nano text of `t` in its offset (what its JSON encoder writes for
    a time.Time): the fraction without trailing zeros, 'Z' for UTC; without `fraction`,
    time.RFC3339 (whole seconds)."""
    text = (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:"
            f"{t.second:02d}")
    if t.nanos and fraction:
        text += "." + f"{t.nanos:09d}".rstrip("0")
    if t.offset == 0:
        return text + "Z"
    zone = abs(t.offset) // 60
    return text + ("-" if t.offset < 0 else "+") + f"{zone // 60:02d}:{zone % 60:02d}"


@functools.lru_cache(maxsize=256)
def _utc_seconds(seconds: int) -> str:
    t = from_unix_ns(seconds * SECOND)
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:"
            f"{t.second:02d}")


def rfc3339_nano(ns: int) -> str:
    """Go's time.RFC3339Nano of Unix nanoseconds in UTC: "2024-05-01T12:00:00.5Z".  The
    date-and-seconds part of recent seconds is cached: this runs once per message on
    some paths (direct get, republish)."""
    seconds, fraction = divmod(ns, SECOND)
    text = _utc_seconds(seconds)
    if fraction:
        text += "." + f"{fraction:09d}".rstrip("0")
    return text + "Z"


def utc_text(text: str) -> str:
    """The instant of an RFC 3339 text again, in UTC, as Go writes it (time.Time.UTC)."""
    return format_go_time(from_unix_ns(parse_time_ns(text)))


def is_zero_time(text: str) -> bool:
    """Go's Time.IsZero of an RFC 3339 text: the instant 0001-01-01T00:00:00Z, in any
    offset (False for a text that does not parse)."""
    try:
        return parse_time_ns(text) == ZERO_TIME_NS
    except TimeParseError:
        return False
