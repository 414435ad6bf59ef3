"""RFC 3339 times in requests and headers, against `jsstore serve` and nats-server alike:
nats-server reads them all as Go's time.Parse(time.RFC3339) does (time.Time's JSON
decoding takes the same texts), so a one-digit hour, a ',' before the fraction or an offset
of +23:60 pass wherever a time is read, and the errors carry Go's ParseError text."""

from __future__ import annotations

import json

import pytest

from bothservers import run, server  # noqa: F401  (the fixture)

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver

_LAYOUT = '"2006-01-02T15:04:05Z07:00"'

# opt_start_time of CONSUMER.CREATE: the stored text, or the error description
CREATE_TIMES = [
    ("2024-01-01T01:00:00Z", "2024-01-01T01:00:00Z"),
    ("2024-01-01T1:00:00Z", "2024-01-01T01:00:00Z"),
    ("2024-01-01T01:00:00,5Z", "2024-01-01T01:00:00.5Z"),
    ("2024-01-01T01:00:00.1234567891+02:00", "2024-01-01T01:00:00.123456789+02:00"),
    ("2024-01-01T01:00:00+25:00", 'invalid JSON: parsing time "2024-01-01T01:00:00+25:00": '
                                  'time zone offset hour out of range'),
    ("2024-01-01T24:00:00Z", 'invalid JSON: parsing time "2024-01-01T24:00:00Z": '
                             'hour out of range'),
    ("2024-02-30T01:00:00Z", 'invalid JSON: parsing time "2024-02-30T01:00:00Z": '
                             'day out of range'),
    ("2024-01-01t01:00:00Z", f'invalid JSON: parsing time "2024-01-01t01:00:00Z" as {_LAYOUT}: '
                             'cannot parse "t01:00:00Z" as "T"'),
]


def test_times_in_consumer_requests_and_direct_get(server):
    """Each time as a consumer's opt_start_time, then as CONSUMER.PAUSE's pause_until (the
    answer has it in UTC), then as DIRECT.GET's start_time (a time Go cannot read is a
    malformed request)."""
    async def main():
        nc = await nats.connect(server.url)
        await nc.request("$JS.API.STREAM.CREATE.S", json.dumps(
            {"name": "S", "subjects": ["s"], "allow_direct": True}).encode())
        await nc.request("s", b"x")
        out = []
        for i, (text, _expected) in enumerate(CREATE_TIMES):
            answer = json.loads((await nc.request("$JS.API.CONSUMER.CREATE.S", json.dumps(
                {"stream_name": "S", "config": {"name": f"C{i}", "deliver_policy": "by_start_time",
                                                "opt_start_time": text}}).encode())).data)
            created = answer["error"]["description"] if "error" in answer else \
                answer["config"]["opt_start_time"]
            paused = None
            if "error" not in answer:
                paused = json.loads((await nc.request(f"$JS.API.CONSUMER.PAUSE.S.C{i}", json.dumps(
                    {"pause_until": text}).encode())).data)["pause_until"]
            reply = await nc.request("$JS.API.DIRECT.GET.S", json.dumps(
                {"start_time": text}).encode())
            direct = (reply.headers or {}).get("Nats-Sequence") or (reply.headers or {}).get(
                "Description")
            out.append((created, paused, direct))
        await nc.close()
        return out

    out = run(main())
    for (text, expected), (created, paused, direct) in zip(CREATE_TIMES, out):
        assert created == expected, text
        if expected.startswith("invalid JSON"):
            assert (paused, direct) == (None, "Malformed Request"), text
        else:
            assert direct == "1", text
    assert [paused for _created, paused, _direct in out[:4]] == [
        "2024-01-01T01:00:00Z", "2024-01-01T01:00:00Z", "2024-01-01T01:00:00.5Z",
        "2023-12-31T23:00:00.123456789Z"]


SCHEDULES = [
    ("@at 2099-01-01T00:00:00Z", True), ("@at 2099-01-01T00:00:00+24:00", True),
    ("@at 2099-01-01T1:00:00Z", True), ("@at 2099-01-01T01:00:00,5Z", True),
    ("@at 2099-01-01T00:00:00+25:00", False), ("@at 2099-01-01T00:00:00+23:60", True),
    ("@at 2099-02-30T00:00:00Z", False),
]


def test_schedule_times_as_time_parse_reads_them(server):
    async def main():
        nc = await nats.connect(server.url)
        await nc.request("$JS.API.STREAM.CREATE.S", json.dumps(
            {"name": "S", "subjects": ["s.>"], "allow_msg_schedules": True,
             "allow_msg_ttl": True}).encode())
        answers = []
        for i, (pattern, _ok) in enumerate(SCHEDULES):
            reply = await nc.request(f"s.sched.{i}", b"x", headers={
                "Nats-Schedule": pattern, "Nats-Schedule-Target": f"s.target.{i}"})
            answers.append(json.loads(reply.data))
        await nc.close()
        return answers

    answers = run(main())
    seq = 0
    for (pattern, ok), answer in zip(SCHEDULES, answers):
        if ok:
            seq += 1
            assert answer == {"stream": "S", "seq": seq}, pattern
        else:
            assert answer["error"] == {"code": 400, "err_code": 10189,
                                       "description": "message schedules pattern is invalid"}
