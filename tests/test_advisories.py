"""Advisory JSON: subjects, types, field names, order and value types.

The schemas below are the published advisory schemas (required fields, value types,
``additionalProperties: false``) with the corrections nats-server's own output demands:
the consumer advisories' sequences are integers (the schemas say string), every advisory may
carry ``domain``, snapshot_create carries ``state`` (the schema's ``blocks``/``block_size``
are from older servers) and snapshot_complete may carry ``error``.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from jsstore.stream import advisories
from jsstore.api.schemas import StreamStateBody

CLIENT = {"type": "object", "required": ["acc"]}
STR, INT, OBJ = "string", "integer", "object"

SCHEMAS = {
    "api_audit": ({"type": STR, "id": STR, "timestamp": STR, "server": STR, "client": CLIENT,
                   "subject": STR, "response": STR},
                  {"request": STR, "domain": STR}),
    "stream_action": ({"type": STR, "id": STR, "timestamp": STR, "stream": STR,
                       "action": STR}, {"template": STR, "domain": STR}),
    "consumer_action": ({"type": STR, "id": STR, "timestamp": STR, "stream": STR,
                         "consumer": STR, "action": STR}, {"domain": STR}),
    "max_deliver": ({"type": STR, "id": STR, "timestamp": STR, "stream": STR, "consumer": STR,
                     "stream_seq": INT, "deliveries": INT}, {"domain": STR}),
    "nak": ({"type": STR, "id": STR, "timestamp": STR, "stream": STR, "consumer": STR,
             "consumer_seq": INT, "stream_seq": INT, "deliveries": INT}, {"domain": STR}),
    "terminated": ({"type": STR, "id": STR, "timestamp": STR, "stream": STR, "consumer": STR,
                    "consumer_seq": INT, "stream_seq": INT, "deliveries": INT},
                   {"reason": STR, "domain": STR}),
    "snapshot_create": ({"type": STR, "id": STR, "timestamp": STR, "stream": STR,
                         "state": OBJ, "client": CLIENT}, {"domain": STR}),
    "snapshot_complete": ({"type": STR, "id": STR, "timestamp": STR, "stream": STR,
                           "start": STR, "end": STR, "client": CLIENT},
                          {"domain": STR, "error": STR}),
    "restore_create": ({"type": STR, "id": STR, "timestamp": STR, "stream": STR,
                        "client": CLIENT}, {"domain": STR}),
    "restore_complete": ({"type": STR, "id": STR, "timestamp": STR, "stream": STR,
                          "start": STR, "end": STR, "bytes": INT, "client": CLIENT},
                         {"domain": STR}),
    "stream_batch_abandoned": ({"type": STR, "id": STR, "timestamp": STR, "stream": STR,
                                "batch": STR, "reason": STR}, {"account": STR, "domain": STR}),
}
CLIENT_FIELDS = {"start", "stop", "host", "id", "acc", "user", "name", "lang", "ver", "rtt",
                 "server", "cluster", "alts", "jwt", "issuer_key", "name_tag", "kind",
                 "client_type", "tags", "svc", "client_id", "nonce"}
RFC3339_NANO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")
PY_TYPES = {STR: str, INT: int, OBJ: dict}


def check(subject_and_body: tuple[str, bytes], expected_subject: str) -> dict:
    """The advisory matches its schema; returns it decoded."""
    subject, body = subject_and_body
    assert subject == expected_subject
    doc = json.loads(body)
    kind = doc["type"].removeprefix("io.nats.jetstream.advisory.v1.")
    required, optional = SCHEMAS[kind]
    assert list(doc)[:3] == ["type", "id", "timestamp"]
    for name, spec in required.items():
        assert name in doc, f"{kind} lacks {name}"
    for name, value in doc.items():
        spec = required.get(name) or optional.get(name)
        assert spec is not None, f"{kind} has unexpected {name}"
        if isinstance(spec, dict):
            assert isinstance(value, dict)
            assert set(value) <= CLIENT_FIELDS and "acc" in value
        else:
            assert isinstance(value, PY_TYPES[spec]) and not isinstance(value, bool), name
    assert RFC3339_NANO.match(doc["timestamp"])
    assert re.fullmatch(r"[0-9A-Za-z]{22}", doc["id"])
    return doc


def test_ids_are_unique_and_nuid_shaped():
    ids = [advisories.next_id() for _ in range(5000)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[0-9A-Za-z]{22}", i) for i in ids)
    # one process shares a prefix, the sequence part grows
    assert len({i[:12] for i in ids}) <= 2


def test_api_audit():
    doc = check(advisories.api_audit("SERVERID", "$JS.API.STREAM.INFO.S", b"",
                                     b'{"type":"x"}', now=1_500_000_000_123_000_000),
                "$JS.EVENT.ADVISORY.API")
    assert "request" not in doc                       # omitempty
    assert doc["response"] == '{"type":"x"}'
    assert doc["client"] == {"acc": "$G"}
    assert doc["timestamp"] == "2017-07-14T02:40:00.123Z"
    assert list(doc) == ["type", "id", "timestamp", "server", "client", "subject", "response"]
    doc = check(advisories.api_audit("S", "$JS.API.INFO", b"{<>}", b"", domain="hub"),
                "$JS.EVENT.ADVISORY.API")
    assert doc["request"] == "{<>}" and doc["response"] == "" and doc["domain"] == "hub"


def test_api_audit_escapes_like_go():
    _, body = advisories.api_audit("S", "$JS.API.X", b"<&>", b"")
    assert b"\\u003c\\u0026\\u003e" in body


@pytest.mark.parametrize("action,suffix", [("create", "CREATED"), ("delete", "DELETED"),
                                           ("modify", "UPDATED")])
def test_stream_actions(action, suffix):
    doc = check(advisories.stream_action("ORDERS", action),
                f"$JS.EVENT.ADVISORY.STREAM.{suffix}.ORDERS")
    assert list(doc) == ["type", "id", "timestamp", "stream", "action"]
    assert doc["action"] == action


def test_unknown_actions_rejected():
    with pytest.raises(ValueError):
        advisories.stream_action("S", "rename")
    with pytest.raises(ValueError):
        advisories.consumer_action("S", "C", "modify")


def test_consumer_advisories():
    doc = check(advisories.consumer_action("S", "C", "create", domain="d"),
                "$JS.EVENT.ADVISORY.CONSUMER.CREATED.S.C")
    assert list(doc) == ["type", "id", "timestamp", "stream", "consumer", "action", "domain"]
    check(advisories.consumer_action("S", "C", "delete"), "$JS.EVENT.ADVISORY.CONSUMER.DELETED.S.C")
    doc = check(advisories.max_deliveries("S", "C", 7, 3),
                "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.S.C")
    assert (doc["stream_seq"], doc["deliveries"]) == (7, 3)
    doc = check(advisories.msg_naked("S", "C", 4, 9, 2), "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.S.C")
    assert list(doc)[3:] == ["stream", "consumer", "consumer_seq", "stream_seq", "deliveries"]
    doc = check(advisories.msg_terminated("S", "C", 4, 9, 2, reason="bad"),
                "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.S.C")
    assert doc["reason"] == "bad"
    doc = check(advisories.msg_terminated("S", "C", 4, 9, 2),
                "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.S.C")
    assert "reason" not in doc


def test_snapshot_and_restore_advisories():
    state = StreamStateBody(messages=2, bytes=10, first_seq=1, first_ts="x", last_seq=2,
                            last_ts="y", num_subjects=1, consumer_count=0)
    doc = check(advisories.snapshot_create("S", state),
                "$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_CREATE.S")
    assert list(doc) == ["type", "id", "timestamp", "stream", "state", "client"]
    assert doc["state"]["messages"] == 2
    doc = check(advisories.snapshot_complete("S", 1_000_000_000, 2_000_000_001),
                "$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_COMPLETE.S")
    assert (doc["start"], doc["end"]) == ("1970-01-01T00:00:01Z", "1970-01-01T00:00:02.000000001Z")
    assert doc["timestamp"] == doc["end"] and "error" not in doc
    doc = check(advisories.snapshot_complete("S", 1, 2, error="no flow response"),
                "$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_COMPLETE.S")
    assert list(doc)[-1] == "error"
    check(advisories.restore_create("S"), "$JS.EVENT.ADVISORY.STREAM.RESTORE_CREATE.S")
    doc = check(advisories.restore_complete("S", 1, 2, 839),
                "$JS.EVENT.ADVISORY.STREAM.RESTORE_COMPLETE.S")
    assert list(doc) == ["type", "id", "timestamp", "stream", "start", "end", "bytes", "client"]
    client = advisories.ClientInfo(acc="A", name="me", rtt=5, kind="Client")
    doc = check(advisories.restore_create("S", client=client),
                "$JS.EVENT.ADVISORY.STREAM.RESTORE_CREATE.S")
    assert doc["client"] == {"acc": "A", "name": "me", "rtt": 5, "kind": "Client"}


def test_batch_abandoned():
    doc = check(advisories.batch_abandoned("S", "b-1", advisories.BATCH_TIMEOUT),
                "$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.S")
    assert list(doc) == ["type", "id", "timestamp", "stream", "batch", "reason"]
    doc = check(advisories.batch_abandoned("S", "b", "large", account="$G", domain="d"),
                "$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.S")
    assert list(doc)[3:] == ["account", "stream", "domain", "batch", "reason"]


@settings(max_examples=200, deadline=None)
@given(stream=st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFF,
                                    blacklist_characters=".*>"), min_size=1, max_size=20),
       seq=st.integers(1, 2**64 - 1), now=st.integers(0, 2**62))
def test_any_names_and_numbers_round_trip(stream, seq, now):
    doc = check(advisories.max_deliveries(stream, "C", seq, 1, now=now),
                f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{stream}.C")
    assert doc["stream"] == stream and doc["stream_seq"] == seq
