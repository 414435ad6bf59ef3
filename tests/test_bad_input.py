"""Bad input on every ``$JS.API`` subject, asked of nats-server and of ``jsstore serve``.

The matrix is made, not written: for every subject of tests/test_api_subjects.py's list,
each mutation that applies to it -- numbers out of range or of the wrong kind in every
numeric field of its request (2^63, 2^64, -1, -2^63, 1e300, a fraction, a string), names
that are not names (dots, wildcards, spaces, unicode, 300 characters, path separators) in
the subject and in the body, a body name that disagrees with the subject's, bodies that are
not JSON or JSON of the wrong type, a body just under the maximum payload, and the request
sent without a reply subject.

One nats-server and one ``jsstore serve`` answer the whole matrix; each case that may change
something gets a fresh stream (two messages, a pull consumer) that is deleted after it, the
others (reads, the subjects a single server does not serve) share one.  Answers are
compared with the differential runner's normaliser.  On the jsstore side the store
directory's checksum (every file's content) must be the same before and after a case
whenever nats-server answered it with an error, or the request only reads: a refused
request changes nothing on disk.  A request without a reply subject is answered by
neither server, but nats-server carries it out all the same (a purge purges): the stream's
and the consumer's info after it must be the same on both sides.

Requests over the maximum payload and protocol-level abuse are in test_server_abuse.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field

import pytest

import test_differential as differential
from scenarios import API, Step
from test_api_subjects import CLUSTER, NATS_SERVER_API, SYSTEM

natsserver = pytest.importorskip("natsserver")
pytest.importorskip("nats")
import jsstoreserver  # noqa: E402

pytestmark = pytest.mark.natsserver

SHARED_KINDS = (CLUSTER, SYSTEM)       # answered without touching a stream
BIG_NUMBERS = [2 ** 63, 2 ** 64, -1, -(2 ** 63), 1e300, 1.5, "7"]
BAD_NAMES = ["a.b", "*", ">", "ünï", "n" * 300, "a/b", "..", "a\\b"]
BODY_ONLY_NAMES = ["a b", "a\tb", ""]       # a subject token cannot hold these
NEAR_MAX = 1024 * 1024 - 4096               # a body just under max_payload (1 MiB)
RESTORE_ID = re.compile(rb'("\$JS\.SNAPSHOT\.RESTORE\..*)\.[0-9A-Za-z]+"')   # a random id
WRONG_BODIES = [b"{bad", b"[]", b'"text"', b"123", b"null", b"{}}", b"\xff\xfe"]

STREAM_NUMBERS = ["max_msgs", "max_bytes", "max_age", "max_msg_size", "num_replicas",
                  "duplicate_window", "max_consumers", "max_msgs_per_subject"]
CONSUMER_NUMBERS = ["ack_wait", "max_deliver", "max_ack_pending", "opt_start_seq",
                    "inactive_threshold", "max_waiting", "max_batch", "max_expires",
                    "rate_limit_bps"]


def stream_body(s: str) -> dict:
    return {"name": s, "subjects": [f"{s.lower()}.>"], "allow_direct": True}


def consumer_body(s: str, c: str) -> dict:
    return {"stream_name": s, "config": {"durable_name": c, "ack_policy": "explicit"}}


# subject pattern -> (subject with {s} {c}, body maker (s, c) -> dict or None,
#                     numeric fields of the body as paths, whether the request is a read)
@dataclass(frozen=True)
class Api:
    subject: str
    body: object = None             # callable (s, c) -> dict, or None: no body
    numbers: tuple = ()             # paths ("config.max_deliver") of numeric fields
    names: tuple = ()               # paths of the body's name fields ({s} or {c})
    read: bool = False              # a read: never changes the store


APIS: dict[str, Api] = {
    "$JS.API.INFO": Api("INFO", read=True),
    "$JS.API.STREAM.CREATE.*": Api(
        "STREAM.CREATE.{n}", lambda s, c: stream_body(s), tuple(STREAM_NUMBERS), ("name",)),
    "$JS.API.STREAM.UPDATE.*": Api(
        "STREAM.UPDATE.{s}", lambda s, c: stream_body(s), tuple(STREAM_NUMBERS), ("name",)),
    "$JS.API.STREAM.NAMES": Api("STREAM.NAMES", lambda s, c: {"offset": 0},
                                ("offset",), read=True),
    "$JS.API.STREAM.LIST": Api("STREAM.LIST", lambda s, c: {"offset": 0}, ("offset",),
                               read=True),
    "$JS.API.STREAM.INFO.*": Api("STREAM.INFO.{s}", lambda s, c: {"offset": 0},
                                 ("offset",), read=True),
    "$JS.API.STREAM.DELETE.*": Api("STREAM.DELETE.{s}"),
    "$JS.API.STREAM.PURGE.*": Api("STREAM.PURGE.{s}", lambda s, c: {"keep": 1},
                                  ("keep", "seq")),
    "$JS.API.STREAM.SNAPSHOT.*": Api("STREAM.SNAPSHOT.{s}", lambda s, c: {"chunk_size": 0},
                                     ("chunk_size",)),
    "$JS.API.STREAM.RESTORE.*": Api(
        "STREAM.RESTORE.{n}", lambda s, c: {"config": stream_body(s), "state": {}}, (),
        ("config.name",)),
    "$JS.API.STREAM.MSG.DELETE.*": Api("STREAM.MSG.DELETE.{s}", lambda s, c: {"seq": 1},
                                       ("seq",)),
    "$JS.API.STREAM.MSG.GET.*": Api("STREAM.MSG.GET.{s}", lambda s, c: {"seq": 1}, ("seq",),
                                    read=True),
    "$JS.API.DIRECT.GET.*": Api("DIRECT.GET.{s}", lambda s, c: {"seq": 1},
                                ("seq", "batch", "max_bytes"), read=True),
    "$JS.API.DIRECT.GET.*.>": Api("DIRECT.GET.{s}.{l}.1", read=True),
    "$JS.API.CONSUMER.CREATE.*": Api(
        "CONSUMER.CREATE.{s}", lambda s, c: consumer_body(s, c),
        tuple("config." + f for f in CONSUMER_NUMBERS), ("stream_name",)),
    "$JS.API.CONSUMER.CREATE.*.>": Api(
        "CONSUMER.CREATE.{s}.{c}", lambda s, c: consumer_body(s, c),
        tuple("config." + f for f in CONSUMER_NUMBERS),
        ("stream_name", "config.durable_name")),
    "$JS.API.CONSUMER.DURABLE.CREATE.*.*": Api(
        "CONSUMER.DURABLE.CREATE.{s}.{c}", lambda s, c: consumer_body(s, c),
        ("config.max_deliver", "config.ack_wait"), ("stream_name", "config.durable_name")),
    "$JS.API.CONSUMER.NAMES.*": Api("CONSUMER.NAMES.{s}", lambda s, c: {"offset": 0},
                                    ("offset",), read=True),
    "$JS.API.CONSUMER.LIST.*": Api("CONSUMER.LIST.{s}", lambda s, c: {"offset": 0},
                                   ("offset",), read=True),
    "$JS.API.CONSUMER.INFO.*.*": Api("CONSUMER.INFO.{s}.{c}", read=True),
    "$JS.API.CONSUMER.DELETE.*.*": Api("CONSUMER.DELETE.{s}.{c}"),
    "$JS.API.CONSUMER.PAUSE.*.*": Api(
        "CONSUMER.PAUSE.{s}.{c}", lambda s, c: {"pause_until": "2099-01-01T00:00:00Z"},
        ("pause_until",)),
    "$JS.API.CONSUMER.UNPIN.*.*": Api("CONSUMER.UNPIN.{s}.{c}", lambda s, c: {"group": "g"}),
    "$JS.API.CONSUMER.MSG.NEXT.*.*": Api(
        "CONSUMER.MSG.NEXT.{s}.{c}", lambda s, c: {"batch": 1, "no_wait": True},
        ("batch", "max_bytes", "expires", "idle_heartbeat")),
    "$JS.API.CONSUMER.RESET.*.*": Api("CONSUMER.RESET.{s}.{c}", lambda s, c: {"seq": 1},
                                      ("seq",)),
}
# the clustering and system account subjects take no body a single server reads
for _pattern, _kind in NATS_SERVER_API.items():
    if _pattern not in APIS:
        _tail = _pattern[len(API):].replace("*.*", "{s}.{c}").replace("*", "{s}")
        APIS[_pattern] = Api(_tail)


@dataclass
class Case:
    name: str
    api: str                        # the pattern of NATS_SERVER_API
    subject: str                    # with {s} and {c} still to fill in (or filled)
    body: bytes
    reply: bool = True
    extra_names: list = field(default_factory=list)   # streams the case may make


def _set(body: dict, path: str, value) -> dict:
    body = json.loads(json.dumps(body))
    node = body
    keys = path.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value
    return body


def _encode(body) -> bytes:
    return b"" if body is None else json.dumps(body, separators=(",", ":")).encode()


def make_cases() -> list[Case]:
    """The matrix: every subject x every mutation that applies to it."""
    cases: list[Case] = []
    for pattern, api in APIS.items():
        body = api.body("{s}", "{c}") if api.body else None
        base = api.subject.replace("{n}", "{s}")
        # numbers
        for path in api.numbers:
            for number in BIG_NUMBERS:
                cases.append(Case(f"{pattern} {path}={number!r}", pattern, base,
                                  _encode(_set(body, path, number))))
        # names in the subject (and the body, agreeing), then in the body only
        if "{s}" in base or "{n}" in api.subject:
            for bad in BAD_NAMES:
                subject = base.replace("{s}", bad)
                named = body
                for path in api.names:
                    if path.endswith("name") and not path.endswith("durable_name"):
                        named = _set(named, path, bad)
                cases.append(Case(f"{pattern} stream name {bad[:12]!r}", pattern, subject,
                                  _encode(named), extra_names=[bad]))
        if "{c}" in base:
            for bad in BAD_NAMES:
                subject = base.replace("{c}", bad)
                named = body
                for path in api.names:
                    if path.endswith("durable_name"):
                        named = _set(named, path, bad)
                cases.append(Case(f"{pattern} consumer name {bad[:12]!r}", pattern, subject,
                                  _encode(named)))
        for path in api.names:
            for bad in BODY_ONLY_NAMES + ["OTHER"]:
                cases.append(Case(f"{pattern} body {path}={bad!r}", pattern, base,
                                  _encode(_set(body, path, bad)), extra_names=[bad]))
        # bodies
        for raw in WRONG_BODIES:
            cases.append(Case(f"{pattern} body {raw[:8]!r}", pattern, base, raw))
        if body is not None:
            for path in api.names or tuple(body)[:1]:
                cases.append(Case(f"{pattern} {path} of the wrong type", pattern, base,
                                  _encode(_set(body, path, [1]))))
        padded = _encode(body) if body is not None else b"{}"
        padded = padded[:-1] + b" " * (NEAR_MAX - len(padded)) + b"}"
        cases.append(Case(f"{pattern} near max_payload", pattern, base, padded))
        cases.append(Case(f"{pattern} junk near max_payload", pattern, base,
                          b"{" + b"x" * (NEAR_MAX - 1)))
        # no reply subject
        cases.append(Case(f"{pattern} no reply", pattern, base, _encode(body), reply=False))
    return cases


CASES = make_cases()


# -- the two servers --------------------------------------------------------------------------
def _checksum(root: str) -> dict[str, str]:
    sums = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                sums[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return sums


class Both:
    """One nats-server and one jsstore serve, one nats-py connection to each."""

    def __init__(self, tmp):
        self.loop = asyncio.new_event_loop()
        self.real_server = natsserver.start_nats_server(tmp / "nats-server")
        self.mine_server = jsstoreserver.start_jsstore_server(tmp / "jsstore")
        self.real = differential.ServerSide(self.loop, self.real_server.url)
        self.mine = differential.ServerSide(self.loop, self.mine_server.url)
        self.store = os.fspath(tmp / "jsstore")
        self.shared = ("R", "RC")       # the stream and consumer of the cases that read

    def ask(self, subject: str, body: bytes, reply: bool = True):
        """Both servers' answers (normalised lists), asked at the same time."""
        step = Step(subject, body)
        if not reply:
            async def send(side):
                await side.nc.publish(subject, body)
                await side.nc.flush()
                return []

            async def both_sent():
                return await asyncio.gather(send(self.real), send(self.mine))
            real, mine = self.loop.run_until_complete(both_sent())
            return real, mine

        async def both_asked():
            return await asyncio.gather(self.real._request(step, body, subject),
                                        self.mine._request(step, body, subject))
        real, mine = self.loop.run_until_complete(both_asked())
        raw = "DIRECT.GET." in subject
        return ([differential.normalise(h, RESTORE_ID.sub(rb'\1.<id>"', d), raw)
                 + (differential.mask_ack(r),) for h, d, r in real],
                [differential.normalise(h, RESTORE_ID.sub(rb'\1.<id>"', d), raw)
                 + (differential.mask_ack(r),) for h, d, r in mine])

    def close(self):
        self.real.close()
        self.mine.close()
        self.real_server.stop()
        self.mine_server.stop()
        self.loop.close()


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    natsserver.require_nats_server()
    servers = Both(tmp_path_factory.mktemp("badinput"))
    # an unanswered case waits this long on both servers at once (the runner's 0.5 s
    # would make the matrix take minutes); both servers answer within milliseconds here
    waited = differential.FIRST_ANSWER_TIMEOUT
    _prepare(servers, *servers.shared)
    differential.FIRST_ANSWER_TIMEOUT = 0.2
    yield servers
    differential.FIRST_ANSWER_TIMEOUT = waited
    servers.close()


def _prepare(both: Both, s: str, c: str) -> None:
    waited, differential.FIRST_ANSWER_TIMEOUT = differential.FIRST_ANSWER_TIMEOUT, 5.0
    try:
        _prepare_steps(both, s, c)
    finally:
        differential.FIRST_ANSWER_TIMEOUT = waited


def _prepare_steps(both: Both, s: str, c: str) -> None:
    steps = [(f"{API}STREAM.CREATE.{s}", _encode(stream_body(s))),
             (f"{s.lower()}.1", b"one"), (f"{s.lower()}.2", b"two"),
             (f"{API}CONSUMER.CREATE.{s}.{c}", _encode(consumer_body(s, c)))]
    for subject, body in steps:
        real, mine = both.ask(subject, body)
        assert real and mine, f"preparing {subject}: no answer"


# cases whose answers differ, and why (the runner checks that they still do)
# case name -> why jsstore answers it differently ("BUG: ..." while a fix is waiting); the
# runner insists a listed case still differs.  Empty: every case answers as nats-server.
KNOWN_DIFFERENCES: dict[str, str] = {}


def _is_error(answers) -> bool:
    for _, body, _ in answers:
        if isinstance(body, list) and any(key == "error" for key, _ in body):
            return True
    return False


def _show(answers) -> str:
    return "\n".join(f"    {a!r}"[:600] for a in answers) or "    (none)"


def test_matrix_covers_every_api_subject():
    covered = {case.api for case in CASES}
    assert covered == set(NATS_SERVER_API)
    assert len(CASES) > 400


@pytest.mark.parametrize("number", range(0, len(CASES), 25))
def test_bad_input_answers_as_nats_server(both, number):
    """25 cases of the matrix a test (a failure names the case)."""
    mismatches = []
    for i in range(number, min(number + 25, len(CASES))):
        case = CASES[i]
        # a case that cannot change anything (a read, a subject a single server does not
        # serve) asks about the stream prepared once; every other one gets its own
        fresh = not (APIS[case.api].read or NATS_SERVER_API[case.api] in SHARED_KINDS)
        s, c = (f"S{i}", f"C{i}") if fresh else both.shared
        if fresh:
            _prepare(both, s, c)
        subject = API + case.subject.format(s=s, c=c, l=s.lower())
        body = case.body.replace(b"{s}", s.encode()).replace(b"{c}", c.encode())
        before = _checksum(both.store)
        real, mine = both.ask(subject, body, case.reply)
        if real != mine:
            mismatches.append(f"{case.name}: {subject[:80]} {body[:120]!r}\n"
                              f"  nats-server:\n{_show(real)}\n  jsstore:\n{_show(mine)}")
        if not case.reply:
            # nats-server carries out a request without a reply subject (it only has
            # nowhere to answer): both sides must have done the same to the stream and
            # the consumer; these requests also make the answers wait for it
            for after in (f"{API}STREAM.INFO.{s}", f"{API}CONSUMER.INFO.{s}.{c}"):
                real_after, mine_after = both.ask(after, b"")
                for _ in range(20):
                    # (nats-server may still be carrying it out: a consumer is deleted
                    # in the background)
                    if real_after == mine_after:
                        break
                    time.sleep(0.05)
                    real_after, mine_after = both.ask(after, b"")
                if real_after != mine_after:
                    mismatches.append(f"{case.name}: {after} afterwards differs\n"
                                      f"  nats-server:\n{_show(real_after)}\n"
                                      f"  jsstore:\n{_show(mine_after)}")
        if _is_error(real) or APIS[case.api].read:
            after = _checksum(both.store)
            if after != before:
                changed = sorted(k for k in set(before) | set(after)
                                 if before.get(k) != after.get(k))
                mismatches.append(f"{case.name}: the store changed: {changed}")
        for name in [s, *case.extra_names] if fresh else case.extra_names:
            if name and "." not in name and "*" not in name and ">" not in name \
                    and " " not in name and "\t" not in name:
                both.ask(f"{API}STREAM.DELETE.{name}", b"")
    known = {m.split(":")[0] for m in mismatches} & set(KNOWN_DIFFERENCES)
    fixed = [CASES[i].name for i in range(number, min(number + 25, len(CASES)))
             if CASES[i].name in KNOWN_DIFFERENCES and CASES[i].name not in known]
    assert not fixed, f"listed as different but equal now (remove them): {fixed}"
    mismatches = [m for m in mismatches if m.split(":")[0] not in KNOWN_DIFFERENCES]
    assert not mismatches, "\n".join(mismatches)
