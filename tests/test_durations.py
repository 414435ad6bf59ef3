"""Go duration text: time.ParseDuration and Duration.String, checked against the cases
Go's own time package tests use, plus property tests (every int64 formats to text that
parses back to it; parsing arbitrary text never raises anything but ValueError)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from jsstore.stream import cron
from jsstore.gocompat.durations import (HOUR, INT64_MAX, INT64_MIN, MICROSECOND, MILLISECOND,
                                        MINUTE, SECOND, format_go_duration, parse_go_duration)
from jsstore.gocompat.quoting import time_quote


@pytest.mark.parametrize("text,expected", [
    ("0", 0), ("5s", 5 * SECOND), ("30s", 30 * SECOND), ("1478s", 1478 * SECOND),
    ("-5s", -5 * SECOND), ("+5s", 5 * SECOND), ("-0", 0), ("+0", 0),
    ("5.0s", 5 * SECOND), ("5.6s", 5 * SECOND + 600 * MILLISECOND), ("5.s", 5 * SECOND),
    (".5s", 500 * MILLISECOND), ("1.0s", SECOND), ("1.00s", SECOND),
    ("1.004s", SECOND + 4 * MILLISECOND), ("1.0040s", SECOND + 4 * MILLISECOND),
    ("100.00100s", 100 * SECOND + MILLISECOND),
    ("10ns", 10), ("11us", 11 * MICROSECOND), ("12\u00b5s", 12 * MICROSECOND),
    ("12\u03bcs", 12 * MICROSECOND), ("13ms", 13 * MILLISECOND), ("14s", 14 * SECOND),
    ("15m", 15 * MINUTE), ("16h", 16 * HOUR),
    ("3h30m", 3 * HOUR + 30 * MINUTE), ("10.5s4m", 4 * MINUTE + 10 * SECOND + 500 * MILLISECOND),
    ("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400 * MILLISECOND)),
    ("1h2m3s4ms5us6ns", HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5 * MICROSECOND + 6),
    ("39h9m14.425s", 39 * HOUR + 9 * MINUTE + 14 * SECOND + 425 * MILLISECOND),
    ("52763797000ns", 52763797000),
    # fractions go through float64 the way Go's do
    ("0.3333333333333333333h", 20 * MINUTE),
    ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", INT64_MAX), ("9223372036854775.807us", INT64_MAX),
    ("9223372036s854ms775us807ns", INT64_MAX),
    ("-9223372036854775808ns", INT64_MIN), ("-9223372036854775.808us", INT64_MIN),
    ("-9223372036s854ms775us808ns", INT64_MIN), ("-2562047h47m16.854775808s", INT64_MIN),
    ("0.100000000000000000000h", 6 * MINUTE),
    ("0.830103483285477580700h", 49 * MINUTE + 48 * SECOND + 372539827),
])
def test_parse_matches_go(text, expected):
    assert parse_go_duration(text) == expected
    assert parse_go_duration(text.encode()) == expected


@pytest.mark.parametrize("text,message", [
    ("", 'time: invalid duration ""'), ("3", 'time: missing unit in duration "3"'),
    ("-", 'time: invalid duration "-"'), ("s", 'time: invalid duration "s"'),
    (".", 'time: invalid duration "."'), ("-.", 'time: invalid duration "-."'),
    (".s", 'time: invalid duration ".s"'), ("+.s", 'time: invalid duration "+.s"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("1s ", 'time: unknown unit "s " in duration "1s "'),
    (" 1s", 'time: invalid duration " 1s"'), ("1..5s", 'time: missing unit in duration "1..5s"'),
    ("\uFFFD", 'time: invalid duration "\\xef\\xbf\\xbd"'),
    ("1\u00e9", 'time: unknown unit "\\xc3\\xa9" in duration "1\\xc3\\xa9"'),
    ('1"\\', 'time: unknown unit "\\"\\\\" in duration "1\\"\\\\"'),
    ("9223372036854775810ns", 'time: invalid duration "9223372036854775810ns"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
    ("9223372036854776us", 'time: invalid duration "9223372036854776us"'),
    ("3000000h", 'time: invalid duration "3000000h"'),
    ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
    ("9223372036854ms775us808ns", 'time: invalid duration "9223372036854ms775us808ns"'),
])
def test_parse_errors_carry_go_text(text, message):
    with pytest.raises(ValueError) as error:
        parse_go_duration(text)
    assert str(error.value) == message


def test_invalid_bytes_are_quoted_byte_by_byte():
    with pytest.raises(ValueError) as error:
        parse_go_duration(b"\x85\x85")
    assert str(error.value) == 'time: invalid duration "\\x85\\x85"'
    with pytest.raises(ValueError) as error:
        parse_go_duration(b"1\xffs")
    assert str(error.value) == 'time: unknown unit "\\xffs" in duration "1\\xffs"'
    assert time_quote("a\tb\x7f") == '"a\\x09b\x7f"'


@pytest.mark.parametrize("ns,text", [
    (0, "0s"), (1, "1ns"), (999, "999ns"), (1100, "1.1\u00b5s"), (1000, "1\u00b5s"),
    (2200 * MICROSECOND, "2.2ms"), (100 * MILLISECOND, "100ms"), (3300 * MILLISECOND, "3.3s"),
    (1500 * MILLISECOND, "1.5s"), (90 * SECOND, "1m30s"), (4 * MINUTE + 5 * SECOND, "4m5s"),
    (4 * MINUTE + 5001 * MILLISECOND, "4m5.001s"), (2 * HOUR, "2h0m0s"),
    (5 * HOUR + 6 * MINUTE + 7001 * MILLISECOND, "5h6m7.001s"),
    (8 * MINUTE + 1, "8m0.000000001s"), (-(2 * MINUTE + 500 * MILLISECOND), "-2m0.5s"),
    (-1, "-1ns"), (-1500, "-1.5\u00b5s"),
    (INT64_MAX, "2562047h47m16.854775807s"), (INT64_MIN, "-2562047h47m16.854775808s"),
    (10 * SECOND, "10s"), (HOUR, "1h0m0s"), (1_500_000, "1.5ms"),
    (90061000000001, "25h1m1.000000001s"), (59 * SECOND, "59s"), (3599 * SECOND, "59m59s"),
])
def test_format_matches_go(ns, text):
    assert format_go_duration(ns) == text


def test_format_refuses_values_outside_int64():
    for bad in (INT64_MAX + 1, INT64_MIN - 1):
        with pytest.raises(ValueError):
            format_go_duration(bad)


def test_schedule_patterns_read_durations_from_here():
    assert cron.parse_go_duration is parse_go_duration


@given(st.integers(min_value=INT64_MIN, max_value=INT64_MAX))
def test_format_then_parse_round_trips(ns):
    assert parse_go_duration(format_go_duration(ns)) == ns


@given(st.integers(min_value=0, max_value=10 ** 15), st.sampled_from(
    ["ns", "us", "\u00b5s", "\u03bcs", "ms", "s", "m", "h"]))
def test_whole_units_parse_exactly(count, unit):
    scale = {"ns": 1, "us": MICROSECOND, "\u00b5s": MICROSECOND, "\u03bcs": MICROSECOND,
             "ms": MILLISECOND, "s": SECOND, "m": MINUTE, "h": HOUR}[unit]
    if count * scale > INT64_MAX:
        with pytest.raises(ValueError):
            parse_go_duration(f"{count}{unit}")
    else:
        assert parse_go_duration(f"{count}{unit}") == count * scale
        assert parse_go_duration(f"-{count}{unit}") == -count * scale


_DURATION_ALPHABET = st.sampled_from(list("0123456789.+-nsuµμmhd x\u00e9\uFFFD"))


@given(st.one_of(st.text(_DURATION_ALPHABET, max_size=24), st.text(max_size=24),
                 st.binary(max_size=24)))
def test_parse_raises_only_value_error(text):
    try:
        value = parse_go_duration(text)
    except ValueError as error:
        assert str(error).startswith("time: ")
    else:
        assert INT64_MIN <= value <= INT64_MAX
