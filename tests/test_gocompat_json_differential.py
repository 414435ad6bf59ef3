"""The JSON request bodies of the wire API, against the real nats-server.

For every request type the cases are generated from the Go type nats-server decodes the
body into (`jsstore.api.requests`, the consumer configuration and create request, the
pull request): a valid base body, then each field set to null, each field given a value
of the wrong JSON type, each field's name in other letter case, each nested struct's
fields null or wrong, an unknown field, duplicate keys, several values in a row, and
malformed texts. Each case goes to nats-server (through nats-py) and to jsstore (through
its router, as `test_differential` does), and the answers must be equal after removing
only what differs between any two servers (times, server ids, the random part of a
restore's deliver subject).
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest

import scenarios
from test_differential import (
    NO_RESPONDERS,
    JsstoreSide,
    ServerSide,
    is_no_responders,
    normalise,
)

natsserver = pytest.importorskip("natsserver")
from jsstore.api import requests   # noqa: E402
from jsstore.consumer import config as consumerconfig   # noqa: E402
from jsstore.consumer import create as consumercreate   # noqa: E402
from jsstore.consumer import pullrequests   # noqa: E402
from jsstore.gocompat import json as gojson   # noqa: E402
from jsstore.jetstream import account as jetstream   # noqa: E402

pytestmark = pytest.mark.natsserver

_RESTORE_SUBJECT = re.compile(rb"(\$JS\.SNAPSHOT\.RESTORE\.[^.\"]+\.)[A-Za-z0-9]+")
_SAMPLE_TIME = "2024-01-02T03:04:05Z"


# -- generating the cases ------------------------------------------------------------------
def zero(kind: gojson.GoType):
    """A value of the Go type that nats-server accepts as (near) zero."""
    if kind.kind in ("enum", "text_enum"):
        return json.loads(next(iter(kind.values))) if kind.kind == "enum" else next(iter(kind.values))
    return {"string": "", "bool": False, "int": 0, "time": _SAMPLE_TIME, "slice": [],
            "map": {}, "struct": {}}[kind.kind]


def wrong(kind: gojson.GoType):
    """A value of the wrong JSON type for the Go type."""
    return {"string": 5, "int": "x", "bool": "x", "time": 5, "slice": "x", "map": 5,
            "struct": 5, "enum": 5, "text_enum": 5}[kind.kind]


def _body(members) -> bytes:
    """JSON text of (name, value) pairs in order (duplicate names kept)."""
    return ("{" + ",".join(json.dumps(name) + ":" + json.dumps(value, separators=(",", ":"))
                           for name, value in members) + "}").encode()


def _other_case(name: str) -> str:
    return name.upper() if name != name.upper() else name.lower()


def body_cases(target: gojson.GoType, base: dict) -> list[tuple[str, bytes]]:
    """(label, body) for every way a body can exercise Go's decoding of `target`."""
    members = list(base.items())
    cases = [("base", _body(members))]
    for name, kind in target.fields.items():
        rest = [(key, value) for key, value in members if key != name]
        cases.append((f"{name}: null", _body(rest + [(name, None)])))
        cases.append((f"{name}: wrong type", _body(rest + [(name, wrong(kind))])))
        if kind.kind == "int":
            cases.append((f"{name}: 1.5", _body(rest + [(name, 1.5)])))
        value = base.get(name, zero(kind))
        cases.append((f"{name}: other case", _body(rest + [(_other_case(name), value)])))
        inner = kind if kind.kind == "struct" else (
            kind.element if kind.kind == "slice" and kind.element.kind == "struct" else None)
        for inner_name, inner_kind in (inner.fields.items() if inner else ()):
            for label, inner_value in (("null", None), ("wrong type", wrong(inner_kind))):
                nested = {inner_name: inner_value}
                cases.append((f"{name}.{inner_name}: {label}",
                              _body(rest + [(name, nested if kind.kind == "struct" else [nested])])))
    base_body = _body(members)
    first = members[0][0] if members else "offset"
    cases += [
        ("unknown field", _body(members + [("zz_unknown", 1)])),
        ("keys in other case", _body([(_other_case(key), value) for key, value in members])),
        ("duplicate: wrong then right", _body([(first, wrong(target.fields[first]))] + members)
         if first in target.fields else base_body),
        ("two values", base_body + b" " + _body([])),
        ("truncated", base_body[:-1]),
        ("trailing garbage", base_body + b"x"),
        ("not JSON", b"x"),
        ("empty object", b"{}"),
        ("null", b"null"),
        ("array", b"[1]"),
        ("number", b"5"),
        ("white space", b" "),
        ("empty body", b""),
        ("bad escape", b'{"zz":"\\q"}'),
        ("trailing comma", b'{"zz":1,}'),
        ("invalid UTF-8", b'{"zz":"\xff"}'),
    ]
    return cases


class RequestType:
    """One request type: the subject and base body of case `n` (unique names per case
    where the request creates something), and the Go type of the body."""

    def __init__(self, name, target, subject, base=None, many=False, tag="N"):
        self.name, self.target, self._subject, self._base = name, target, subject, base
        self.many, self.tag = many, tag

    def cases(self):
        for n, (label, body) in enumerate(body_cases(self.target, self.base(0))):
            yield label, self.subject(n + 1), self._rename(body, n + 1)

    def subject(self, n: int) -> str:
        return self._subject.replace("N#", f"{self.tag}{n}")

    def base(self, n: int) -> dict:
        return self._base(n) if callable(self._base) else dict(self._base or {})

    def _rename(self, body: bytes, n: int) -> bytes:
        """The case's body with its unique names (the base's "N0" becomes "<tag><n>")."""
        return body.replace(b"N0", f"{self.tag}{n}".encode())


_CONSUMER_BASE = {"stream_name": "S", "config": {"name": "N0", "ack_policy": "explicit"}}
REQUEST_TYPES = [
    RequestType("STREAM.CREATE", requests.STREAM_CONFIG_REQUEST, "$JS.API.STREAM.CREATE.N#",
                {"name": "N0", "subjects": ["n.N0"], "storage": "memory"}),
    RequestType("STREAM.UPDATE", requests.STREAM_CONFIG_REQUEST, "$JS.API.STREAM.UPDATE.U",
                {"name": "U", "subjects": ["u"], "storage": "memory"}),
    RequestType("STREAM.INFO", requests.STREAM_INFO, "$JS.API.STREAM.INFO.S",
                {"subjects_filter": "a.1", "offset": 0}),
    RequestType("STREAM.NAMES", requests.STREAM_NAMES, "$JS.API.STREAM.NAMES",
                {"subject": "a.1", "offset": 0}),
    RequestType("STREAM.LIST", requests.STREAM_LIST, "$JS.API.STREAM.LIST",
                {"subject": "a.1", "offset": 0}),
    RequestType("STREAM.DELETE", requests.STREAM_INFO, "$JS.API.STREAM.DELETE.GONE", {}),
    RequestType("STREAM.PURGE", requests.STREAM_PURGE, "$JS.API.STREAM.PURGE.G",
                {"filter": "g.none", "seq": 0, "keep": 0}),
    RequestType("STREAM.MSG.GET", requests.MSG_GET, "$JS.API.STREAM.MSG.GET.S", {"seq": 1}),
    RequestType("STREAM.MSG.DELETE", requests.MSG_DELETE, "$JS.API.STREAM.MSG.DELETE.S",
                {"seq": 99, "no_erase": True}),
    RequestType("STREAM.SNAPSHOT", requests.SNAPSHOT, "$JS.API.STREAM.SNAPSHOT.S",
                {"deliver_subject": "", "chunk_size": 1024}),
    RequestType("STREAM.RESTORE", requests.RESTORE, "$JS.API.STREAM.RESTORE.N#",
                {"config": {"name": "N0", "subjects": ["r.N0"], "storage": "memory"},
                 "state": {"messages": 0}}, tag="R"),
    RequestType("CONSUMER.CREATE", consumercreate.CREATE_REQUEST, "$JS.API.CONSUMER.CREATE.S.N#",
                _CONSUMER_BASE, tag="C"),
    RequestType("CONSUMER.DURABLE.CREATE", consumercreate.CREATE_REQUEST,
                "$JS.API.CONSUMER.DURABLE.CREATE.S.N#",
                {"stream_name": "S", "config": {"durable_name": "N0", "ack_policy": "explicit"}},
                tag="D"),
    RequestType("CONSUMER.INFO", requests.CONSUMERS, "$JS.API.CONSUMER.INFO.S.C", {}),
    RequestType("CONSUMER.DELETE", requests.CONSUMERS, "$JS.API.CONSUMER.DELETE.S.GONE", {}),
    RequestType("CONSUMER.NAMES", requests.CONSUMERS, "$JS.API.CONSUMER.NAMES.S", {"offset": 0}),
    RequestType("CONSUMER.LIST", requests.CONSUMERS, "$JS.API.CONSUMER.LIST.S", {"offset": 0}),
    RequestType("CONSUMER.PAUSE", requests.CONSUMER_PAUSE, "$JS.API.CONSUMER.PAUSE.S.PZ",
                {"pause_until": "2000-01-01T00:00:00Z"}),
    RequestType("CONSUMER.UNPIN", requests.CONSUMER_UNPIN, "$JS.API.CONSUMER.UNPIN.S.C",
                {"group": "g"}),
    RequestType("CONSUMER.RESET", requests.CONSUMER_RESET, "$JS.API.CONSUMER.RESET.S.RZ",
                {"seq": 2}),
    RequestType("CONSUMER.MSG.NEXT", pullrequests.GET_NEXT_REQUEST,
                "$JS.API.CONSUMER.MSG.NEXT.E.EC", {"batch": 1, "expires": 50_000_000,
                                                    "no_wait": True}),
    RequestType("DIRECT.GET", requests.MSG_GET, "$JS.API.DIRECT.GET.S", {"seq": 1},
                many=True),
    RequestType("INFO", requests.CONSUMERS, "$JS.API.INFO", {}),
]
SETUP = [
    ("$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["a.>"], "allow_direct": True}),
    ("a.1", "one"), ("a.2", "two"),
    ("$JS.API.STREAM.CREATE.U", {"name": "U", "subjects": ["u"], "storage": "memory"}),
    ("$JS.API.STREAM.CREATE.G", {"name": "G", "subjects": ["g.>"]}),
    ("$JS.API.STREAM.CREATE.E", {"name": "E", "subjects": ["e"]}),
    ("$JS.API.CONSUMER.CREATE.S.C", {"stream_name": "S", "config": {"name": "C"}}),
    ("$JS.API.CONSUMER.CREATE.S.PZ", {"stream_name": "S", "config": {"name": "PZ"}}),
    ("$JS.API.CONSUMER.CREATE.S.RZ", {"stream_name": "S", "config": {"name": "RZ"}}),
    ("$JS.API.CONSUMER.CREATE.E.EC", {"stream_name": "E", "config": {
        "name": "EC", "ack_policy": "explicit"}}),
]


# -- running them --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """A nats-server and an embedded jsstore, set up alike (SETUP)."""
    natsserver.require_nats_server()
    loop = asyncio.new_event_loop()
    directory = tmp_path_factory.mktemp("gocompat-json")
    with natsserver.nats_server(directory / "nats-server") as server:
        real = ServerSide(loop, server.url)
        js = jetstream.open(directory / "jsstore")
        mine = JsstoreSide(js)
        try:
            for subject, body in SETUP:
                payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                step = scenarios.Step(subject, payload)
                real.request(step, payload)
                mine.request(step, payload)
            yield real, mine
        finally:
            mine.close()
            js.close()
            real.close()
    loop.close()


def _comparable(answers, raw: bool):
    return [normalise(hdr, _RESTORE_SUBJECT.sub(rb"\1<id>", data), raw) for hdr, data, _ in answers]


@pytest.mark.parametrize("request_type", REQUEST_TYPES, ids=lambda r: r.name)
def test_bodies_are_answered_as_nats_server_answers_them(both, request_type):
    real_side, mine_side = both
    mismatches = []
    for label, subject, body in request_type.cases():
        step = scenarios.Step(subject, body, many=request_type.many)
        real = real_side.request(step, body)
        if is_no_responders(real):
            real = list(NO_RESPONDERS)
        mine = mine_side.request(step, body)
        raw = request_type.name == "DIRECT.GET"
        if request_type.name == "INFO":     # usage figures differ between the servers
            real, mine = ([(None, _type_and_error(data), "") for _, data, _ in side]
                          for side in (real, mine))
        if _comparable(real, raw) != _comparable(mine, raw):
            mismatches.append(f"{label}: {subject} {body!r}\n  nats-server: {real}\n"
                              f"  jsstore:     {mine}")
    assert not mismatches, f"{len(mismatches)} answers differ:\n" + "\n".join(mismatches)


def _type_and_error(data: bytes) -> bytes:
    answer = json.loads(data)
    return json.dumps({key: answer[key] for key in ("type", "error") if key in answer}).encode()


def test_every_request_type_is_covered():
    """Every body the API decodes has a row: the request types of `requests` and the
    consumer and pull request bodies."""
    covered = {request_type.target.name for request_type in REQUEST_TYPES}
    declared = {value.name for value in vars(requests).values()
                if isinstance(value, gojson.GoType) and value.kind == "struct"
                and value.name.startswith("server.JSApi")}
    assert declared <= covered, declared - covered
    assert {"server.StreamConfigRequest", "server.CreateConsumerRequest",
            "server.JSApiConsumerGetNextRequest"} <= covered
    assert consumerconfig.CONSUMER_CONFIG is consumercreate.CREATE_REQUEST.fields["config"]


# -- ack payloads carrying JSON -------------------------------------------------------------
NEXT_BODIES = [b'{"batch":1,"no_wait":true}', b'{"BATCH":1,"No_Wait":true}',
               b'{"batch":null,"no_wait":true}', b'{"batch":"x"}', b'{"batch":1',
               b'{"batch":1,"no_wait":true,"zz":1}', b'{"batch":1.5}', b"[1]",
               b'{"idle_heartbeat":100000000,"expires":100000000}']


def test_next_requests_in_acks_are_answered_as_nats_server_answers_them(both):
    """``+NXT <pull request>`` to a delivered message's ack subject: the body is read by
    the same json.Unmarshal as a pull request (what follows is the next delivery or the
    status nats-server sends)."""
    real_side, mine_side = both
    fetch = "$JS.API.CONSUMER.MSG.NEXT.AK.AKC"
    for side in both:
        create = scenarios.Step("$JS.API.STREAM.CREATE.AK", json.dumps(
            {"name": "AK", "subjects": ["ak"]}).encode())
        side.request(create, create.payload)
        consumer = scenarios.Step("$JS.API.CONSUMER.CREATE.AK.AKC", json.dumps(
            {"stream_name": "AK", "config": {"name": "AKC", "ack_policy": "explicit"}}).encode())
        side.request(consumer, consumer.payload)
        for n in range(2 * len(NEXT_BODIES)):
            publish = scenarios.Step("ak", b"m%d" % n)
            side.request(publish, publish.payload)
    mismatches = []
    for body in NEXT_BODIES:
        step = scenarios.Step(fetch, b'{"batch":1,"no_wait":true}')
        answers = [side.request(step, step.payload) for side in both]
        acks = [answer[0][2] for answer in answers]
        next_step = scenarios.Step("", b"+NXT " + body)
        real = real_side.request(next_step, next_step.payload, acks[0])
        mine = mine_side.request(next_step, next_step.payload, acks[1])
        if _comparable(real, False) != _comparable(mine, False):
            mismatches.append(f"+NXT {body!r}\n  nats-server: {real}\n  jsstore:     {mine}")
    assert not mismatches, "\n".join(mismatches)
