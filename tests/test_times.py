"""Go's RFC 3339 times (jsstore.gocompat.times): time.Parse's reading and error texts,
RFC3339Nano writing, and the instants between them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, strategies as st

from jsstore.gocompat.durations import SECOND
from jsstore.gocompat.times import (
    ZERO_TIME, ZERO_TIME_NS, GoTime, TimeParseError, format_go_time, rfc3339_nano,
    from_unix_ns, is_zero_time, parse_go_time, parse_time_ns, unix_ns, utc_text)

LAYOUT = '"2006-01-02T15:04:05Z07:00"'


@pytest.mark.parametrize("text, error", [
    ("bad", f'parsing time "bad" as {LAYOUT}: cannot parse "bad" as "2006"'),
    ("2024-13-01T00:00:00Z", 'parsing time "2024-13-01T00:00:00Z": month out of range'),
    ("2024-00-01T00:00:00Z", 'parsing time "2024-00-01T00:00:00Z": month out of range'),
    ("2024-02-30T00:00:00Z", 'parsing time "2024-02-30T00:00:00Z": day out of range'),
    ("2023-02-29T00:00:00Z", 'parsing time "2023-02-29T00:00:00Z": day out of range'),
    ("2024-01-01T24:00:00Z", 'parsing time "2024-01-01T24:00:00Z": hour out of range'),
    ("2024-01-01T00:60:00Z", 'parsing time "2024-01-01T00:60:00Z": minute out of range'),
    ("2024-1-01T00:00:00Z", f'parsing time "2024-1-01T00:00:00Z" as {LAYOUT}: '
                            'cannot parse "1-01T00:00:00Z" as "01"'),
    ("2024-01-01T00:00:00", f'parsing time "2024-01-01T00:00:00" as {LAYOUT}: '
                            'cannot parse "" as "Z07:00"'),
    ("2024-01-01t00:00:00Z", f'parsing time "2024-01-01t00:00:00Z" as {LAYOUT}: '
                             'cannot parse "t00:00:00Z" as "T"'),
    ("2024-01-01T00:00:00z", f'parsing time "2024-01-01T00:00:00z" as {LAYOUT}: '
                             'cannot parse "z" as "Z07:00"'),
    ("2024-01-01T00:00:00Zjunk", 'parsing time "2024-01-01T00:00:00Zjunk": extra text: "junk"'),
    ("2024-01-01T00:00:00+25:00",
     'parsing time "2024-01-01T00:00:00+25:00": time zone offset hour out of range'),
    ("2024-01-01T00:00:00+01:61",
     'parsing time "2024-01-01T00:00:00+01:61": time zone offset minute out of range'),
    ("2024-01-01T00:00:00.Z", f'parsing time "2024-01-01T00:00:00.Z" as {LAYOUT}: '
                              'cannot parse ".Z" as "Z07:00"'),
    ("\u00e9", f'parsing time "\\xc3\\xa9" as {LAYOUT}: cannot parse "\\xc3\\xa9" as "2006"'),
])
def test_parse_errors_are_gos(text, error):
    with pytest.raises(TimeParseError) as info:
        parse_go_time(text)
    assert str(info.value) == error
    with pytest.raises(TimeParseError):
        parse_time_ns(text.encode())


# what nats-server takes in a JSON request as well (time.Time's strict RFC 3339 checks are
# off in Go), written back as its RFC3339Nano
@pytest.mark.parametrize("text, written", [
    ("2024-01-01T01:00:00Z", "2024-01-01T01:00:00Z"),
    ("2024-01-01T1:00:00Z", "2024-01-01T01:00:00Z"),
    ("2024-01-01T01:00:00,5Z", "2024-01-01T01:00:00.5Z"),
    ("2024-01-01T01:00:00.1234567891Z", "2024-01-01T01:00:00.123456789Z"),
    ("2024-01-01T01:00:00.500+05:30", "2024-01-01T01:00:00.5+05:30"),
    ("2024-01-01T01:00:00-00:00", "2024-01-01T01:00:00Z"),
    ("2024-02-29T23:59:59.000000001Z", "2024-02-29T23:59:59.000000001Z"),
    ("2024-01-01T01:00:00+24:00", "2024-01-01T01:00:00+24:00"),
])
def test_what_go_accepts(text, written):
    assert format_go_time(parse_go_time(text)) == written


def test_instants():
    assert parse_time_ns("1970-01-01T00:00:01.5Z") == 1_500_000_000
    assert parse_time_ns("1970-01-01T01:00:00+01:00") == 0
    assert parse_time_ns("1969-12-31T23:59:59.999999999Z") == -1
    assert utc_text("2024-03-01T01:00:00+05:30") == "2024-02-29T19:30:00Z"
    assert parse_time_ns(ZERO_TIME) == ZERO_TIME_NS == -62135596800 * SECOND
    assert is_zero_time("0001-01-01T01:00:00+01:00") and not is_zero_time("not a time")
    assert rfc3339_nano(ZERO_TIME_NS) == ZERO_TIME
    assert format_go_time(GoTime(2024, 5, 1, 12, 0, 0, 500_000_000, 0), fraction=False) == \
        "2024-05-01T12:00:00Z"
    assert format_go_time(from_unix_ns(0, -3600)) == "1969-12-31T23:00:00-01:00"


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MIN_NS, _MAX_NS = ZERO_TIME_NS, 253402300799 * SECOND + SECOND - 1   # years 1 to 9999


@given(st.integers(_MIN_NS, _MAX_NS))
def test_rfc3339_nano_is_rfc3339nano_in_utc(ns):
    seconds, nanos = divmod(ns, SECOND)
    moment = _EPOCH + timedelta(seconds=seconds)
    expected = moment.replace(tzinfo=None).isoformat()
    if nanos:
        expected += "." + f"{nanos:09d}".rstrip("0")
    assert rfc3339_nano(ns) == expected + "Z"
    assert parse_time_ns(rfc3339_nano(ns)) == ns


@given(st.integers(_MIN_NS + 86400 * SECOND, _MAX_NS - 86400 * SECOND),
       st.integers(-(23 * 60 + 59), 23 * 60 + 59))
def test_offsets_keep_the_instant(ns, offset_minutes):
    local = from_unix_ns(ns, offset_minutes * 60)
    assert unix_ns(local) == ns
    assert parse_go_time(format_go_time(local)) == local
    assert utc_text(format_go_time(local)) == rfc3339_nano(ns)
