"""Message schedules: header checks in nats-server's order, fire times of every pattern form,
the fired message, the schedule table and sched.db."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from jsstore.gocompat.times import parse_time_ns
from jsstore.wire import headers
from jsstore.stream import cron, schedules
from jsstore.wire.apierrors import ApiError
from jsstore.errors import CorruptFile

S = 1_000_000_000
NOW = 1_795_324_252_442_417_000  # 2026-11-22T05:10:52.442417Z
AT = "@at 2030-01-01T00:00:00Z"
TARGET = {"Nats-Schedule": AT, "Nats-Schedule-Target": "foo.b"}


def ns(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp()) * S


# (stream kind, headers, err_code or None); kinds: n = no schedules, s = schedules,
# t = schedules and TTLs. Codes as nats-server 2.15 answers them (see the natsserver test).
CASES = [
    ("n", {"Nats-Schedule": AT}, 10188),
    ("n", {"Nats-Schedule": "bogus"}, 10188),
    ("n", {"Nats-Schedule": ""}, None),
    ("n", {"Nats-Schedule-Target": "foo.b"}, None),
    ("n", {"Nats-Scheduler": "foo.b"}, 10212),
    ("n", {"Nats-Schedule-Next": "purge"}, 10212),
    ("n", {"Nats-Schedule-Next": "purge", "Nats-Scheduler": "foo.c"}, 10188),
    ("n", {"Nats-Schedule-Next": "purge", "Nats-Scheduler": "foo.a"}, 10212),
    ("n", {"Nats-Schedule-Time-Zone": "Mars/X"}, 10188),
    ("n", {"Nats-Schedule-Time-Zone": "Europe/Paris"}, None),
    ("n", {"Nats-Schedule": "0 0 * * * *", "Nats-Scheduler": "foo.x"}, 10188),
    ("s", {"Nats-Schedule": "bogus"}, 10189),
    ("s", {"Nats-Schedule-Time-Zone": "Mars/X"}, 10223),
    ("s", {"Nats-Schedule-Time-Zone": "Europe/Paris"}, None),
    ("s", {"Nats-Schedule-TTL": "5m", "Nats-Schedule-Source": "x.*"}, None),
    ("s", {"Nats-Schedule-Next": "purge", "Nats-Scheduler": "foo.c"}, None),
    ("s", {"Nats-Schedule-Next": "purge", "Nats-Scheduler": "bar"}, None),
    ("s", {"Nats-Schedule-Next": "2030-01-01T00:00:00Z", "Nats-Scheduler": "foo.c"}, 10212),
    ("s", {"Nats-Schedule-Next": "purge", "Nats-Scheduler": "foo.*"}, 10212),
    ("s", {"Nats-Schedule-Next": "purge", "Nats-Scheduler": ""}, 10212),
    ("s", {"Nats-Schedule": "", "Nats-Scheduler": "bar"}, 10212),
    ("s", TARGET, None),
    ("s", {"Nats-Schedule": "@at 2000-01-01T00:00:00Z", "Nats-Schedule-Target": "foo.b"}, None),
    ("s", {"Nats-Schedule": "@at 2030-01-01T00:00:00+02:00", "Nats-Schedule-Target": "foo.b"}, None),
    ("s", {"Nats-Schedule": "@at 2030-01-01T00:00:00.5Z", "Nats-Schedule-Target": "foo.b"}, None),
    ("s", {"Nats-Schedule": "@at 2030-01-01 00:00:00Z", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {"Nats-Schedule": "@at 2030-01-01t00:00:00z", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {**TARGET, "Nats-Schedule-Time-Zone": "Europe/Paris"}, 10189),
    ("s", {"Nats-Schedule": "@every 1s", "Nats-Schedule-Target": "foo.b"}, None),
    ("s", {"Nats-Schedule": "@every 1.5s", "Nats-Schedule-Target": "foo.b"}, None),
    ("s", {"Nats-Schedule": "@every 500ms", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {"Nats-Schedule": "@every 1", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {"Nats-Schedule": "@every -1h", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {"Nats-Schedule": "@every  1s", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {"Nats-Schedule": "@every 1h", "Nats-Schedule-Target": "foo.b", "Nats-Schedule-Time-Zone": "UTC"}, 10189),
    ("s", {"Nats-Schedule": "0 0 * * * *", "Nats-Schedule-Target": "foo.b", "Nats-Schedule-Time-Zone": "Europe/Paris"}, None),
    ("s", {"Nats-Schedule": "0 0 * * * *", "Nats-Schedule-Target": "foo.b", "Nats-Schedule-Time-Zone": "UTC"}, None),
    ("s", {"Nats-Schedule": "0 0 * * * *", "Nats-Schedule-Target": "foo.b", "Nats-Schedule-Time-Zone": "utc"}, 10223),
    ("s", {"Nats-Schedule": "0 0 * * * *", "Nats-Schedule-Target": "foo.b", "Nats-Schedule-Time-Zone": ""}, 10223),
    ("s", {"Nats-Schedule": "0 0 * * *", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {"Nats-Schedule": "0 0 * * * * *", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {"Nats-Schedule": "60 0 0 1 1 *", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {"Nats-Schedule": "0 0 0 * * 7", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {"Nats-Schedule": "0 0 0 L * *", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {"Nats-Schedule": "0 0 0 29 2 *", "Nats-Schedule-Target": "foo.b"}, None),
    ("s", {"Nats-Schedule": "0 0 0 30 2 *", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {"Nats-Schedule": "*/15 * * * * *", "Nats-Schedule-Target": "foo.b"}, None),
    ("s", {"Nats-Schedule": "0 0 0 ? * MON-FRI", "Nats-Schedule-Target": "foo.b"}, None),
    ("s", {"Nats-Schedule": "0 0 0 1 jan-mar sun", "Nats-Schedule-Target": "foo.b"}, None),
    ("s", {"Nats-Schedule": "@hourly", "Nats-Schedule-Target": "foo.b"}, None),
    ("s", {"Nats-Schedule": "@midnight", "Nats-Schedule-Target": "foo.b"}, None),
    ("s", {"Nats-Schedule": "@annually", "Nats-Schedule-Target": "foo.b"}, None),
    ("s", {"Nats-Schedule": "@HOURLY", "Nats-Schedule-Target": "foo.b"}, 10189),
    ("s", {"Nats-Schedule": AT}, 10190),
    ("s", {"Nats-Schedule": AT, "Nats-Schedule-Target": "foo.a"}, 10190),
    ("s", {"Nats-Schedule": AT, "Nats-Schedule-Target": "foo.*"}, 10190),
    ("s", {"Nats-Schedule": AT, "Nats-Schedule-Target": "foo..b"}, 10190),
    ("s", {"Nats-Schedule": AT, "Nats-Schedule-Target": "bar"}, 10190),
    ("s", {**TARGET, "Nats-Schedule-TTL": "5m"}, 10166),
    ("t", {**TARGET, "Nats-Schedule-TTL": "5m"}, None),
    ("t", {**TARGET, "Nats-Schedule-TTL": "never"}, None),
    ("t", {**TARGET, "Nats-Schedule-TTL": "30"}, None),
    ("t", {**TARGET, "Nats-Schedule-TTL": "500ms"}, 10191),
    ("s", {**TARGET, "Nats-Schedule-TTL": "bad"}, 10191),
    ("s", {**TARGET, "Nats-Rollup": "all"}, 10192),
    ("s", {**TARGET, "Nats-Rollup": "bad"}, 10192),
    ("s", {**TARGET, "Nats-Rollup": "sub"}, None),
    ("s", {**TARGET, "Nats-Rollup": "SUB"}, None),
    ("s", {**TARGET, "Nats-Schedule-Rollup": "sub"}, None),
    ("s", {**TARGET, "Nats-Schedule-Rollup": "SUB"}, 10192),
    ("s", {**TARGET, "Nats-Schedule-Rollup": "all"}, 10192),
    ("s", {**TARGET, "Nats-Schedule-Source": "foo.c"}, None),
    ("s", {**TARGET, "Nats-Schedule-Source": ""}, None),
    ("s", {**TARGET, "Nats-Schedule-Source": "foo.*"}, 10203),
    ("s", {**TARGET, "Nats-Schedule-Source": "foo.a"}, 10203),
    ("s", {**TARGET, "Nats-Schedule-Source": "foo.b"}, 10203),
    ("s", {**TARGET, "Nats-Schedule-Source": "foo..c"}, 10203),
    ("s", {**TARGET, "Nats-Schedule-Source": "bar"}, 10203),
    ("s", {**TARGET, "Nats-Scheduler": "foo.a"}, 10212),
    ("s", {**TARGET, "Nats-Schedule-Next": "purge"}, 10212),
    ("s", {**TARGET, "Nats-Scheduler": "bar", "Nats-Schedule-Next": "purge"}, None),
    # order: several bad headers at once
    ("s", {"Nats-Schedule": "bogus", "Nats-Schedule-Target": "foo.*", "Nats-Schedule-TTL": "bad",
           "Nats-Schedule-Time-Zone": "Mars/X", "Nats-Schedule-Source": "*", "Nats-Rollup": "all"}, 10223),
    ("s", {"Nats-Schedule": "bogus", "Nats-Schedule-TTL": "bad"}, 10189),
    ("s", {"Nats-Schedule": "bogus", "Nats-Schedule-Target": "*"}, 10189),
    ("t", {"Nats-Schedule": "@hourly", "Nats-Schedule-Target": "foo.*", "Nats-Schedule-TTL": "bad",
           "Nats-Schedule-Source": "*", "Nats-Rollup": "all"}, 10191),
    ("s", {"Nats-Schedule": "@hourly", "Nats-Schedule-TTL": "5m", "Nats-Schedule-Target": "*"}, 10166),
    ("t", {"Nats-Schedule": "@hourly", "Nats-Schedule-Target": "foo.b", "Nats-Schedule-TTL": "bad",
           "Nats-Schedule-Rollup": "x"}, 10191),
    ("s", {"Nats-Schedule": "@hourly", "Nats-Schedule-Target": "*", "Nats-Schedule-Rollup": "x"}, 10192),
    ("s", {"Nats-Schedule": "@hourly", "Nats-Schedule-Target": "foo.b", "Nats-Schedule-Rollup": "x",
           "Nats-Schedule-Source": "*"}, 10192),
    ("s", {"Nats-Schedule": "@hourly", "Nats-Schedule-Target": "foo.*", "Nats-Schedule-Source": "*",
           "Nats-Rollup": "all"}, 10190),
    ("s", {"Nats-Schedule": "@hourly", "Nats-Schedule-Target": "foo.b", "Nats-Schedule-Source": "*",
           "Nats-Rollup": "all", "Nats-Scheduler": "x"}, 10203),
    ("s", {"Nats-Schedule": "@hourly", "Nats-Schedule-Target": "foo.b", "Nats-Rollup": "all",
           "Nats-Scheduler": "x"}, 10192),
]


def check(kind: str, hdrs: dict, now: int = NOW):
    return schedules.check_schedule_headers(
        headers.build(hdrs), subject="foo.a", stream_subjects=["foo.>"],
        allow_msg_schedules=kind != "n", allow_msg_ttl=kind == "t", now=now)


def outcome(kind: str, hdrs: dict) -> int | None:
    try:
        check(kind, hdrs)
    except ApiError as exc:
        return exc.to_dict()["err_code"]
    return None


@pytest.mark.parametrize("kind,hdrs,expected", CASES)
def test_header_checks_in_order(kind, hdrs, expected):
    assert outcome(kind, hdrs) == expected


def test_no_schedule_is_none_and_headers_are_kept():
    assert schedules.check_schedule_headers(None, subject="foo.a", stream_subjects=["foo.>"],
                                            allow_msg_schedules=True, now=NOW) is None
    assert check("s", {"X": "1"}) is None
    assert check("s", {"Nats-Schedule": ""}) is None


def test_schedule_fields_and_rollup_added():
    sched = check("t", {**TARGET, "Nats-Schedule-TTL": "5m", "Nats-Schedule-Source": "foo.c",
                        "Nats-Schedule-Rollup": "sub"})
    assert (sched.pattern, sched.target, sched.ttl, sched.source, sched.rollup, sched.time_zone) == \
        (AT, "foo.b", "5m", "foo.c", "sub", None)
    assert sched.next_fire == ns("2030-01-01T00:00:00+00:00") and not sched.repeating
    assert sched.hdr.endswith(b"Nats-Schedule-Rollup: sub\r\nNats-Rollup: sub\r\n\r\n")
    kept = check("s", {**TARGET, "Nats-Rollup": "SUB"})
    assert kept.hdr == headers.build({**TARGET, "Nats-Rollup": "SUB"})
    # an empty Nats-Rollup counts as none: nats-server appends another
    empty = check("s", {**TARGET, "Nats-Rollup": ""})
    assert empty.hdr.endswith(b"Nats-Rollup: \r\nNats-Rollup: sub\r\n\r\n")


def test_error_json_matches_nats_server():
    with pytest.raises(ApiError) as info:
        check("s", {"Nats-Schedule": "0 0 * * * *", "Nats-Schedule-Target": "foo.b",
                    "Nats-Schedule-Time-Zone": "Mars/Base"})
    assert info.value.to_dict() == {"code": 400, "err_code": 10223,
                                    "description": "message schedules time zone is invalid"}


# ---- fire times --------------------------------------------------------------------------

def fire_after(pattern: str, start: str, tz: str | None = None) -> str:
    fire, repeating = cron.first_fire(pattern, tz, ns(start), None)
    assert repeating
    return cron.format_rfc3339(fire, tz)


@pytest.mark.parametrize("pattern,start,expected", [
    ("0 0 * * * *", "2024-01-01T10:15:00+00:00", "2024-01-01T11:00:00Z"),
    ("@hourly", "2024-01-01T23:59:59+00:00", "2024-01-02T00:00:00Z"),
    ("@daily", "2024-01-31T12:00:00+00:00", "2024-02-01T00:00:00Z"),
    ("@midnight", "2024-12-31T00:00:00+00:00", "2025-01-01T00:00:00Z"),
    ("@weekly", "2024-01-03T00:00:00+00:00", "2024-01-07T00:00:00Z"),   # a Wednesday -> Sunday
    ("@monthly", "2024-01-31T00:00:00+00:00", "2024-02-01T00:00:00Z"),
    ("@yearly", "2024-06-01T00:00:00+00:00", "2025-01-01T00:00:00Z"),
    ("@annually", "2024-06-01T00:00:00+00:00", "2025-01-01T00:00:00Z"),
    ("0 0 0 31 * *", "2024-04-01T00:00:00+00:00", "2024-05-31T00:00:00Z"),  # April has no 31st
    ("0 0 0 29 2 *", "2024-03-01T00:00:00+00:00", "2028-02-29T00:00:00Z"),  # next leap year
    ("0 0 0 29 2 *", "2024-02-28T12:00:00+00:00", "2024-02-29T00:00:00Z"),
    ("0 0 12 28 * *", "2023-02-28T13:00:00+00:00", "2023-03-28T12:00:00Z"),
    ("0 0 0 28-31 2 *", "2023-02-28T12:00:00+00:00", "2024-02-28T00:00:00Z"),
    ("*/15 * * * * *", "2024-01-01T00:00:07+00:00", "2024-01-01T00:00:15Z"),
    ("5-10/2 * * * * *", "2024-01-01T00:00:07+00:00", "2024-01-01T00:00:09Z"),
    ("5/20 * * * * *", "2024-01-01T00:00:26+00:00", "2024-01-01T00:00:45Z"),
    ("0 0 0 1 jan-mar sun", "2024-02-02T00:00:00+00:00", "2024-02-04T00:00:00Z"),  # dom OR dow
    ("0 0 0 13 * fri", "2024-09-14T00:00:00+00:00", "2024-09-20T00:00:00Z"),
    ("0 0 0 ? * MON-FRI", "2024-01-06T00:00:00+00:00", "2024-01-08T00:00:00Z"),  # Sat -> Mon
    ("0 30 9 * * *", "2024-01-01T09:30:00+00:00", "2024-01-02T09:30:00Z"),       # strictly after
    ("0 0 0 1 1,7 *", "2024-02-01T00:00:00+00:00", "2024-07-01T00:00:00Z"),
])
def test_cron_next_fire(pattern, start, expected):
    assert fire_after(pattern, start) == expected


def test_cron_without_a_time_in_five_years_is_invalid():
    # 2100 is not a leap year: from March 2096 the next 29 February is in 2104
    with pytest.raises(ValueError):
        cron.first_fire("0 0 0 29 2 *", None, ns("2096-03-01T00:00:00+00:00"), None)
    assert cron.first_fire("0 0 0 29 2 *", None, ns("2095-03-01T00:00:00+00:00"), None)[0] == \
        ns("2096-02-29T00:00:00+00:00")


def test_cron_in_a_time_zone_and_across_dst():
    ny = "America/New_York"
    assert fire_after("0 0 9 * * *", "2024-01-01T12:00:00+00:00", ny) == "2024-01-01T09:00:00-05:00"
    # 02:30 does not exist on 2024-03-10 in New York: that day is skipped
    assert fire_after("0 30 2 * * *", "2024-03-09T17:00:00+00:00", ny) == "2024-03-11T02:30:00-04:00"
    assert fire_after("0 30 3 * * *", "2024-03-09T17:00:00+00:00", ny) == "2024-03-10T03:30:00-04:00"
    # 01:30 happens twice on 2024-11-03: it fires at both, as Go's arithmetic does
    first, _ = cron.first_fire("0 30 1 * * *", ny, ns("2024-11-02T17:00:00+00:00"), None)
    assert first == ns("2024-11-03T05:30:00+00:00")
    second, _ = cron.first_fire("0 30 1 * * *", ny, first, None)
    assert second == ns("2024-11-03T06:30:00+00:00")
    assert cron.format_rfc3339(second, ny) == "2024-11-03T01:30:00-05:00"
    # the daily midnight still lands on local midnight after the change
    assert fire_after("@daily", "2024-03-10T12:00:00+00:00", ny) == "2024-03-11T00:00:00-04:00"
    assert fire_after("@hourly", "2024-01-01T00:10:00+00:00", "Asia/Kolkata") == "2024-01-01T06:00:00+05:30"
    # London in winter is offset 0: Go writes Z
    assert fire_after("0 0 12 * * *", "2024-01-01T00:00:00+00:00", "Europe/London") == "2024-01-01T12:00:00Z"
    assert fire_after("0 0 12 * * *", "2024-07-01T00:00:00+00:00", "Europe/London") == "2024-07-01T12:00:00+01:00"


def test_cron_matches_a_brute_force_search():
    zone = ZoneInfo("Europe/Berlin")
    pattern = "0 */20 1-3 * * mon,wed"
    start = ns("2024-03-28T00:00:00+00:00")
    fire, _ = cron.first_fire(pattern, "Europe/Berlin", start, None)
    second = start // S + 1
    while True:
        local = datetime.fromtimestamp(second, zone)
        if (local.second == 0 and local.minute % 20 == 0 and 1 <= local.hour <= 3
                and local.isoweekday() in (1, 3)):
            break
        second += 60 - local.second if local.second else 60
    assert fire == second * S


def test_every_and_at():
    start = ns("2024-01-01T00:00:00+00:00")
    assert cron.first_fire("@every 90s", None, start + 400_000_000, None) == (start + 90 * S, True)
    assert cron.first_fire("@every 90s", None, start + 500_000_000, None) == (start + 91 * S, True)
    assert cron.first_fire("@every 1h30m", None, start, None)[0] == start + 5400 * S
    assert cron.first_fire("@every 1.5s", None, start, None)[0] == start + 1_500_000_000
    # a repeating time already past is counted from now instead
    assert cron.first_fire("@every 10s", None, start, start + 100 * S) == (start + 110 * S, True)
    assert cron.first_fire("@hourly", None, start, start + 7000 * S)[0] == start + 7200 * S
    at = cron.first_fire("@at 2024-02-29T23:59:59.25+05:30", None, start, start * 2)
    assert at == (ns("2024-02-29T18:29:59+00:00") + 250_000_000, False)
    sched = check("s", {"Nats-Schedule": "@every 2s", "Nats-Schedule-Target": "foo.b"})
    assert sched.repeating and sched.next_fire == (NOW // S) * S + 2 * S
    assert sched.next_after(sched.next_fire) == sched.next_fire + 2 * S
    assert check("s", TARGET).next_after(NOW) is None


@pytest.mark.parametrize("text,expected", [
    ("1s", S), ("1.5s", 1_500_000_000), ("2h45m", 9900 * S), ("100ms", 10 ** 8), ("1µs", 1000),
    ("0", 0), ("+3m", 180 * S), ("-1s", -S), (".5s", S // 2)])
def test_go_durations(text, expected):
    assert cron.parse_go_duration(text) == expected


@pytest.mark.parametrize("text", ["", "1", "s", "1x", "1s ", " 1s", "1..5s", "-", "."])
def test_bad_go_durations(text):
    with pytest.raises(ValueError):
        cron.parse_go_duration(text)


@pytest.mark.parametrize("text", ["2024-02-30T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:00:60Z",
                                  "2024-01-01T00:00:00+25:00", "2024-1-01T00:00:00Z", "2024-01-01T00:00:00"])
def test_bad_rfc3339(text):
    with pytest.raises(ValueError):
        cron.first_fire("@at " + text, None, 0, None)


@pytest.mark.parametrize("text, fire", [
    ("2024-01-01T00:00:00+24:00", "2023-12-31T00:00:00Z"), ("2024-01-01T1:00:00Z", "2024-01-01T01:00:00Z"),
    ("2024-01-01T01:00:00,5Z", "2024-01-01T01:00:00.5Z"), ("2024-01-01T00:00:00+23:60", "2023-12-31T00:00:00Z")])
def test_at_times_as_go_parses_them(text, fire):
    """What time.Parse(time.RFC3339) takes beyond the strict form, nats-server takes too."""
    assert cron.first_fire("@at " + text, None, 0, None) == (parse_time_ns(fire), False)


# ---- fired messages ----------------------------------------------------------------------

def test_fired_one_shot_as_nats_server_writes_it():
    sched = check("t", {"X-A": "1", "Nats-Msg-Id": "m1", "Nats-Expected-Stream": "T",
                        "Nats-Schedule": "@at 2001-01-01T00:00:00Z", "Nats-Schedule-Target": "foo.b",
                        "Nats-Schedule-TTL": "5m", "Nats-Schedule-Rollup": "sub",
                        "Nats-Expected-Last-Sequence": "0", "X-Z": "2"})
    fired = schedules.fire("foo.a", sched.hdr, b"payload", sched.next_fire, NOW, lambda subject: None)
    assert fired == schedules.Fired(
        "foo.b", b"NATS/1.0\r\nX-A: 1\r\nX-Z: 2\r\nNats-Scheduler: foo.a\r\nNats-Schedule-Next: purge\r\n"
                 b"Nats-TTL: 5m\r\nNats-Rollup: sub\r\n\r\n", b"payload", None)
    assert schedules.check_scheduler_headers(fired.hdr, subject="foo.b", allow_msg_schedules=True) == "foo.a"


def test_fired_repeating_from_a_source():
    sched = check("s", {"X-A": "1", "Nats-Schedule": "@every 2s", "Nats-Schedule-Target": "foo.b",
                        "Nats-Schedule-Source": "foo.c"})
    fire_at = ns("2026-11-22T05:10:54+00:00")
    source = (headers.build({"X-S": "1", "Nats-Msg-Id": "src1", "Nats-Schedule-Zzz": "q"}), b"SRC")
    loaded = []
    fired = schedules.fire("foo.a", sched.hdr, b"own", fire_at, fire_at,
                           lambda subject: loaded.append(subject) or source)
    assert loaded == ["foo.c"]
    assert fired == schedules.Fired(
        "foo.b", b"NATS/1.0\r\nX-S: 1\r\nNats-Scheduler: foo.a\r\nNats-Schedule-Next: 2026-11-22T05:10:56Z\r\n\r\n",
        b"SRC", fire_at + 2 * S)
    # no last message on the source subject: the schedule's own payload and headers
    own = schedules.fire("foo.a", sched.hdr, b"own", fire_at, fire_at, lambda subject: None)
    assert own.data == b"own" and own.hdr.startswith(b"NATS/1.0\r\nX-A: 1\r\nNats-Scheduler: foo.a\r\n")
    # a source message without headers
    bare = schedules.fire("foo.a", sched.hdr, b"own", fire_at, fire_at, lambda subject: (None, b"v"))
    assert bare.hdr == b"NATS/1.0\r\nNats-Scheduler: foo.a\r\nNats-Schedule-Next: 2026-11-22T05:10:56Z\r\n\r\n"


def test_fired_cron_next_in_its_zone():
    sched = check("t", {"Nats-Schedule": "* * * * * *", "Nats-Schedule-Target": "foo.b",
                        "Nats-Schedule-Time-Zone": "Asia/Kolkata", "Nats-Schedule-TTL": "never"})
    fire_at = ns("2026-11-22T05:10:59+00:00")
    fired = schedules.fire("foo.a", sched.hdr, b"own", fire_at, fire_at, lambda subject: None)
    assert fired.hdr == (b"NATS/1.0\r\nNats-Scheduler: foo.a\r\nNats-Schedule-Next: 2026-11-22T10:41:00+05:30\r\n"
                         b"Nats-TTL: never\r\n\r\n")
    assert fired.next_fire == fire_at + S


def test_invalid_stored_schedule_does_not_fire():
    for hdrs in ({"X": "1"}, {"Nats-Schedule": "bogus", "Nats-Schedule-Target": "foo.b"},
                 {"Nats-Schedule": AT}, {**TARGET, "Nats-Schedule-TTL": "1ms"}):
        assert schedules.fire("foo.a", headers.build(hdrs), b"", NOW, NOW, lambda subject: None) is None


def test_scheduler_header_pair():
    ok = headers.build({"Nats-Scheduler": "foo.a", "Nats-Schedule-Next": "purge"})
    assert schedules.check_scheduler_headers(ok, subject="foo.b", allow_msg_schedules=True) == "foo.a"
    assert schedules.check_scheduler_headers(headers.build({"X": "1"}), subject="foo.b",
                                             allow_msg_schedules=False) is None


# ---- table and sched.db ------------------------------------------------------------------

def test_table_due_and_next_fire():
    table = schedules.ScheduleTable()
    assert table.next_fire() is None and table.due(10 ** 20) == []
    table.add("a", 5, 300)
    table.add("b", 2, 100)
    table.add("c", 9, 200)
    assert table.next_fire() == 100
    assert table.due(99) == []
    assert table.due(250) == [("b", 2), ("c", 9)]
    assert table.due(250) == [("b", 2), ("c", 9)]  # still there until handled
    table.add("b", 7, 1000)                          # replaced: new seq and time
    table.remove("c")
    assert table.next_fire() == 300
    assert table.due(1000) == [("a", 5), ("b", 7)]
    assert table.remove_seq(5) and not table.remove_seq(5)
    assert len(table) == 1 and table.get("b") == (7, 1000) and "a" not in table
    for round_ in range(500):                        # stale heap rows are compacted away
        table.add("b", 7, 1000 + round_)
    assert len(table.heap) < 200 and table.next_fire() == 1499


def test_sched_db_bytes():
    table = schedules.ScheduleTable()
    table.add("foo.a", 300, 1)
    table.add("x", 2, -1)
    data = table.encode(301)
    expected = (struct.pack("<BQQ", 1, 2, 301)
                + struct.pack("<H", 1) + b"x" + bytes([0x01]) + bytes([0x02])
                + struct.pack("<H", 5) + b"foo.a" + bytes([0x02]) + bytes([0xAC, 0x02]))
    assert data == expected
    decoded, high_seq = schedules.ScheduleTable.decode(data)
    assert high_seq == 301 and decoded.entries == table.entries


def test_sched_db_round_trip_and_damage():
    table = schedules.ScheduleTable()
    for number in range(50):
        table.add(f"sched.{number}", number * 7 + 1, NOW + number * 3 * S)
    data = table.encode(400)
    decoded, high_seq = schedules.ScheduleTable.decode(data)
    assert high_seq == 400 and decoded.entries == table.entries and decoded.next_fire() == NOW
    empty = schedules.ScheduleTable().encode(0)
    assert empty == b"\x01" + bytes(16)
    for bad in (data[:10], b"\x02" + data[1:], data[:-1], data[:20]):
        with pytest.raises(CorruptFile):
            schedules.ScheduleTable.decode(bad)


# ---- against the reference server --------------------------------------------------------

@pytest.mark.natsserver
def test_header_errors_match_nats_server(tmp_path):
    natsserver = pytest.importorskip("natsserver")
    nats = pytest.importorskip("nats")
    natsserver.require_nats_server()
    answers = []

    async def run(url):
        nc = await nats.connect(url)
        try:
            current = None
            for kind, hdrs, _ in CASES:
                if kind != current:
                    if current is not None:
                        await nc.request("$JS.API.STREAM.DELETE.SCHED", b"", timeout=2)
                    cfg = {"name": "SCHED", "subjects": ["foo.>"], "storage": "memory",
                           "allow_msg_schedules": kind != "n", "allow_rollup_hdrs": kind != "n",
                           "allow_msg_ttl": kind == "t"}
                    reply = await nc.request("$JS.API.STREAM.CREATE.SCHED", json.dumps(cfg).encode(), timeout=2)
                    assert "error" not in json.loads(reply.data), reply.data
                    current = kind
                reply = json.loads((await nc.request("foo.a", b"x", headers=hdrs, timeout=2)).data)
                stored = None
                if "error" not in reply and hdrs.get("Nats-Schedule"):
                    got = json.loads((await nc.request("$JS.API.STREAM.MSG.GET.SCHED",
                                                       json.dumps({"seq": reply["seq"]}).encode(),
                                                       timeout=2)).data)
                    stored = base64.b64decode(got["message"]["hdrs"])
                answers.append((reply.get("error"), stored))
        finally:
            await nc.close()

    with natsserver.nats_server(tmp_path / "server") as server:
        asyncio.run(run(server.url))
    for (kind, hdrs, _), (error, stored) in zip(CASES, answers, strict=True):
        try:
            sched = check(kind, hdrs, now=time.time_ns())
        except ApiError as exc:
            assert exc.to_dict() == error, (kind, hdrs)
            continue
        assert error is None, (kind, hdrs, error)
        if stored is not None:
            assert sched.hdr == stored, (kind, hdrs)
