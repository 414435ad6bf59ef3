"""CONSUMER.CREATE and DURABLE.CREATE against a real nats-server: the same create requests
(every configuration field's checks, defaults and update rules, with and without server
and account limits) sent to both, the answers compared -- error objects byte for byte, the
config object of a success with its key order. The unit tests of the same rules are
test_consumerconfig.py."""

from __future__ import annotations

import asyncio
import json

import msgspec
import pytest

from jsstore.consumer import config as cc
from jsstore.consumer import create as ccreate
from jsstore.wire import apierrors as api_errors
from jsstore.stream.config import StreamConfig


# -- against a real nats-server --------------------------------------------------------------
CREATE = "$JS.API.CONSUMER.CREATE."
DURABLE = "$JS.API.CONSUMER.DURABLE.CREATE."
SEC = 1_000_000_000

STREAMS = [
    {"name": "S", "subjects": ["foo.>", "bar"]},
    {"name": "L", "subjects": ["l.>"],
     "consumer_limits": {"max_ack_pending": 50, "inactive_threshold": 10 * SEC}},
    {"name": "W", "subjects": ["w.>"], "retention": "workqueue"},
    {"name": "M", "subjects": ["m.>"], "max_consumers": 1},
    {"name": "I", "subjects": ["i.>"], "retention": "interest"},
    {"name": "V", "subjects": ["v.>"], "retention": "workqueue"},
]


def req(stream: str = "S", config: dict | None = None, **extra) -> dict:
    return {"stream_name": stream, "config": config or {}, **extra}


# (subject, body): a dict is sent as compact JSON, bytes as they are.  The steps run in
# order on one server, so later steps see the consumers earlier ones made.
STEPS: list[tuple[str, object]] = [
    # defaults of every kind
    (CREATE + "S", req()),
    (CREATE + "S", req(config={"name": "N1"})),
    (CREATE + "S.C1", req(config={"durable_name": "C1", "ack_policy": "explicit"})),
    (CREATE + "S.C2", req(config={"deliver_subject": "dx"})),
    (CREATE + "S.C3", req(config={"priority_policy": "pinned_client", "priority_groups": ["g"]})),
    (CREATE + "S.C4", req(config={"ack_policy": "flow_control", "deliver_subject": "dy"})),
    (CREATE + "S.C5", req(config={"priority_policy": "prioritized", "priority_groups": ["g"]})),
    (CREATE + "S.C6", req(config={"pause_until": "2099-01-01T02:00:00+02:00"})),
    (CREATE + "S.C7", req(config={"backoff": [SEC, 2 * SEC], "max_deliver": 5})),
    (CREATE + "S.C8", req(config={"ack_policy": "all"})),
    (CREATE + "S.C9", req(config={"ack_policy": "explicit", "backoff": [1000, 2000],
                                  "ack_wait": 5})),
    (CREATE + "S.C10", req(config={"max_deliver": -5, "max_waiting": -3, "max_ack_pending": -7,
                                   "max_batch": -1, "max_expires": -1, "max_bytes": -1,
                                   "inactive_threshold": -1, "priority_timeout": -1})),
    (CREATE + "S.C11", req(config={"deliver_policy": "undefined", "replay_policy": "original",
                                   "filter_subjects": ["foo.a", "foo.b"]})),
    (CREATE + "S.C12", req(config={"deliver_policy": "by_start_time",
                                   "opt_start_time": "2024-01-01T00:00:00,500000+00:00"})),
    (CREATE + "S.C13", req(config={"deliver_policy": "by_start_time",
                                   "opt_start_time": "2024-01-01T1:00:00.1234567891-05:30"})),
    (CREATE + "S.C14", req(config={"metadata": {"b": "1", "a": "<&>", "_nats.foo": "x"},
                                   "description": "a<b>&\u2028"})),
    (CREATE + "S.C15", req(config={"deliver_subject": "z", "deliver_group": "g",
                                   "headers_only": True, "rate_limit_bps": 2 ** 64 - 1,
                                   "sample_freq": "+5%", "mem_storage": True,
                                   "idle_heartbeat": SEC, "num_replicas": 1})),
    (CREATE + "S.C16", req(config={"max_batch": 5, "max_bytes": 100, "max_expires": 5_000_000,
                                   "inactive_threshold": 90061000000001})),
    (CREATE + "S.C17.foo.*", req(config={"filter_subject": "foo.*"})),
    (CREATE + "S.C18", req(config={"deliver_subject": "dd", "direct": True})),
    (CREATE + "S.C19", req(config={"sourcing": True})),
    (CREATE + "S.C20", req(config={"filter_subject": "baz.>", "filter_subjects": [],
                                   "backoff": [], "metadata": {}})),
    (CREATE + "S.C21", req(config={"priority_policy": "none", "priority_groups": [],
                                   "pause_until": "0001-01-01T00:00:00Z"})),
    (CREATE + "S.C22", req(config={"ack_policy": "flow_control", "deliver_subject": "q",
                                   "flow_control": True, "idle_heartbeat": SEC},
                           pedantic=True)),
    (CREATE + "S.C23", req(config={"filter_subjects": ["foo.z"]})),
    (CREATE + "S.C24", req(config={"deliver_group": "g", "headers_only": True, "max_batch": 2})),
    (CREATE + "S.C25", req(config={"deliver_subject": "x25", "max_batch": 5, "max_bytes": 7,
                                   "max_expires": 1})),
    (CREATE + "S." + "d" * 255, req(config={"durable_name": "d" * 255})),
    (DURABLE + "S.D1", req(config={"durable_name": "D1", "name": "Q"})),
    (CREATE + "S.X16", req(config={"DURABLE_NAME": "X16"})),
    (CREATE + "S.X18", req(config=None) | {"config": None}),
    (CREATE + "S.J48", b'{"stream_name":"S","config":{"metadata":{"a":null},"backoff":[null,5]}}'),
    (CREATE + "S.J58", b'{"stream_name":"S","config":{"metadata":{"a":"b"},"metadata":{"c":"d"},'
                       b'"opt_start_time":"2024-01-01T00:00:00Z","opt_start_time":null}}'),
    (CREATE + "S.A3", b'{"stream_name":"S"} {"config":{"description":"two"}}'),
    (CREATE + "S.L1", b'  {"stream_name":"S","config":{"name":"ignored"}}  '),
    (CREATE + "L.U49", req("L")),
    (CREATE + "L.U50", req("L", {"ack_policy": "explicit", "durable_name": "U50"})),
    (CREATE + "L.U53", req("L", {"max_ack_pending": -1})),
    (CREATE + "I.I1", req("I", {"ack_policy": "explicit", "num_replicas": 1})),
    # invalid JSON
    (CREATE + "S", b""),
    (CREATE + "S", b"   "),
    (CREATE + "S", b"null"),
    (CREATE + "S", b"{"),
    (CREATE + "S", b"[]"),
    (CREATE + "S", b"123x"),
    (CREATE + "S", b'"abc"x'),
    (CREATE + "S", b"{}[]"),
    (CREATE + "S", b"nullx"),
    (CREATE + "S", b"+1"),
    (CREATE + "S.J", b"{x"),
    (CREATE + "S.J", b'{"stream_name":"S"} x'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"ack_wait":"1s"}, x}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"durable_name":"a\x01"}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"durable_name":"a\\q"}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"durable_name":"a\\u12g4"}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"durable_name":"a\\u12'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"max_deliver":-x}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"max_deliver":1.x}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"backoff":[1e+}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"max_deliver":01}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"flow_control":tru}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"flow_control":nul}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config" {}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{} "a":1}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"backoff":[1 2]}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"backoff":[1,]}}'),
    (CREATE + "S.J", b'{"stream_name":"S",}'),
    (CREATE + "S.J", "\u00ef{}".encode()),
    (CREATE + "S.J", req(foo=1)),
    (CREATE + "S.J", req(config={"DurableName": "J"})),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"foo\\u0001":1}}'),
    (CREATE + "S.J", req(config={"ack_policy": "bad"})),
    (CREATE + "S.J", req(config={"ack_policy": None})),
    (CREATE + "S.J", req(config={"deliver_policy": "bad"})),
    (CREATE + "S.J", req(config={"replay_policy": "bad"})),
    (CREATE + "S.J", req(config={"priority_policy": "bad"})),
    (CREATE + "S.J", req(action="bad")),
    (CREATE + "S.J", req(action=None)),
    (CREATE + "S.J", req(action=1)),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"ack_policy":"expl\\u0069cit"}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"ack_policy":  [ 1, 2 ] }}'),
    (CREATE + "S.J", req(config={"ack_wait": "1s"})),
    (CREATE + "S.J", req(config={"ack_wait": 1.5})),
    (CREATE + "S.J", req(config={"max_deliver": 99999999999999999999})),
    (CREATE + "S.J", req(config={"opt_start_seq": -1})),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"opt_start_seq":-0}}'),
    (CREATE + "S.J", req(config={"opt_start_seq": -1, "ack_policy": "x"})),
    (CREATE + "S.J", req(config={"ack_policy": "x", "ack_wait": "1s"})),
    (CREATE + "S.J", req(config={"metadata": {"a": 1}})),
    (CREATE + "S.J", req(config={"metadata": []})),
    (CREATE + "S.J", req(config={"backoff": ["1s"]})),
    (CREATE + "S.J", req(config={"backoff": {}})),
    (CREATE + "S.J", req(config={"filter_subjects": "foo.a"})),
    (CREATE + "S.J", req(config={"priority_groups": [1]})),
    (CREATE + "S.J", req(config={"flow_control": 1})),
    (CREATE + "S.J", req(config={"durable_name": True})),
    (CREATE + "S.J", {"stream_name": 1, "config": {}}),
    (CREATE + "S.J", req(config=[]) | {"config": []}),
    (CREATE + "S.J", req(pedantic="yes")),
    (CREATE + "S.J", req(config={"opt_start_time": 1})),
    (CREATE + "S.J", req(config={"pause_until": []})),
    (CREATE + "S.J", req(config={"opt_start_time": "bad"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-13-01T00:00:00Z"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-02-30T00:00:00Z"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01 00:00:00Z"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01T24:00:00Z"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01T00:00:60Z"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01T00:00:00Zjunk"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01T00:00:00+25:00"})),
    # Go parses these offsets but will not write them as JSON: the store is not made
    (CREATE + "S.J", req(config={"deliver_policy": "by_start_time",
                                 "opt_start_time": "2024-01-01T00:00:00+24:00"})),
    (CREATE + "S.J", req(config={"deliver_policy": "by_start_time",
                                 "opt_start_time": "2024-01-01T00:00:00-23:60"})),
    (CREATE + "S.J", req(config={"deliver_policy": "by_start_time",
                                 "opt_start_time": "2024-01-01T00:00:00+23:59"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01T00:00:00.Z"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01T00:00:00+0100"})),
    (CREATE + "S.J", req(config={"pause_until": "\u00e9"})),
    # the subject forms
    (CREATE + "S", req("T")),
    (CREATE + "T", req("T")),
    (CREATE + "S", req(config={"durable_name": "D"})),
    (CREATE + "S", req(config={"name": "a.b"})),
    (CREATE + "S", req(config={"name": "a b"})),
    (CREATE + "S", req(config={"name": "a/b", "durable_name": "x"})),
    (CREATE + "S.X", req(config={"durable_name": "D"})),
    (CREATE + "S.X", req("T", {"num_replicas": 3})),
    (CREATE + "S.a/b", req()),
    (CREATE + "S.a\\b", req("T")),
    (CREATE + "S.a\\b", req()),
    (CREATE + "S.F1.foo.x", req()),
    (CREATE + "S.F3.foo.x", req(config={"filter_subjects": ["foo.x"]})),
    (CREATE + "S.F6.foo.y", req(config={"filter_subject": "foo.x"})),
    (CREATE + "S.F7.foo.y", req(config={"filter_subject": "foo.x", "num_replicas": 3})),
    (DURABLE + "S.D2", req()),
    (DURABLE + "S.D2", req(config={"durable_name": "D3"})),
    (DURABLE + "S.D2", req("T", {"durable_name": "D2"})),
    (DURABLE + "S.a/b", req(config={"durable_name": "a/b"})),
    (DURABLE + "S.D4.x", req(config={"durable_name": "D4"})),
    (CREATE + "S.R3", req(config={"num_replicas": 3, "deliver_policy": "by_start_sequence"})),
    (CREATE + "T.R3", req("T", {"num_replicas": 3})),
    (CREATE + "S.R4", req(config={"num_replicas": -1})),
    (CREATE + "S." + "e" * 256, req(config={"durable_name": "e" * 256})),
    # checkConsumerCfg
    (CREATE + "S.U", req(config={"deliver_policy": "last_per_subject"})),
    (CREATE + "S.U", req(config={"deliver_policy": "new", "opt_start_seq": 5})),
    (CREATE + "S.U", req(config={"deliver_policy": "last",
                                 "opt_start_time": "2024-01-01T00:00:00Z"})),
    (CREATE + "S.U", req(config={"deliver_policy": "by_start_sequence"})),
    (CREATE + "S.U", req(config={"deliver_policy": "by_start_time"})),
    (CREATE + "S.U", req(config={"deliver_policy": "by_start_time", "opt_start_seq": 5,
                                 "opt_start_time": "2024-01-01T00:00:00Z"})),
    (CREATE + "S.U", req(config={"filter_subjects": ["foo.a", "foo.*"]})),
    (CREATE + "S.U", req(config={"filter_subjects": ["foo.a", ""]})),
    (CREATE + "S.U", req(config={"filter_subject": "foo..a"})),
    (CREATE + "S.U", req(config={"filter_subject": "foo.a", "filter_subjects": ["foo.b"]})),
    (CREATE + "S.U", req(config={"deliver_subject": "foo.x"})),
    (CREATE + "S.U", req(config={"deliver_subject": "bar"})),
    (CREATE + "S.U", req(config={"deliver_subject": "d.*"})),
    (CREATE + "S.U", req(config={"deliver_subject": "d..x"})),
    (CREATE + "S.U", req(config={"deliver_subject": "dd", "max_waiting": 5})),
    (CREATE + "S.U", req(config={"deliver_subject": "dd", "idle_heartbeat": 5_000_000})),
    (CREATE + "S.U", req(config={"deliver_subject": "dd", "max_ack_pending": 5})),
    (CREATE + "S.U", req(config={"deliver_subject": "dd", "flow_control": True})),
    (CREATE + "S.U", req(config={"rate_limit_bps": 5})),
    (CREATE + "S.U", req(config={"idle_heartbeat": 5 * SEC})),
    (CREATE + "S.U", req(config={"flow_control": True})),
    (CREATE + "S.U", req(config={"max_expires": 500})),
    (CREATE + "S.U", req(config={"sample_freq": "abc"})),
    (CREATE + "S.U", req(config={"sample_freq": "-5%"})),
    (CREATE + "S.U", req(config={"sample_freq": "%"})),
    (CREATE + "S.U", req(config={"sample_freq": "99999999999999999999%"})),
    (CREATE + "S.U", req(config={"priority_policy": "overflow"})),
    (CREATE + "S.U", req(config={"priority_policy": "overflow", "priority_groups": [""]})),
    (CREATE + "S.U", req(config={"priority_policy": "overflow",
                                 "priority_groups": ["this-is-too-long-x"]})),
    (CREATE + "S.U", req(config={"priority_groups": ["g"]})),
    (CREATE + "S.U", req(config={"priority_timeout": 5})),
    (CREATE + "S.U", req(config={"priority_policy": "overflow", "priority_groups": ["g"],
                                 "deliver_subject": "dd"})),
    (CREATE + "S.U", req(config={"backoff": [1, 2, 3], "max_deliver": 2})),
    (CREATE + "S.U", req(config={"backoff": [1, -2]})),
    (CREATE + "S.U", req(config={"ack_policy": "explicit", "ack_wait": -1})),
    (CREATE + "S.U", req(config={"direct": True})),
    (CREATE + "S.U", req(config={"durable_name": "U", "direct": True, "deliver_subject": "dd"})),
    (CREATE + "S.U", req(config={"ack_policy": "flow_control"})),
    (CREATE + "S.U", req(config={"ack_policy": "flow_control", "deliver_subject": "dd",
                                 "max_ack_pending": -1})),
    (CREATE + "S.U", req(config={"ack_policy": "flow_control", "deliver_subject": "q",
                                 "idle_heartbeat": 5 * SEC, "ack_wait": 7, "max_deliver": 4})),
    (CREATE + "S.U", req(config={"ack_policy": "flow_control", "deliver_subject": "dd"},
                         pedantic=True)),
    (CREATE + "S.U", req(config={"ack_policy": "flow_control", "deliver_subject": "dd",
                                 "flow_control": True}, pedantic=True)),
    (CREATE + "S.U", req(config={"ack_policy": "flow_control", "deliver_subject": "dd",
                                 "flow_control": True, "idle_heartbeat": SEC,
                                 "max_ack_pending": 10, "max_deliver": 3}, pedantic=True)),
    (CREATE + "S.U", req(config={"description": "x" * 4097})),
    (CREATE + "S.U", req(config={"metadata": {"k": "v" * (128 * 1024)}})),
    (CREATE + "L.U", req("L", {"max_ack_pending": 60})),
    (CREATE + "L.U", req("L", {"inactive_threshold": 20 * SEC})),
    # pedantic
    (CREATE + "S.P", req(config={"ack_policy": "explicit", "backoff": [1000], "ack_wait": 5},
                         pedantic=True)),
    (CREATE + "S.P", req(config={"max_deliver": -5}, pedantic=True)),
    (CREATE + "S.P", req(config={"max_waiting": -5}, pedantic=True)),
    (CREATE + "S.P", req(config={"max_ack_pending": -5}, pedantic=True)),
    (CREATE + "S.P", req(config={"max_batch": -1}, pedantic=True)),
    (CREATE + "S.P", req(config={"max_bytes": -1}, pedantic=True)),
    (CREATE + "S.P", req(config={"idle_heartbeat": -1}, pedantic=True)),
    (CREATE + "S.P", req(config={"priority_timeout": -5}, pedantic=True)),
    (CREATE + "S.P", req(config={"max_expires": -1}, pedantic=True)),
    (CREATE + "S.P", req(config={"inactive_threshold": -1}, pedantic=True)),
    (CREATE + "L.P", req("L", pedantic=True)),
    (CREATE + "L.P", req("L", {"max_ack_pending": 20}, pedantic=True)),
    (CREATE + "S.P", req(config={"ack_policy": "explicit", "backoff": [1000],
                                 "ack_wait": 1000}, pedantic=True)),
    # work queues and the stream's maximum
    (CREATE + "W.W1", req("W")),
    (CREATE + "W.W2", req("W", {"ack_policy": "all"})),
    (CREATE + "W.W3", req("W", {"ack_policy": "explicit", "deliver_policy": "new"})),
    (CREATE + "W.W4", req("W", {"ack_policy": "all", "deliver_subject": "ww"})),
    (CREATE + "W.A", req("W", {"durable_name": "A", "ack_policy": "explicit",
                               "filter_subject": "w.*.x"})),
    (CREATE + "W.B", req("W", {"durable_name": "B", "ack_policy": "explicit",
                               "filter_subject": "w.a.*"})),
    (CREATE + "W.B", req("W", {"durable_name": "B", "ack_policy": "explicit",
                               "filter_subject": "w.q"})),
    (CREATE + "W.B", req("W", {"durable_name": "B", "ack_policy": "explicit",
                               "filter_subject": "w.q.x"})),
    (CREATE + "W.C", req("W", {"durable_name": "C", "ack_policy": "explicit"})),
    (CREATE + "W.C", req("W", {"durable_name": "C", "ack_policy": "explicit",
                               "filter_subjects": ["w.c", "w.d"]})),
    (CREATE + "W.B", req("W", {"durable_name": "B", "ack_policy": "explicit"})),
    (CREATE + "W.E", req("W", {"durable_name": "E", "ack_policy": "explicit",
                               "filter_subject": "w.e"})),
    (CREATE + "W.G", req("W", {"ack_policy": "flow_control", "deliver_subject": "gg",
                               "filter_subject": "w.g"})),
    (CREATE + "V.S1", req("V", {"sourcing": True, "ack_policy": "explicit"})),
    (CREATE + "V.A", req("V", {"ack_policy": "explicit", "filter_subject": "v.a"})),
    (CREATE + "V.B", req("V", {"ack_policy": "explicit", "filter_subject": "v.b"})),
    (CREATE + "V.D1", req("V", {"direct": True, "deliver_subject": "vd",
                                "ack_policy": "explicit"})),
    (CREATE + "V.A", req("V", {"ack_policy": "explicit", "filter_subject": "v.a2"})),
    (CREATE + "V.A", req("V", {"ack_policy": "explicit", "filter_subject": "v.*"})),
    (CREATE + "M.M1", req("M")),
    (CREATE + "M.M2", req("M")),
    (CREATE + "M.M2", req("M", {"ack_policy": "bad"})),
    (CREATE + "M.M3", req("M", {"sourcing": True})),
    (CREATE + "M.M4", req("M", {"direct": True, "deliver_subject": "mm"})),
    (CREATE + "M.M1", req("M", {"description": "up"})),
    # actions and updates
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "pause_until": "2099-01-01T02:00:00+02:00"})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "pause_until": "2099-01-01T02:00:00+02:00"}, action="create")),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit"},
                         action="create")),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "description": "x"}, action="create")),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "metadata": {"_nats.req.level": "0"}}, action="create")),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "description": "upd", "pause_until": "2098-01-01T00:00:00Z"},
                         action="update")),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "all"}, action="update")),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "deliver_policy": "new"})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "deliver_subject": "dd"})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "max_waiting": 7})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "mem_storage": True})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "replay_policy": "original"})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "sourcing": True})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "filter_subject": "foo.x", "max_deliver": 5,
                                 "ack_wait": 7 * SEC, "max_ack_pending": 3})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "backoff": [1, 2, 3], "max_deliver": 2}, action="update")),
    (CREATE + "S.E", req(config={"durable_name": "E"}, action="update")),
    (CREATE + "S.E", req(config={"durable_name": "E", "deliver_policy": "new",
                                 "opt_start_seq": 4}, action="update")),
    (CREATE + "S.N", req(config={"name": "N"})),
    (CREATE + "S.N", req(config={"name": "N"}, action="create")),
    (CREATE + "S.N", req(config={"name": "N", "inactive_threshold": 5 * SEC}, action="create")),
    (CREATE + "S.N", req(config={"name": "N", "description": "d2"})),
    (CREATE + "S.N", req(config={"name": "N", "inactive_threshold": 7 * SEC})),
    (CREATE + "S.P1", req(config={"deliver_subject": "pp", "idle_heartbeat": SEC})),
    (CREATE + "S.P1", req(config={"deliver_subject": "pp2", "idle_heartbeat": SEC})),
    (CREATE + "S.P1", req(config={"deliver_subject": "pp2", "idle_heartbeat": 2 * SEC})),
    (CREATE + "S.P1", req()),
    (CREATE + "S.P1", req(config={"deliver_subject": "pp2", "idle_heartbeat": SEC,
                                  "flow_control": True})),
    (CREATE + "S.P1", req(config={"deliver_subject": "pp2", "idle_heartbeat": SEC,
                                  "direct": True})),
    (CREATE + "S.P1", req(config={"deliver_subject": "pp2", "idle_heartbeat": SEC,
                                  "deliver_policy": "by_start_time",
                                  "opt_start_time": "2020-01-01T00:00:00Z"})),
    (CREATE + "S.Q1", req(config={"deliver_policy": "by_start_sequence", "opt_start_seq": 1})),
    (CREATE + "S.Q1", req(config={"deliver_policy": "by_start_sequence", "opt_start_seq": 2})),
    (CREATE + "S.T1", req(config={"deliver_policy": "by_start_time",
                                  "opt_start_time": "2020-01-01T02:00:00+02:00"})),
    (CREATE + "S.T1", req(config={"deliver_policy": "by_start_time",
                                  "opt_start_time": "2020-01-01T00:00:00Z",
                                  "description": "same instant"})),
    (CREATE + "S.T1", req(config={"deliver_policy": "by_start_time",
                                  "opt_start_time": "2020-01-01T00:00:01Z"})),
    (CREATE + "S", req(config={"name": "L2", "pause_until": "2099-01-01T00:00:00Z"})),
    (CREATE + "S", req(config={"name": "L2", "description": "upd"})),
]


def _ordered(data: bytes):
    """JSON with its objects as lists of (key, value) pairs, so that key order counts."""
    return json.loads(data, object_pairs_hook=list)


def _body(payload: object) -> bytes:
    if isinstance(payload, bytes):
        return payload
    return json.dumps(payload, separators=(",", ":")).encode()


LIMITS_CONFIG = """
jetstream { limits { max_ack_pending: 100, max_request_batch: 10 } }
accounts { A {
    jetstream { max_ack_pending: 20, max_consumers: 2 }
    users: [{user: a, password: a}]
} }
"""
LIMITS = cc.ServerLimits(max_ack_pending=100, max_request_batch=10, account_max_ack_pending=20,
                         account_max_consumers=2)
LIMITS_STREAMS = [{"name": "S", "subjects": ["s.>"]},
                  {"name": "B", "subjects": ["b.>"], "max_consumers": 1}]
LIMITS_STEPS: list[tuple[str, object]] = [
    (CREATE + "S.A", req(config={"ack_policy": "explicit"})),
    (CREATE + "S.B", req(config={"max_batch": 11})),
    (CREATE + "S.B", req(config={"max_ack_pending": 21})),
    (CREATE + "S.B", req(config={"max_ack_pending": 101})),
    (CREATE + "S.B", req(pedantic=True)),
    (CREATE + "S.B", req(config={"deliver_subject": "x", "ack_policy": "all"})),
    (CREATE + "S.C", req(config={"max_batch": 3}, pedantic=True)),
    (CREATE + "S.C", req(config={"sourcing": True})),
    (CREATE + "B.A", req("B", {"max_batch": 10})),
    (CREATE + "B.B", req("B")),
    (CREATE + "B.C", req("B")),
]


async def _run_server_side(url: str, streams: list[dict], steps: list,
                           **options) -> list[tuple[object, bytes | None]]:
    """The raw answers of nats-server: the stream creations, then every step's (None when
    nothing answers)."""
    nats = pytest.importorskip("nats")
    nc = await nats.connect(url, **options)
    answers = []
    try:
        for stream in streams:
            msg = await nc.request(f"$JS.API.STREAM.CREATE.{stream['name']}", _body(stream),
                                   timeout=2)
            answers.append((stream, msg.data))
        for subject, payload in steps:
            try:
                msg = await nc.request(subject, _body(payload), timeout=1)
                answers.append(((subject, payload), msg.data))
            except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
                answers.append(((subject, payload), None))
    finally:
        await nc.close()
    return answers


def _differences(answers: list, stream_count: int,
                 limits: cc.ServerLimits = cc.NO_LIMITS) -> list[str]:
    """Run every step through plan_create against the stream configurations nats-server
    answered and the consumers it made so far, and describe each answer that differs."""
    streams: dict[str, StreamConfig] = {}
    consumers: dict[str, dict[str, cc.ConsumerConfig]] = {}
    for stream, data in answers[:stream_count]:
        streams[stream["name"]] = msgspec.convert(json.loads(data)["config"], StreamConfig)
        consumers[stream["name"]] = {}
    mismatches = []
    for number, ((subject, payload), real) in enumerate(answers[stream_count:], 1):
        target = ccreate.parse_create_subject(subject)
        stream_name = target.stream if target is not None else ""
        label = f"step {number}: {subject} {_body(payload)[:200]!r}"
        try:
            plan = ccreate.plan_create(subject, _body(payload), stream=streams.get(stream_name),
                                       consumers=consumers.get(stream_name, {}), limits=limits)
        except api_errors.ApiError as exc:
            mine = ccreate.create_error_response(exc)
            if real != mine:
                mismatches.append(f"{label}\n  nats-server: {real!r}\n  jsstore:     {mine!r}")
            continue
        if plan is None or real is None:
            if not (plan is None and real is None):
                mismatches.append(f"{label}\n  nats-server: {real!r}\n  jsstore: {plan!r}")
            continue
        answer = json.loads(real)
        if "error" in answer:
            mismatches.append(f"{label}\n  nats-server: {real!r}\n  jsstore: success")
            continue
        mine = cc.encode(cc.wire_config(plan.config))
        theirs = json.dumps(answer["config"], separators=(",", ":")).encode()
        if _ordered(mine) != _ordered(theirs) or (plan.name and plan.name != answer["name"]):
            mismatches.append(f"{label}\n  nats-server: {answer['name']} {theirs!r}\n"
                              f"  jsstore:     {plan.name} {mine!r}")
        # keep what the server stored, so that later steps start from the same state
        consumers[stream_name][answer["name"]] = cc.decode(theirs)
    return mismatches


def test_differential_steps_cover_enough():
    assert len(STEPS) + len(LIMITS_STEPS) >= 60


@pytest.mark.natsserver
def test_create_requests_match_nats_server(tmp_path):
    natsserver = pytest.importorskip("natsserver")
    natsserver.require_nats_server()
    with natsserver.nats_server(tmp_path / "nats") as server:
        answers = asyncio.run(_run_server_side(server.url, STREAMS, STEPS))
    mismatches = _differences(answers, len(STREAMS))
    assert not mismatches, "answers differ:\n" + "\n".join(mismatches)


@pytest.mark.natsserver
def test_create_requests_match_nats_server_with_server_and_account_limits(tmp_path):
    natsserver = pytest.importorskip("natsserver")
    natsserver.require_nats_server()
    config = tmp_path / "limits.conf"
    config.write_text(LIMITS_CONFIG)
    with natsserver.nats_server(tmp_path / "nats", ["-c", str(config)]) as server:
        answers = asyncio.run(_run_server_side(server.url, LIMITS_STREAMS, LIMITS_STEPS,
                                               user="a", password="a"))
    mismatches = _differences(answers, len(LIMITS_STREAMS), LIMITS)
    assert not mismatches, "answers differ:\n" + "\n".join(mismatches)
