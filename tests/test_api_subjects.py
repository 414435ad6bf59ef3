"""Every ``$JS.API`` subject of nats-server, asked of nats-server and of ``jsstore serve``.

NATS_SERVER_API is nats-server's list of API subjects (2.15: the ``JSApi*`` subscription
subjects of server/jetstream_api.go and the ones it subscribes per stream or consumer),
each with what one server answers an ordinary account there.  TABLE gives every subject
scenarios (tests/scenarios.py's format) of requests on it: a valid body, invalid and edge
bodies, existing and missing streams and consumers.  Each scenario runs against a fresh
nats-server and a fresh ``jsstore serve``, both over NATS through nats-py, and the answers
are compared step by step as tests/test_differential.py compares them (JSON key order
included, only volatile fields masked); "no responders" is an answer like any other.

test_every_api_subject_has_scenarios fails when a subject of the list has no scenario in
TABLE, or none of its scenarios sends a request on it.
"""

from __future__ import annotations

import asyncio
import re

import pytest

import test_differential as differential
from scenarios import (
    API,
    Scenario,
    create,
    delete,
    direct,
    direct_subject,
    info,
    listing,
    msg_delete,
    msg_get,
    names,
    pub,
    purge,
    req,
    update,
)
from scenarios_consumers import CONSUMER, ack, ccreate, cdelete, cinfo, next_

natsserver = pytest.importorskip("natsserver")
pytest.importorskip("nats")
import jsstoreserver  # noqa: E402

pytestmark = pytest.mark.natsserver

# What a single nats-server answers an ordinary account on a subject:
ANSWERED = "answered"          # its handler's JSON (or, for DIRECT.GET, the message)
PER_STREAM = "per stream"      # subscribed per stream (allow_direct): else no responders
PER_CONSUMER = "per consumer"  # subscribed per consumer: else no responders
CLUSTER = "cluster"            # 503 / 10010 "JetStream clustering support required"
SYSTEM = "system account"      # served in the system account only: no responders

# nats-server 2.15's API subjects (its subscriptions; "*" is one token, ">" the rest)
NATS_SERVER_API: dict[str, str] = {
    "$JS.API.INFO": ANSWERED,
    "$JS.API.STREAM.CREATE.*": ANSWERED,
    "$JS.API.STREAM.UPDATE.*": ANSWERED,
    "$JS.API.STREAM.NAMES": ANSWERED,
    "$JS.API.STREAM.LIST": ANSWERED,
    "$JS.API.STREAM.INFO.*": ANSWERED,
    "$JS.API.STREAM.DELETE.*": ANSWERED,
    "$JS.API.STREAM.PURGE.*": ANSWERED,
    "$JS.API.STREAM.SNAPSHOT.*": ANSWERED,
    "$JS.API.STREAM.RESTORE.*": ANSWERED,
    "$JS.API.STREAM.MSG.DELETE.*": ANSWERED,
    "$JS.API.STREAM.MSG.GET.*": ANSWERED,
    "$JS.API.DIRECT.GET.*": PER_STREAM,
    "$JS.API.DIRECT.GET.*.>": PER_STREAM,
    "$JS.API.CONSUMER.CREATE.*": ANSWERED,
    "$JS.API.CONSUMER.CREATE.*.>": ANSWERED,
    "$JS.API.CONSUMER.DURABLE.CREATE.*.*": ANSWERED,
    "$JS.API.CONSUMER.NAMES.*": ANSWERED,
    "$JS.API.CONSUMER.LIST.*": ANSWERED,
    "$JS.API.CONSUMER.INFO.*.*": ANSWERED,
    "$JS.API.CONSUMER.DELETE.*.*": ANSWERED,
    "$JS.API.CONSUMER.PAUSE.*.*": ANSWERED,
    "$JS.API.CONSUMER.UNPIN.*.*": ANSWERED,
    "$JS.API.CONSUMER.MSG.NEXT.*.*": PER_CONSUMER,
    "$JS.API.CONSUMER.RESET.*.*": PER_CONSUMER,
    "$JS.API.STREAM.LEADER.STEPDOWN.*": CLUSTER,
    "$JS.API.STREAM.PEER.REMOVE.*": CLUSTER,
    "$JS.API.STREAM.PEER.EVACUATE.*": CLUSTER,
    "$JS.API.STREAM.CANCEL_MOVE.*": CLUSTER,
    "$JS.API.CONSUMER.LEADER.STEPDOWN.*.*": CLUSTER,
    "$JS.API.CONSUMER.PEER.REMOVE.*.*": CLUSTER,
    "$JS.API.CONSUMER.PEER.EVACUATE.*.*": CLUSTER,
    "$JS.API.META.LEADER.STEPDOWN": SYSTEM,
    "$JS.API.META.RESCUE": SYSTEM,
    "$JS.API.SERVER.REMOVE": SYSTEM,
    "$JS.API.SERVER.EVACUATE": SYSTEM,
    "$JS.API.ACCOUNT.PURGE.*": SYSTEM,
    "$JS.API.ACCOUNT.STREAM.MOVE.*.*": SYSTEM,
    "$JS.API.ACCOUNT.STREAM.CANCEL_MOVE.*.*": SYSTEM,
}

LEVEL_99 = {"Nats-Required-Api-Level": "99"}


def _stream(name: str = "S", count: int = 2, **config) -> list:
    steps = [create(name, subjects=[f"{name.lower()}.>"], **config)]
    steps += [pub(f"{name.lower()}.{1 + i % 2}", b"m%d" % (i + 1)) for i in range(count)]
    return steps


def _consumer(stream: str = "S", name: str = "C", **config) -> list:
    return [ccreate(stream, name, ack_policy="explicit", **config)]


def _cluster(subject: str, tokens: int) -> list[Scenario]:
    """A clustering subject: existing and missing names, bodies, an API level header."""
    named = f"{API}{subject}." + ".".join(["S", "C"][:tokens])
    missing = f"{API}{subject}." + ".".join(["NOPE", "NOPE"][:tokens])
    return [
        Scenario(f"{subject}: a single server needs a cluster", [
            *_stream(), *_consumer(),
            req(named), req(named, {"peer": "n1", "placement": {"cluster": "c"}}),
            req(named, b"{bad"), req(named, b"", LEVEL_99), req(missing),
            req(f"{API}{subject}." + ".".join(["*", ">"][:tokens])),
            req(named + ".X"), req(f"{API}{subject}"),
        ]),
    ]


def _system(subject: str) -> list[Scenario]:
    """A system account subject, asked by an ordinary account."""
    return [
        Scenario(f"{subject}: the system account's", [
            *_stream(), req(f"{API}{subject}"), req(f"{API}{subject}", {"peer": "x"}),
            req(f"{API}{subject}", b"", LEVEL_99),
        ]),
    ]


TABLE: dict[str, list[Scenario]] = {
    "$JS.API.INFO": [
        Scenario("INFO", [
            req(f"{API}INFO"), *_stream(), req(f"{API}INFO"), req(f"{API}INFO", b"{bad"),
            req(f"{API}INFO", b"", LEVEL_99), req(f"{API}INFO.X"),
        ]),
    ],
    "$JS.API.STREAM.CREATE.*": [
        Scenario("STREAM.CREATE", [
            create("S", subjects=["s.>"]), create("S", subjects=["s.>"]),
            create("S", subjects=["t"]), req(f"{API}STREAM.CREATE.S", {"name": "T"}),
            req(f"{API}STREAM.CREATE.S", b"{bad"), req(f"{API}STREAM.CREATE.S", b""),
            req(f"{API}STREAM.CREATE.*", {"name": "*"}),
            req(f"{API}STREAM.CREATE.>", {"name": ">"}),
            req(f"{API}STREAM.CREATE.T", {"name": "T"}, LEVEL_99),
            req(f"{API}STREAM.CREATE"), req(f"{API}STREAM.CREATE.A.B", {"name": "A.B"}),
        ]),
    ],
    "$JS.API.STREAM.UPDATE.*": [
        Scenario("STREAM.UPDATE", [
            *_stream(), update("S", subjects=["s.>"], max_msgs=5), update("NOPE"),
            update("S", subjects=["s.>"], storage="memory"),
            req(f"{API}STREAM.UPDATE.S", b"{bad"), req(f"{API}STREAM.UPDATE.*", {"name": "*"}),
        ]),
    ],
    "$JS.API.STREAM.NAMES": [
        Scenario("STREAM.NAMES", [
            names(), *_stream("A"), *_stream("B"), names(), names(subject="b.1"),
            names(offset=1), req(f"{API}STREAM.NAMES", b"{bad"),
            req(f"{API}STREAM.NAMES", b"", LEVEL_99),
        ]),
    ],
    "$JS.API.STREAM.LIST": [
        Scenario("STREAM.LIST", [
            listing(), *_stream("A"), *_stream("B"), listing(), listing(subject="a.>"),
            listing(offset=5), req(f"{API}STREAM.LIST", b"{bad"),
        ]),
    ],
    "$JS.API.STREAM.INFO.*": [
        Scenario("STREAM.INFO", [
            *_stream(), info("S"), info("S", {"subjects_filter": ">"}), info("NOPE"),
            info("*"), info(">"), info("S", b"{bad"),
            req(f"{API}STREAM.INFO.S", b"", LEVEL_99), req(f"{API}STREAM.INFO.S.X"),
        ]),
    ],
    "$JS.API.STREAM.DELETE.*": [
        Scenario("STREAM.DELETE", [
            *_stream(), req(f"{API}STREAM.DELETE.S", {"x": 1}), delete("S"), delete("S"),
            delete("*"),
        ]),
    ],
    "$JS.API.STREAM.PURGE.*": [
        Scenario("STREAM.PURGE", [
            *_stream(count=4), purge("S", keep=1), purge("S", seq=1, keep=1), purge("S"),
            purge("NOPE"), req(f"{API}STREAM.PURGE.S", b"{bad"),
        ]),
    ],
    "$JS.API.STREAM.SNAPSHOT.*": [
        Scenario("STREAM.SNAPSHOT", [
            *_stream(), req(f"{API}STREAM.SNAPSHOT.NOPE", {"deliver_subject": "snap.x"}),
            req(f"{API}STREAM.SNAPSHOT.S", b""), req(f"{API}STREAM.SNAPSHOT.S", b"{bad"),
            req(f"{API}STREAM.SNAPSHOT.S", {"chunk_size": 1024}),
        ]),
    ],
    "$JS.API.STREAM.RESTORE.*": [
        Scenario("STREAM.RESTORE", [
            *_stream(), req(f"{API}STREAM.RESTORE.S", b""),
            req(f"{API}STREAM.RESTORE.S", b"{bad"),
            req(f"{API}STREAM.RESTORE.S", {"config": {"name": "S"}}),
            req(f"{API}STREAM.RESTORE.T", {"config": {"name": "X"}}),
        ]),
    ],
    "$JS.API.STREAM.MSG.DELETE.*": [
        Scenario("STREAM.MSG.DELETE", [
            *_stream(count=3), msg_delete("S", seq=2), msg_delete("S", seq=2),
            msg_delete("S", seq=1, no_erase=True), msg_delete("NOPE", seq=1),
            req(f"{API}STREAM.MSG.DELETE.S", b""), req(f"{API}STREAM.MSG.DELETE.S", b"{bad"),
        ]),
    ],
    "$JS.API.STREAM.MSG.GET.*": [
        Scenario("STREAM.MSG.GET", [
            *_stream(count=3), msg_get("S", seq=1), msg_get("S", last_by_subj="s.2"),
            msg_get("S", seq=9), msg_get("NOPE", seq=1), req(f"{API}STREAM.MSG.GET.S", b""),
            req(f"{API}STREAM.MSG.GET.S", b"{bad"),
        ]),
    ],
    "$JS.API.DIRECT.GET.*": [
        Scenario("DIRECT.GET", [
            *_stream(count=3, allow_direct=True), direct("S", {"seq": 1}),
            direct("S", {"seq": 9}), direct("S", b""), direct("S", b"{bad"),
            direct("S", {"seq": 1, "batch": 2}), direct("NOPE", {"seq": 1}),
            *_stream("T", count=1), direct("T", {"seq": 1}),
        ]),
    ],
    "$JS.API.DIRECT.GET.*.>": [
        Scenario("DIRECT.GET by subject", [
            *_stream(count=3, allow_direct=True), direct_subject("S", "s.1"),
            direct_subject("S", "s.9"), direct_subject("S", "s.2", {"no_hdr": True}),
            direct_subject("NOPE", "s.1"),
        ]),
    ],
    "$JS.API.CONSUMER.CREATE.*": [
        Scenario("CONSUMER.CREATE without a name", [
            *_stream(), ccreate("NOPE"), ccreate("S", durable_name="D"),
            req(f"{CONSUMER}CREATE.S", b"{bad"), req(f"{CONSUMER}CREATE.S", b""),
            req(f"{CONSUMER}CREATE.S", {"stream_name": "T", "config": {}}),
        ]),
    ],
    "$JS.API.CONSUMER.CREATE.*.>": [
        Scenario("CONSUMER.CREATE with a name", [
            *_stream(), ccreate("S", "C", ack_policy="explicit"), ccreate("NOPE", "C"),
            req(f"{CONSUMER}CREATE.S.F.s.1",
                {"stream_name": "S", "config": {"name": "F", "filter_subject": "s.1"}}),
            req(f"{CONSUMER}CREATE.S.F.s.2",
                {"stream_name": "S", "config": {"name": "G", "filter_subject": "s.1"}}),
            req(f"{CONSUMER}CREATE.S.*", {"stream_name": "S", "config": {"name": "*"}}),
            req(f"{CONSUMER}CREATE.S.*", {"stream_name": "S", "config": {}}),
            req(f"{CONSUMER}CREATE.S.>", {"stream_name": "S", "config": {"name": "D"}}),
            req(f"{CONSUMER}CREATE.*.C", {"stream_name": "*", "config": {}}),
            req(f"{CONSUMER}CREATE.S.C.*", {"stream_name": "S", "config": {"name": "C"}}),
            req(f"{CONSUMER}CREATE.S.C", b"{bad"),
            req(f"{CONSUMER}CREATE.S.D", {"stream_name": "S", "config": {"name": "D"}},
                LEVEL_99),
        ]),
    ],
    "$JS.API.CONSUMER.DURABLE.CREATE.*.*": [
        Scenario("CONSUMER.DURABLE.CREATE", [
            *_stream(),
            ccreate("S", subject="DURABLE.CREATE.S.D", durable_name="D", ack_policy="all"),
            ccreate("S", subject="DURABLE.CREATE.S.D", durable_name="E"),
            ccreate("NOPE", subject="DURABLE.CREATE.NOPE.D", durable_name="D"),
            ccreate("S", subject="DURABLE.CREATE.S.*", durable_name="*"),
            ccreate("S", subject="DURABLE.CREATE.S.>", durable_name="D"),
            req(f"{CONSUMER}DURABLE.CREATE.S", {"stream_name": "S", "config": {}}),
        ]),
    ],
    "$JS.API.CONSUMER.NAMES.*": [
        Scenario("CONSUMER.NAMES", [
            *_stream(), req(f"{CONSUMER}NAMES.S"), *_consumer(), *_consumer(name="B"),
            req(f"{CONSUMER}NAMES.S"), req(f"{CONSUMER}NAMES.S", {"offset": 1}),
            req(f"{CONSUMER}NAMES.NOPE"), req(f"{CONSUMER}NAMES.S", b"{bad"),
        ]),
    ],
    "$JS.API.CONSUMER.LIST.*": [
        Scenario("CONSUMER.LIST", [
            *_stream(), *_consumer(), req(f"{CONSUMER}LIST.S"),
            req(f"{CONSUMER}LIST.S", {"offset": 3}), req(f"{CONSUMER}LIST.NOPE"),
            req(f"{CONSUMER}LIST.S", b"{bad"),
        ]),
    ],
    "$JS.API.CONSUMER.INFO.*.*": [
        Scenario("CONSUMER.INFO", [
            *_stream(), *_consumer(), cinfo("S", "C"), cinfo("S", "NOPE"),
            cinfo("NOPE", "C"), cinfo("S", "*"), req(f"{CONSUMER}INFO.S.C", {"x": 1}),
            req(f"{CONSUMER}INFO.S.C", b"", LEVEL_99), req(f"{CONSUMER}INFO.S"),
        ]),
    ],
    "$JS.API.CONSUMER.DELETE.*.*": [
        Scenario("CONSUMER.DELETE", [
            *_stream(), *_consumer(), req(f"{CONSUMER}DELETE.S.C", {"x": 1}),
            cdelete("S", "C"), cdelete("S", "C"), cdelete("NOPE", "C"),
        ]),
    ],
    "$JS.API.CONSUMER.PAUSE.*.*": [
        Scenario("CONSUMER.PAUSE", [
            *_stream(), *_consumer(), req(f"{CONSUMER}PAUSE.S.C", b""),
            req(f"{CONSUMER}PAUSE.S.NOPE", {"pause_until": "2099-01-01T00:00:00Z"}),
            req(f"{CONSUMER}PAUSE.S.C", b"{bad"),
            # the stored _nats.req.level follows the pause (1) and the resume (0)
            req(f"{CONSUMER}PAUSE.S.C", {"pause_until": "2099-01-01T00:00:00Z"}),
            cinfo("S", "C"), req(f"{CONSUMER}PAUSE.S.C", b""), cinfo("S", "C"),
        ]),
    ],
    "$JS.API.CONSUMER.UNPIN.*.*": [
        Scenario("CONSUMER.UNPIN", [
            *_stream(), *_consumer(), req(f"{CONSUMER}UNPIN.S.C", {"group": "g"}),
            req(f"{CONSUMER}UNPIN.S.C", b""), req(f"{CONSUMER}UNPIN.S.C", b"{bad"),
            req(f"{CONSUMER}UNPIN.S.NOPE", {"group": "g"}),
        ]),
    ],
    "$JS.API.CONSUMER.MSG.NEXT.*.*": [
        Scenario("CONSUMER.MSG.NEXT", [
            *_stream(count=3), *_consumer(),
            next_("S", "C", {"batch": 2, "no_wait": True}, label="got"), ack("got"),
            next_("S", "C", {"batch": 5, "no_wait": True}), next_("S", "NOPE", b"1"),
            next_("S", "C", b"{bad"),
            ccreate("S", "P", ack_policy="explicit", deliver_subject="push.p"),
            next_("S", "P", b"1"),
        ]),
    ],
    "$JS.API.CONSUMER.RESET.*.*": [
        Scenario("CONSUMER.RESET", [
            *_stream(count=4), *_consumer(),
            next_("S", "C", {"batch": 3, "no_wait": True}, label="got"), ack("got"),
            req(f"{CONSUMER}RESET.S.C"), next_("S", "C", {"batch": 5, "no_wait": True}),
            req(f"{CONSUMER}RESET.S.C", {"seq": 3}), req(f"{CONSUMER}RESET.S.C", {"seq": 0}),
            req(f"{CONSUMER}RESET.S.C", {"seq": -1}), req(f"{CONSUMER}RESET.S.C", b"{bad"),
            req(f"{CONSUMER}RESET.S.C", b"", LEVEL_99), req(f"{CONSUMER}RESET.S.NOPE"),
            req(f"{CONSUMER}RESET.NOPE.C"), req(f"{CONSUMER}RESET.S.C.X"),
            req(f"{CONSUMER}RESET.S"),
        ]),
    ],
    "$JS.API.STREAM.LEADER.STEPDOWN.*": _cluster("STREAM.LEADER.STEPDOWN", 1),
    "$JS.API.STREAM.PEER.REMOVE.*": _cluster("STREAM.PEER.REMOVE", 1),
    "$JS.API.STREAM.PEER.EVACUATE.*": _cluster("STREAM.PEER.EVACUATE", 1),
    "$JS.API.STREAM.CANCEL_MOVE.*": _cluster("STREAM.CANCEL_MOVE", 1),
    "$JS.API.CONSUMER.LEADER.STEPDOWN.*.*": _cluster("CONSUMER.LEADER.STEPDOWN", 2),
    "$JS.API.CONSUMER.PEER.REMOVE.*.*": _cluster("CONSUMER.PEER.REMOVE", 2),
    "$JS.API.CONSUMER.PEER.EVACUATE.*.*": _cluster("CONSUMER.PEER.EVACUATE", 2),
    "$JS.API.META.LEADER.STEPDOWN": _system("META.LEADER.STEPDOWN"),
    "$JS.API.META.RESCUE": _system("META.RESCUE"),
    "$JS.API.SERVER.REMOVE": _system("SERVER.REMOVE"),
    "$JS.API.SERVER.EVACUATE": _system("SERVER.EVACUATE"),
    "$JS.API.ACCOUNT.PURGE.*": _system("ACCOUNT.PURGE.S"),
    "$JS.API.ACCOUNT.STREAM.MOVE.*.*": _system("ACCOUNT.STREAM.MOVE.A.S"),
    "$JS.API.ACCOUNT.STREAM.CANCEL_MOVE.*.*": _system("ACCOUNT.STREAM.CANCEL_MOVE.A.S"),
}

# subjects nats-server no longer has, or never had: under $JS.API.> they go unanswered,
# but for the direct get and pull request forms (no responders), as does $JS.API itself
OUTSIDE_THE_LIST = [
    Scenario("retired and unknown subjects", [
        req(f"{API}STREAM.TEMPLATE.CREATE.T", {"name": "T"}),
        req(f"{API}STREAM.TEMPLATE.INFO.T"), req(f"{API}STREAM.TEMPLATE.DELETE.T"),
        req(f"{API}STREAM.TEMPLATE.NAMES"), req(f"{API}NOPE"), req(f"{API}STREAM.NOPE.S"),
        req(f"{API}CONSUMER.NOPE.S.C"), req(f"{API}ACCOUNT.PURGE"), req(f"{API}>"),
    ]),
    Scenario("no responders and no answer", [
        req("$JS.API"), req(f"{API}DIRECT.GET"), req(f"{API}DIRECT.GET.S.x.y"),
        req(f"{API}DIRECT"), req(f"{API}DIRECT.X"), req(f"{API}CONSUMER.MSG.NEXT"),
        req(f"{API}CONSUMER.MSG.NEXT.S"), req(f"{API}CONSUMER.MSG.NEXT.S.C.D"),
        req(f"{API}CONSUMER.MSG.X"), req(f"{API}STREAM"), req(f"{API}INFO.X"),
    ]),
]


def _matches(subject: str, pattern: str) -> bool:
    tokens, wanted = subject.split("."), pattern.split(".")
    for i, token in enumerate(wanted):
        if token == ">":
            return len(tokens) > i
        if i >= len(tokens) or (token != "*" and token != tokens[i]):
            return False
    return len(tokens) == len(wanted)


def _cases():
    for pattern, scenarios in TABLE.items():
        for scenario in scenarios:
            yield pytest.param(scenario, id=scenario.name)
    for scenario in OUTSIDE_THE_LIST:
        yield pytest.param(scenario, id=scenario.name)


# -- the list is nats-server's, and the table covers it -------------------------------------
def test_every_api_subject_has_scenarios():
    missing = [p for p in NATS_SERVER_API if not TABLE.get(p)]
    assert not missing, f"API subjects without scenarios: {missing}"
    unknown = [p for p in TABLE if p not in NATS_SERVER_API]
    assert not unknown, f"table rows for subjects nats-server does not have: {unknown}"
    unsent = [p for p, scenarios in TABLE.items()
              if not any(_matches(step.subject, p) for s in scenarios for step in s.steps)]
    assert not unsent, f"no scenario sends a request on: {unsent}"


def test_the_list_is_the_binary_s():
    """Every subject of the list is in the nats-server binary the tests run against (its
    subscriptions as literals, the per-stream and per-consumer ones as format strings)."""
    binary = natsserver.require_nats_server()
    with open(binary, "rb") as executable:
        text = executable.read()
    absent = []
    for pattern, kind in NATS_SERVER_API.items():
        literal = pattern.encode()
        if kind in (PER_STREAM, PER_CONSUMER):
            literal = re.split(rb"\*", literal)[0]       # "$JS.API.CONSUMER.RESET."
        if literal not in text:
            absent.append(pattern)
    assert not absent, f"not in {binary}: {absent}"


def test_subject_matching_of_the_table():
    assert _matches("$JS.API.CONSUMER.CREATE.S.C.s.1", "$JS.API.CONSUMER.CREATE.*.>")
    assert not _matches("$JS.API.CONSUMER.CREATE.S", "$JS.API.CONSUMER.CREATE.*.>")
    assert _matches("$JS.API.STREAM.INFO.S", "$JS.API.STREAM.INFO.*")
    assert not _matches("$JS.API.STREAM.INFO.S.X", "$JS.API.STREAM.INFO.*")


# -- both servers asked the same ------------------------------------------------------------
@pytest.fixture
def both_sides(differential_loop, tmp_path):
    natsserver.require_nats_server()
    with natsserver.nats_server(tmp_path / "nats-server") as real, \
            jsstoreserver.jsstore_server(tmp_path / "jsstore") as mine:
        real_side = differential.ServerSide(differential_loop, real.url)
        mine_side = differential.ServerSide(differential_loop, mine.url)
        try:
            yield real_side, mine_side
        finally:
            real_side.close()
            mine_side.close()


@pytest.fixture(scope="module")
def differential_loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.mark.parametrize("scenario", list(_cases()))
def test_subject_answers_as_nats_server(scenario, both_sides):
    real_side, mine_side = both_sides
    mismatches, _ = differential.compare_scenario(scenario, real_side, mine_side)
    assert not mismatches, "answers differ:\n" + "\n".join(mismatches)
