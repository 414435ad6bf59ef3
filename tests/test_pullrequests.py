"""Pull requests: the body as nats-server reads it (including Go's JSON error texts), the
checks made before a request is queued, and every status header block, byte for byte.

The expectations below were taken from nats-server 2.15.1; the natsserver-marked tests at
the end compare against a running one: each pre-queue status, 404/408 on an empty stream,
the statuses of a waiting request (timeouts, heartbeats, max bytes, pins, deletion) and a
corpus of malformed bodies.
"""

from __future__ import annotations

import asyncio
import json
import types

import pytest
from hypothesis import given, settings, strategies as st

from jsstore.consumer import pullrequests as pr
from jsstore.consumer.pullrequests import PullRequest
from jsstore.gocompat import json as gojson
from jsstore.gocompat.text import atoi, trim_space

SECOND = 1_000_000_000


def config(**fields):
    """A consumer configuration as check_request sees it: any object with attributes."""
    values = dict(max_batch=0, max_expires=0, max_bytes=0, priority_groups=None,
                  priority_policy="none", deliver_subject="")
    values.update(fields)
    return types.SimpleNamespace(**values)


LIMITED = config(max_batch=10, max_expires=SECOND, max_bytes=1000)
OVERFLOW = config(priority_policy="overflow", priority_groups=["A"])
PINNED = config(priority_policy="pinned_client", priority_groups=["A"])
PRIORITIZED = config(priority_policy="prioritized", priority_groups=["A", "B"])


# -- status blocks -------------------------------------------------------------------------
def test_status_blocks_are_nats_servers_bytes():
    assert pr.bad_request("heartbeat value too large") == (
        b"NATS/1.0 400 Bad Request - heartbeat value too large\r\n\r\n")
    assert pr.no_messages() == b"NATS/1.0 404 No Messages\r\n\r\n"
    assert pr.requests_pending() == b"NATS/1.0 408 Requests Pending\r\n\r\n"
    assert pr.request_timeout(5, 0) == (
        b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 5\r\nNats-Pending-Bytes: 0\r\n\r\n")
    assert pr.interest_expired(1, 20) == (
        b"NATS/1.0 408 Interest Expired\r\nNats-Pending-Messages: 1\r\nNats-Pending-Bytes: 20\r\n\r\n")
    assert pr.exceeded_max_waiting() == b"NATS/1.0 409 Exceeded MaxWaiting\r\n\r\n"
    assert pr.exceeded_max_request_batch(10) == b"NATS/1.0 409 Exceeded MaxRequestBatch of 10\r\n\r\n"
    assert pr.exceeded_max_request_expires(90 * SECOND) == (
        b"NATS/1.0 409 Exceeded MaxRequestExpires of 1m30s\r\n\r\n")
    assert pr.exceeded_max_request_expires(1_500_000) == (
        "NATS/1.0 409 Exceeded MaxRequestExpires of 1.5ms\r\n\r\n".encode())
    assert pr.exceeded_max_request_max_bytes(1000) == (
        b"NATS/1.0 409 Exceeded MaxRequestMaxBytes of 1000\r\n\r\n")
    assert pr.message_size_exceeds_max_bytes(1, 10) == (
        b"NATS/1.0 409 Message Size Exceeds MaxBytes\r\nNats-Pending-Messages: 1\r\n"
        b"Nats-Pending-Bytes: 10\r\n\r\n")
    assert pr.batch_completed(0, 65) == (
        b"NATS/1.0 409 Batch Completed\r\nNats-Pending-Messages: 0\r\nNats-Pending-Bytes: 65\r\n\r\n")
    assert pr.consumer_is_push_based() == b"NATS/1.0 409 Consumer is push based\r\n\r\n"
    assert pr.consumer_deleted() == b"NATS/1.0 409 Consumer Deleted\r\n\r\n"
    assert pr.leadership_change() == b"NATS/1.0 409 Leadership Change\r\n\r\n"
    assert pr.required_api_level() == b"NATS/1.0 412 Required Api Level\r\n\r\n"
    assert pr.pin_id_mismatch() == b"NATS/1.0 423 Nats-Pin-Id mismatch\r\n\r\n"
    assert pr.wrong_pin_id(2, 0) == (
        b"NATS/1.0 423 Nats-Wrong-Pin-Id\r\nNats-Pending-Messages: 2\r\nNats-Pending-Bytes: 0\r\n\r\n")
    assert pr.idle_heartbeat(3, 7) == (
        b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 3\r\nNats-Last-Stream: 7\r\n\r\n")
    assert pr.idle_heartbeat(3, 7, stalled="$JS.FC.S.C.ab12") == (
        b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 3\r\nNats-Last-Stream: 7\r\n"
        b"Nats-Consumer-Stalled: $JS.FC.S.C.ab12\r\n\r\n")
    assert pr.flow_control_request() == b"NATS/1.0 100 FlowControl Request\r\n\r\n"


def test_pending_counts_print_negative_values_as_go_does():
    # a batch of -5 (Atoi accepts it) is reported as sent
    assert pr.request_timeout(-5, -2) == (
        b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: -5\r\nNats-Pending-Bytes: -2\r\n\r\n")


# -- bodies --------------------------------------------------------------------------------
@pytest.mark.parametrize("body,expected", [
    (b"", PullRequest(batch=1)),
    (None, PullRequest(batch=1)),
    (b"  \t\r\n", PullRequest(batch=1)),
    (b"5", PullRequest(batch=5)),
    (b"+20", PullRequest(batch=20)),
    (b"020", PullRequest(batch=20)),
    (b" 20 ", PullRequest(batch=20)),
    (b"\xc2\xa020\xe3\x80\x80", PullRequest(batch=20)),       # NBSP and ideographic space trim
    (b"-5", PullRequest(batch=-5)),
    (b"0", PullRequest(batch=0)),
    (b"\x8520", PullRequest(batch=1)),                        # an invalid byte is no space
    (b"20abc", PullRequest(batch=1)),
    (b"1_000", PullRequest(batch=1)),
    (b"1.5", PullRequest(batch=1)),
    (b"99999999999999999999", PullRequest(batch=1)),          # out of int64: Atoi fails
    (b"abc", PullRequest(batch=1)),
    (b"{}", PullRequest(batch=0, group="")),
    (b'{"batch":5}', PullRequest(batch=5, group="")),
    (b'{"expires":100000000}', PullRequest(batch=0, expires=100_000_000, group="")),
    (b'{"batch":-0}', PullRequest(batch=0, group="")),
    (b'{"BATCH":20}', PullRequest(batch=20, group="")),
    (b'{"Max_Bytes":7}', PullRequest(batch=0, max_bytes=7, group="")),
    (b'{"maxbytes":7}', PullRequest(batch=0, group="")),      # underscores matter
    (b'{"expire\xc5\xbf":3}', PullRequest(batch=0, expires=3, group="")),   # long s folds to s
    (b'{"\xc4\xb1d":"x"}', PullRequest(batch=0, group="")),    # dotless i does not fold to i
    (b'{"\\u0062atch":4}', PullRequest(batch=4, group="")),
    (b'{"batch":1,"batch":2}', PullRequest(batch=2, group="")),
    (b'{"no_wait":null,"batch":null}', PullRequest(batch=0, group="")),
    (b'{"batch":3,"x":[1,{"y":[]}],"z":"w"}', PullRequest(batch=3, group="")),
    (b'{"no_wait":true}', PullRequest(batch=0, no_wait=True, group="")),
    (b'{"group":"A","id":"pin","min_pending":2,"min_ack_pending":3,"priority":4}',
     PullRequest(batch=0, group="A", id="pin", min_pending=2, min_ack_pending=3, priority=4)),
    (b'{"group":"A\xff\\ud800"}', PullRequest(batch=0, group="A\ufffd\ufffd")),
    (b'{"idle_heartbeat":1,"expires":2}', PullRequest(batch=0, expires=2, idle_heartbeat=1, group="")),
    # heartbeat*2 wraps in int64 and then is not more than expires
    (b'{"idle_heartbeat":4611686018427387904}',
     PullRequest(batch=0, idle_heartbeat=4611686018427387904, group="")),
    (b'{"expires":-5}', PullRequest(batch=0, expires=-5, group="")),
])
def test_bodies_read_as_nats_server_reads_them(body, expected):
    assert pr.parse_request(body) == expected


@pytest.mark.parametrize("body,error", [
    (b'{"idle_heartbeat":600000000,"expires":1000000000}', "heartbeat value too large"),
    (b'{"idle_heartbeat":1}', "heartbeat value too large"),
    (b'{"idle_heartbeat":4611686018427387903}', "heartbeat value too large"),
    (b'{"batch":"x"}', "json: cannot unmarshal string into Go struct field .batch of type int"),
    (b'{"batch":1.5}', "json: cannot unmarshal number 1.5 into Go struct field .batch of type int"),
    (b'{"batch":1e2}', "json: cannot unmarshal number 1e2 into Go struct field .batch of type int"),
    (b'{"batch":99999999999999999999}',
     "json: cannot unmarshal number 99999999999999999999 into Go struct field .batch of type int"),
    (b'{"no_wait":1}', "json: cannot unmarshal number into Go struct field .no_wait of type bool"),
    (b'{"no_wait":"true"}', "json: cannot unmarshal string into Go struct field .no_wait of type bool"),
    (b'{"group":5}', "json: cannot unmarshal number into Go struct field .group of type string"),
    (b'{"group":true}', "json: cannot unmarshal bool into Go struct field .group of type string"),
    (b'{"group":[1]}', "json: cannot unmarshal array into Go struct field .group of type string"),
    (b'{"batch":{}}', "json: cannot unmarshal object into Go struct field .batch of type int"),
    (b'{"expires":"1s"}',
     "json: cannot unmarshal string into Go struct field .expires of type time.Duration"),
    (b'{"min_pending":"x"}',
     "json: cannot unmarshal string into Go struct field .min_pending of type int64"),
    (b'{"priority":1.0}', "json: cannot unmarshal number 1.0 into Go struct field .priority of type int"),
    (b'{"BATCH":"x"}', "json: cannot unmarshal string into Go struct field .BATCH of type int"),
    (b'{"batch":"x","batch":1}', "json: cannot unmarshal string into Go struct field .batch of type int"),
    (b'{"batch":5,"batch":"y"}', "json: cannot unmarshal string into Go struct field .batch of type int"),
    (b'{"batch":"x","max_bytes":"y"}',
     "json: cannot unmarshal string into Go struct field .batch of type int"),
    # syntax errors win over type errors anywhere in the body
    (b'{"batch":"x",bad', "invalid character 'b' looking for beginning of object key string"),
    (b'{"batch":"x"} x', "invalid character 'x' after top-level value"),
    (b"{bad", "invalid character 'b' looking for beginning of object key string"),
    (b'{"batch":1}x', "invalid character 'x' after top-level value"),
    (b'{"batch":NaN}', "invalid character 'N' looking for beginning of value"),
    (b'{"batch":\x01}', "invalid character '\\x01' looking for beginning of value"),
    (b'{"batch":1,}', "invalid character '}' looking for beginning of object key string"),
    (b'{"a":"\x01"}', "invalid character '\\x01' in string"),
    (b'{"a":"\t"}', "invalid character '\\t' in string"),
    (b'{"a":"\\x"}', "invalid escape sequence `\\x` in string"),
    (b'{"a":"\\u12x4"}', "invalid escape sequence `\\u12x4` in string"),
    (b'{"a":"\\u"}', 'invalid escape sequence `\\u"}` in string'),
    (b'{"a":"\\ud800\\u00"}', 'invalid escape sequence `\\u00"}` in string'),
    (b'{"a":"\\`"}', 'invalid escape sequence "\\\\`" in string'),
    (b'{"a":"\\ "}', 'invalid escape sequence "\\\\ " in string'),
    (b'{"a":"\\\xc3\xa9"}', 'invalid escape sequence "\\\\\\xc3" in string'),
    (b'{"a":-}', "invalid character '}' in numeric literal"),
    (b'{"a":1.}', "invalid character '}' in numeric literal"),
    (b'{"a":1e}', "invalid character '}' in numeric literal"),
    (b'{"a":1.e5}', "invalid character 'e' in numeric literal"),
    (b'{"a":-Infinity}', "invalid character 'I' in numeric literal"),
    (b'{"a":01}', "invalid character '1' after object key:value pair"),
    (b'{"a":0x10}', "invalid character 'x' after object key:value pair"),
    (b'{"a":tru}', "invalid character '}' in literal true (expecting 'e')"),
    (b'{"a":trUe}', "invalid character 'U' in literal true (expecting 'u')"),
    (b'{"a":nul}', "invalid character '}' in literal null (expecting 'l')"),
    (b'{"a":f}', "invalid character '}' in literal false (expecting 'a')"),
    (b'{"a":truex}', "invalid character 'x' after object key:value pair"),
    (b'{"a" 1}', "invalid character '1' after object key"),
    (b'{"a"}', "invalid character '}' after object key"),
    (b'{"a":}', "invalid character '}' looking for beginning of value"),
    (b'{"a":1 "b"}', "invalid character '\"' after object key:value pair"),
    (b'{"a":[1 2]}', "invalid character '2' after array element"),
    (b'{"a":[1,]}', "invalid character ']' looking for beginning of value"),
    (b'{"a":1]', "invalid character ']' after object key:value pair"),
    (b'{"a":1}}', "invalid character '}' after top-level value"),
    (b'{\x0b}', "invalid character '\\v' looking for beginning of object key string"),
    (b'{"a":\'x\'}', "invalid character '\\'' looking for beginning of value"),
    (b'{"a":\xff}', "invalid character '\\xff' looking for beginning of value"),
    (b'{"a":\xe2\x82}', "invalid character '\\xe2' looking for beginning of value"),
    (b'{"a":\xc2\x80}', "invalid character '\\u0080' looking for beginning of value"),
    (b'{"a":\xe2\x80\x8b}', "invalid character '\\u200b' looking for beginning of value"),
    (b'{"a":\xc3\xa9}', "invalid character '\u00e9' looking for beginning of value"),
    (b'{"a":\xf0\x9f\x98\x80}', "invalid character '\U0001f600' looking for beginning of value"),
    (b"{", "unexpected end of JSON input"),
    (b'{"a":"abc', "unexpected end of JSON input"),
    (b'{"a":"\\', "unexpected end of JSON input"),
    (b'{"batch":20,', "unexpected end of JSON input"),
    (b'{"a":"\\ud800\\"}', "unexpected end of JSON input"),
    (b'{"a":' + b"[" * 10000 + b"]" * 10000 + b"}", "exceeded max depth"),
    (b'{"a":' + b"[" * 10001, "exceeded max depth"),
])
def test_bad_bodies_get_go_error_texts(body, error):
    with pytest.raises(pr.PullRequestError) as raised:
        pr.parse_request(body)
    assert raised.value.message == error
    assert raised.value.status == pr.bad_request(error)


def test_nesting_up_to_go_limit_is_accepted():
    body = b'{"batch":2,"a":' + b"[" * 9999 + b"]" * 9999 + b"}"
    assert pr.parse_request(body) == PullRequest(batch=2, group="")


def test_trim_space_and_atoi_follow_go():
    assert trim_space(b"\xc2\x85 x \xe2\x80\xa8\t") == b"x"
    assert trim_space(b"\xe2\x80\x8bx") == b"\xe2\x80\x8bx"      # zero width: not a space
    assert trim_space(b"\xc2") == b"\xc2"
    assert atoi(b"-9223372036854775808") == -(1 << 63)
    assert atoi(b"9223372036854775808") is None
    assert atoi(b"+") is None and atoi(b"") is None


# -- checks before queueing ---------------------------------------------------------------
@pytest.mark.parametrize("cfg,body,status", [
    (LIMITED, b'{"batch":10}', None),
    (LIMITED, b'{"batch":11}', b"NATS/1.0 409 Exceeded MaxRequestBatch of 10\r\n\r\n"),
    (LIMITED, b"11", b"NATS/1.0 409 Exceeded MaxRequestBatch of 10\r\n\r\n"),
    (LIMITED, b"-5", None),
    (LIMITED, b'{"expires":1000000000}', None),
    (LIMITED, b'{"expires":2000000000}', b"NATS/1.0 409 Exceeded MaxRequestExpires of 1s\r\n\r\n"),
    (LIMITED, b'{"expires":-2000000000}', None),
    (LIMITED, b'{"max_bytes":1000}', None),
    (LIMITED, b'{"max_bytes":1001}', b"NATS/1.0 409 Exceeded MaxRequestMaxBytes of 1000\r\n\r\n"),
    # the order: batch, then expires, then max_bytes, then the priority group
    (LIMITED, b'{"batch":20,"expires":2000000000,"max_bytes":2000}',
     b"NATS/1.0 409 Exceeded MaxRequestBatch of 10\r\n\r\n"),
    (LIMITED, b'{"expires":2000000000,"max_bytes":2000}',
     b"NATS/1.0 409 Exceeded MaxRequestExpires of 1s\r\n\r\n"),
    (LIMITED, b'{"max_bytes":2000,"priority":10}',
     b"NATS/1.0 409 Exceeded MaxRequestMaxBytes of 1000\r\n\r\n"),
    (LIMITED, b'{"min_pending":1}', b"NATS/1.0 400 Bad Request - Not a Overflow Priority consumer\r\n\r\n"),
    (LIMITED, b'{"min_ack_pending":-1}',
     b"NATS/1.0 400 Bad Request - Not a Overflow Priority consumer\r\n\r\n"),
    (LIMITED, b'{"id":"x"}', b"NATS/1.0 400 Bad Request - Not a Pinned Client Priority consumer\r\n\r\n"),
    (LIMITED, b'{"priority":10}', b"NATS/1.0 400 Bad Request - Priority must be between 0 and 9\r\n\r\n"),
    (LIMITED, b'{"priority":-1}', b"NATS/1.0 400 Bad Request - Priority must be between 0 and 9\r\n\r\n"),
    (LIMITED, b'{"group":"g"}', None),                 # no policy: the group is not looked at
    (LIMITED, b'{"group":"x","min_pending":1,"id":"y"}',
     b"NATS/1.0 400 Bad Request - Not a Overflow Priority consumer\r\n\r\n"),
    (OVERFLOW, b"5", None),                            # not JSON: no priority group at all
    (OVERFLOW, b'{"batch":1}', b"NATS/1.0 400 Bad Request - Priority Group missing\r\n\r\n"),
    (OVERFLOW, b'{"group":"B"}', b"NATS/1.0 400 Bad Request - Invalid Priority Group\r\n\r\n"),
    (OVERFLOW, b'{"group":"A","min_pending":5,"min_ack_pending":1}', None),
    (OVERFLOW, b'{"group":"A","id":"x"}',
     b"NATS/1.0 400 Bad Request - Not a Pinned Client Priority consumer\r\n\r\n"),
    (OVERFLOW, b'{"priority":12}', b"NATS/1.0 400 Bad Request - Priority must be between 0 and 9\r\n\r\n"),
    (PINNED, b'{"group":"A","id":"x"}', None),
    (PINNED, b'{"group":"A","min_pending":1}',
     b"NATS/1.0 400 Bad Request - Not a Overflow Priority consumer\r\n\r\n"),
    (PRIORITIZED, b'{"group":"B","priority":9}', None),
    (PRIORITIZED, b'{"group":"A","priority":-1}',
     b"NATS/1.0 400 Bad Request - Priority must be between 0 and 9\r\n\r\n"),
])
def test_pre_queue_checks_in_nats_server_order(cfg, body, status):
    assert pr.check_request(cfg, pr.parse_request(body)) == status


def test_pin_mismatch_needs_a_pin_and_another_id():
    request = pr.parse_request(b'{"group":"A","id":"old"}')
    assert pr.check_request(PINNED, request) is None
    assert pr.check_request(PINNED, request, pin_id="old") is None
    assert pr.renews_pin(PINNED, request, "old")
    assert pr.check_request(PINNED, request, pin_id="new") == b"NATS/1.0 423 Nats-Pin-Id mismatch\r\n\r\n"
    no_id = pr.parse_request(b'{"group":"A"}')
    assert pr.check_request(PINNED, no_id, pin_id="new") is None
    assert not pr.renews_pin(PINNED, no_id, "new")


def test_check_pull_request_runs_everything_in_order():
    push = config(deliver_subject="deliver.here", max_batch=1)
    assert pr.check_pull_request(push, b"{bad") == (None, pr.CONSUMER_IS_PUSH_BASED)
    level = b"NATS/1.0\r\nNats-Required-Api-Level: 99\r\n\r\n"
    assert pr.check_pull_request(LIMITED, b"{bad", level) == (None, pr.REQUIRED_API_LEVEL)
    not_a_number = b"NATS/1.0\r\nNats-Required-Api-Level: x\r\n\r\n"
    assert pr.check_pull_request(LIMITED, b"", not_a_number) == (None, pr.REQUIRED_API_LEVEL)
    supported = b"NATS/1.0\r\nNats-Required-Api-Level: 1\r\n\r\n"
    assert pr.check_pull_request(LIMITED, b"3", supported) == (PullRequest(batch=3), None)
    assert pr.check_pull_request(LIMITED, b"{bad")[1] == pr.bad_request(
        "invalid character 'b' looking for beginning of object key string")
    assert pr.check_pull_request(LIMITED, b"11") == (None, pr.exceeded_max_request_batch(10))
    # settings left unset (None) count as unset
    assert pr.check_pull_request(config(max_batch=None, priority_policy=None), b"11")[1] is None


def test_no_wait_and_full_queue_answers():
    no_wait = pr.parse_request(b'{"no_wait":true,"batch":5}')
    assert pr.no_wait_status(no_wait, 0, 0) == pr.NO_MESSAGES
    assert pr.no_wait_status(no_wait, 2, 5) == pr.REQUESTS_PENDING
    assert pr.no_wait_status(no_wait, 5, 5) is None
    with_expiry = pr.parse_request(b'{"no_wait":true,"expires":1000}')
    assert pr.no_wait_status(with_expiry, 0, 0) is None
    assert pr.no_wait_status(pr.parse_request(b"5"), 0, 0) is None
    assert pr.queue_full_status(no_wait) == pr.EXCEEDED_MAX_WAITING
    assert pr.queue_full_status(pr.parse_request(b'{"idle_heartbeat":1,"expires":5}')) is None


# -- properties ------------------------------------------------------------------------------
_JSONISH = st.sampled_from([b"{", b"}", b"[", b"]", b",", b":", b'"batch"', b'"group"', b'"A"',
                            b'"\\u0041"', b'"\\ud800"', b"\\", b'"', b"1", b"-", b"0", b".", b"e",
                            b"true", b"null", b"fals", b" ", b"\t", b"\xff", b"\xc3\xa9", b"x",
                            b"12345678901234567890", b"1.5", b'"\\t"', b"\x00"])


@given(st.one_of(st.binary(max_size=64), st.lists(_JSONISH, max_size=16).map(b"{".join),
                 st.lists(_JSONISH, max_size=16).map(lambda parts: b"{" + b"".join(parts))))
def test_parse_raises_only_pull_request_error(body):
    try:
        request = pr.parse_request(body)
    except pr.PullRequestError as error:
        assert error.status.startswith(b"NATS/1.0 400 Bad Request - ")
        assert error.status.endswith(b"\r\n\r\n") and error.status.count(b"\r\n") == 2
    else:
        assert isinstance(request, PullRequest)
        assert (request.group is None) == (not trim_space(body or b"").startswith(b"{"))


_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(1 << 70), max_value=1 << 70),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8)
_KEYS = st.one_of(st.sampled_from(list(pr.GET_NEXT_REQUEST.fields) + ["BATCH", "No_Wait", "x"]),
                  st.text(max_size=6))


def _reading(read, body):
    try:
        return read(body, pr.GET_NEXT_REQUEST)
    except gojson.GoJSONError as error:
        return ("error", str(error))


@given(st.lists(st.tuples(_KEYS, _VALUES), max_size=6))
def test_fast_and_exact_readings_agree_on_json(members):
    body = ("{" + ",".join(json.dumps(key) + ":" + json.dumps(value) for key, value in members)
            + "}").encode()
    assert _reading(gojson.unmarshal, body) == _reading(gojson.unmarshal_exact, body)


@settings(max_examples=300)
@given(st.binary(max_size=40))
def test_fast_and_exact_readings_give_the_same_verdict(tail):
    body = b'{"batch":' + tail
    assert _reading(gojson.unmarshal, body) == _reading(gojson.unmarshal_exact, body)


# -- against nats-server ---------------------------------------------------------------------
natsserver = pytest.importorskip("natsserver")
INBOX = "_PULLTEST"


class RawClient:
    """A nats-py connection that keeps every message to its inbox with the raw header
    block as the server sent it (nats-py's Msg does not keep it)."""

    async def start(self, url: str) -> None:
        import nats
        self.nc = await nats.connect(url)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.sids = {(await self.nc.subscribe(f"{INBOX}.>"))._id}
        original = self.nc._process_msg

        async def intercept(msg_sid, subject, reply, data, headers):
            if msg_sid in self.sids:
                self.queue.put_nowait((subject.decode(), reply.decode() if reply else "",
                                       bytes(headers) if headers else None, bytes(data)))
                return
            await original(msg_sid, subject, reply, data, headers)
        self.nc._process_msg = intercept
        self.count = 0

    async def watch(self, subject: str) -> None:
        """Keep what arrives on a literal subject too (nats-server's push consumers only
        deliver to a deliver subject someone subscribed literally)."""
        self.sids.add((await self.nc.subscribe(subject))._id)

    async def api(self, subject: str, body: dict) -> dict:
        answer = json.loads((await self.nc.request(subject, json.dumps(body).encode(), timeout=5)).data)
        assert "error" not in answer, answer
        return answer

    async def store(self, subject: str, payload: bytes) -> None:
        """Publish to the stream and wait for its ack (so the consumers have seen it)."""
        answer = json.loads((await self.nc.request(subject, payload, timeout=5)).data)
        assert "seq" in answer, answer

    def inbox(self) -> str:
        self.count += 1
        return f"{INBOX}.{self.count}"

    async def send(self, subject: str, body: bytes, headers=None) -> str:
        inbox = self.inbox()
        await self.nc.publish(subject, body, reply=inbox, headers=headers)
        return inbox

    async def arrivals(self, seconds: float) -> list:
        """Everything that arrives for `seconds`, in order: (subject, reply, raw header
        block or None, payload). Statuses come on the request's inbox; deliveries come
        with their stream subject (and the ack reply)."""
        await self.nc.flush()
        arrived = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while (left := deadline - loop.time()) > 0:
            try:
                arrived.append(await asyncio.wait_for(self.queue.get(), left))
            except asyncio.TimeoutError:
                break
        return arrived

    async def collect(self, seconds: float) -> dict[str, list]:
        """The statuses that arrive for `seconds`, by inbox."""
        answers: dict[str, list] = {}
        for arrival in await self.arrivals(seconds):
            answers.setdefault(arrival[0], []).append(arrival)
        return answers

    async def exchange(self, subject: str, body: bytes, seconds: float, headers=None) -> list:
        """One request: the deliveries and the statuses to its inbox, in order."""
        inbox = await self.send(subject, body, headers)
        return [arrival for arrival in await self.arrivals(seconds)
                if arrival[0] == inbox or arrival[1].startswith("$JS.ACK.")]


NEXT = "$JS.API.CONSUMER.MSG.NEXT.S."
PULL_CONFIGS = {
    # filtered on their own subjects so that what one test publishes reaches only its own
    "C": dict(filter_subject="s.c", max_batch=10, max_expires=SECOND, max_bytes=1000,
              max_waiting=10000),
    "O": dict(filter_subject="s.o", priority_policy="overflow", priority_groups=["A"]),
    "P": dict(filter_subject="s.p", priority_policy="pinned_client", priority_groups=["A"]),
    "R": dict(filter_subject="s.r", priority_policy="prioritized", priority_groups=["A", "B"]),
}

# bodies whose first answer is a pre-queue status (or, passing, a short timeout)
PRE_QUEUE_CASES = [
    ("C", b'{"batch":20}'), ("C", b"11"), ("C", b"+11"), ("C", b'{"expires":2000000000}'),
    ("C", b'{"max_bytes":2000}'), ("C", b'{"batch":20,"expires":2000000000,"max_bytes":2000}'),
    ("C", b'{"idle_heartbeat":600000000,"expires":1000000000}'), ("C", b'{"min_pending":1}'),
    ("C", b'{"id":"x"}'), ("C", b'{"priority":10}'), ("C", b'{"priority":-1}'),
    ("C", b'{"no_wait":true}'), ("C", b'{"no_wait":true,"batch":5}'),
    ("C", b'{"expires":50000000}'), ("C", b'{"batch":3,"max_bytes":100,"expires":50000000}'),
    ("C", b'{"expires":-5,"batch":-2}'),
    ("O", b'{"batch":1}'), ("O", b'{"group":"B"}'), ("O", b'{"group":"A","id":"x"}'),
    ("O", b'{"group":"A","expires":50000000,"min_pending":3}'),
    ("P", b'{"group":"A","min_pending":1}'), ("P", b'{"group":""}'),
    ("R", b'{"group":"A","priority":-1}'), ("R", b'{"group":"B","priority":10}'),
    ("R", b'{"group":"B","priority":9,"expires":50000000,"batch":2}'),
] + [("C", body) for body in [
    b'{"batch":"x"}', b'{"batch":1.5}', b'{"batch":1e2}', b'{"no_wait":1}', b'{"group":5}',
    b'{"batch":{}}', b'{"batch":[]}', b'{"expires":"1s"}', b"{bad", b'{"batch":1}x',
    b'{"batch":NaN}', b'{"BATCH":"x"}', b'{"expire\xc5\xbf":"x"}', b'{"batch":"x","batch":1}',
    b'{"batch":"x",bad', b'{"batch":\x01}', b'{"a":"\x01"}', b'{"a":"\\x"}',
    b'{"a":"\\u12x4"}', b'{"a":"\\u"}', b'{"a":"\\`"}', b'{"a":"\\\xc3\xa9"}', b'{"a":1.e5}',
    b'{"a":-}', b'{"a":tru}', b'{"a":nulL}', b'{"a" 1}', b'{"a":1 "b"}', b'{"a":[1 2]}',
    b'{"a":[1,]}', b'{"a":{"b":]}}', b'{"a":1]', b'{', b'{"a":"abc', b'{"a":\xff}',
    b'{"a":\xc2\x80}', b'{"a":\xc3\xa9}', b'{"a":\xe2\x80\x8b}', b'{\x0b}', b'{"a":\'x\'}',
    b'{"a":' + b"[" * 10000 + b"]" * 10000 + b"}"]]


def _expected_first_answer(name: str, body: bytes) -> bytes | None:
    """What nats-server sends first to a request on an empty filter: the pre-queue status,
    404 for no_wait, a 408 for a request expiring within the test's wait, else nothing."""
    cfg = config(**{key: value for key, value in PULL_CONFIGS[name].items()
                    if key in ("max_batch", "max_expires", "max_bytes", "priority_groups",
                               "priority_policy")})
    request, status = pr.check_pull_request(cfg, body)
    if status is not None:
        return status
    status = pr.no_wait_status(request, 0, 0)
    if status is not None:
        return status
    if request.expires and request.expires < SECOND // 2:
        return pr.request_timeout(request.batch, request.max_bytes)
    return None


def _first_header(answers: list) -> bytes | None:
    return answers[0][2] if answers else None


def _size(subject: str, reply: str, hdr: bytes | None, data: bytes) -> int:
    """What a delivery counts against max_bytes: subject, ack reply, headers and payload."""
    return len(subject) + len(reply) + len(hdr or b"") + len(data)


async def _pull_statuses(url: str) -> None:
    client = RawClient()
    await client.start(url)
    try:
        await client.api("$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
        for name, extra in PULL_CONFIGS.items():
            await client.api(f"$JS.API.CONSUMER.CREATE.S.{name}", {
                "stream_name": "S", "config": {"durable_name": name, "ack_policy": "explicit",
                                               **extra}})

        # an idle heartbeat before anything was delivered (the stream is still empty)
        answers = await client.exchange(
            NEXT + "C", b'{"batch":1,"expires":1000000000,"idle_heartbeat":150000000}', 0.4)
        assert _first_header(answers) == pr.idle_heartbeat(0, 0)

        # every pre-queue status (and 404 / 408 on the empty filters), sent all at once
        inboxes = [await client.send(NEXT + name, body) for name, body in PRE_QUEUE_CASES]
        level = await client.send(NEXT + "C", b"", {"Nats-Required-Api-Level": "99"})
        answers = await client.collect(0.8)
        for inbox, (name, body) in zip(inboxes, PRE_QUEUE_CASES):
            assert _first_header(answers.get(inbox, [])) == _expected_first_answer(name, body), \
                (name, body[:60])
        assert _first_header(answers.get(level, [])) == pr.REQUIRED_API_LEVEL

        await _push_based_and_deleted(client)
        await _flow_control(client)
        await _max_bytes_statuses(client)
        await _pins(client)
        await _waiting_queue_statuses(client)
    finally:
        await client.nc.close()


async def _push_based_and_deleted(client: RawClient) -> None:
    await client.api("$JS.API.CONSUMER.CREATE.S.PUSH", {"stream_name": "S", "config": {
        "durable_name": "PUSH", "deliver_subject": "deliver.push", "filter_subject": "s.push"}})
    answers = await client.exchange(NEXT + "PUSH", b"", 0.3)
    assert _first_header(answers) == pr.consumer_is_push_based()

    await client.api("$JS.API.CONSUMER.CREATE.S.D", {"stream_name": "S", "config": {
        "durable_name": "D", "filter_subject": "s.d"}})
    waiting = await client.send(NEXT + "D", b'{"batch":2,"expires":5000000000}')
    await client.collect(0.1)
    await client.api("$JS.API.CONSUMER.DELETE.S.D", {})
    answers = await client.collect(0.3)
    assert _first_header(answers.get(waiting, [])) == pr.consumer_deleted()


async def _flow_control(client: RawClient) -> None:
    """A push consumer past half its flow control window asks for flow control; while
    that goes unanswered its idle heartbeats say it is stalled on that reply subject."""
    deliver = "push.flow.control"
    await client.watch(deliver)
    await client.api("$JS.API.CONSUMER.CREATE.S.F", {"stream_name": "S", "config": {
        "durable_name": "F", "deliver_subject": deliver, "filter_subject": "s.f",
        "flow_control": True, "idle_heartbeat": 200_000_000, "ack_policy": "none"}})
    await client.store("s.f", b"x" * 600_000)
    await client.store("s.f", b"y" * 600_000)
    arrived = await client.arrivals(0.6)
    deliveries = [a for a in arrived if a[0] == "s.f"]
    requests = [a for a in arrived if a[0] == deliver and a[1].startswith("$JS.FC.S.F.")]
    assert len(deliveries) == 2 and len(requests) == 1
    assert requests[0][2] == pr.flow_control_request()
    last_stream_seq = int(deliveries[1][1].split(".")[5])
    stalled = pr.idle_heartbeat(2, last_stream_seq, stalled=requests[0][1])
    assert stalled in [a[2] for a in arrived if a[0] == deliver and not a[1]]
    await client.api("$JS.API.CONSUMER.DELETE.S.F", {})
    await client.arrivals(0.1)                          # the last heartbeats in flight


async def _max_bytes_statuses(client: RawClient) -> None:
    await client.api("$JS.API.CONSUMER.CREATE.S.B", {"stream_name": "S", "config": {
        "durable_name": "B", "filter_subject": "s.b", "ack_policy": "none"}})
    for n in range(3):
        await client.store("s.b", b"payload-%d" % n)
    # a batch done with bytes to spare ends with 409 Batch Completed
    answers = await client.exchange(NEXT + "B", b'{"batch":1,"max_bytes":1000,"expires":1000000000}', 0.3)
    subject, reply, hdr, data = answers[0]
    assert hdr is None and data == b"payload-0"
    assert answers[1][2] == pr.batch_completed(0, 1000 - _size(subject, reply, hdr, data))
    # a message bigger than what is left ends the request
    answers = await client.exchange(NEXT + "B", b'{"batch":2,"max_bytes":10,"expires":1000000000}', 0.3)
    assert [a[2] for a in answers] == [pr.message_size_exceeds_max_bytes(2, 10)]
    # a batch of 0 (a JSON body without one) or below is served one message, then it ends
    for body, payload in ((b'{"expires":1000000000}', b"payload-1"), (b"-5", b"payload-2")):
        assert pr.parse_request(body).batch <= 0
        answers = await client.exchange(NEXT + "B", body, 0.3)
        assert [(a[2], a[3]) for a in answers] == [(None, payload)]


async def _pins(client: RawClient) -> None:
    await client.store("s.p", b"pinned")
    answers = await client.exchange(NEXT + "P", b'{"group":"A","batch":1,"expires":1000000000}', 0.3)
    hdr = answers[0][2]
    pin = hdr.split(b"Nats-Pin-Id: ")[1].split(b"\r\n")[0].decode()
    cfg = config(priority_policy="pinned_client", priority_groups=["A"])
    wrong = b'{"group":"A","id":"not-the-pin","expires":1000000000}'
    answers = await client.exchange(NEXT + "P", wrong, 0.3)
    assert _first_header(answers) == pr.check_request(cfg, pr.parse_request(wrong), pin_id=pin)
    assert _first_header(answers) == pr.pin_id_mismatch()
    # a waiting request holding the pin hears 423 Nats-Wrong-Pin-Id once the pin is gone
    holder = await client.send(NEXT + "P", b'{"group":"A","id":"%s","batch":2,"expires":3000000000}'
                               % pin.encode())
    await client.collect(0.1)
    await client.api("$JS.API.CONSUMER.UNPIN.S.P", {"group": "A"})
    await client.store("s.p", b"next")
    answers = await client.collect(0.3)
    assert _first_header(answers.get(holder, [])) == pr.wrong_pin_id(2, 0)


async def _waiting_queue_statuses(client: RawClient) -> None:
    # a full wait queue answers 409 Exceeded MaxWaiting, except to a request with heartbeats
    await client.api("$JS.API.CONSUMER.CREATE.S.W", {"stream_name": "S", "config": {
        "durable_name": "W", "filter_subject": "s.w", "max_waiting": 1}})
    await client.send(NEXT + "W", b'{"expires":3000000000}')
    over = b'{"expires":3000000000}'
    quiet = b'{"expires":3000000000,"idle_heartbeat":1000000000}'
    loud_inbox = await client.send(NEXT + "W", over)
    quiet_inbox = await client.send(NEXT + "W", quiet)
    answers = await client.collect(0.3)
    assert _first_header(answers.get(loud_inbox, [])) == pr.queue_full_status(pr.parse_request(over))
    assert answers.get(quiet_inbox) is None and pr.queue_full_status(pr.parse_request(quiet)) is None

    # 408 Requests Pending: messages are pending but the waiting requests want more
    await client.api("$JS.API.CONSUMER.CREATE.S.Q", {"stream_name": "S", "config": {
        "durable_name": "Q", "filter_subject": "s.q", "ack_policy": "explicit",
        "max_ack_pending": 1}})
    await client.store("s.q", b"one")
    await client.exchange(NEXT + "Q", b"1", 0.2)          # delivered, not acked: Q is stalled
    await client.store("s.q", b"two")
    await client.store("s.q", b"three")
    await client.send(NEXT + "Q", b'{"batch":5,"expires":3000000000}')
    body = b'{"batch":1,"no_wait":true}'
    answers = await client.exchange(NEXT + "Q", body, 0.3)
    assert _first_header(answers) == pr.no_wait_status(pr.parse_request(body), 2, 5)
    assert _first_header(answers) == pr.requests_pending()


@pytest.mark.natsserver
def test_statuses_match_nats_server(tmp_path):
    natsserver.require_nats_server()
    pytest.importorskip("nats")
    with natsserver.nats_server(tmp_path / "server") as server:
        asyncio.run(_pull_statuses(server.url))


async def _expires_texts(url: str, limits: list[int]) -> None:
    client = RawClient()
    await client.start(url)
    try:
        await client.api("$JS.API.STREAM.CREATE.E", {"name": "E", "subjects": ["e.>"]})
        inboxes = []
        for number, limit in enumerate(limits):
            await client.api(f"$JS.API.CONSUMER.CREATE.E.X{number}", {"stream_name": "E", "config": {
                "durable_name": f"X{number}", "max_expires": limit}})
            inboxes.append(await client.send(f"$JS.API.CONSUMER.MSG.NEXT.E.X{number}",
                                             b'{"expires":%d}' % (limit * 2)))
        answers = await client.collect(0.5)
        for inbox, limit in zip(inboxes, limits):
            assert _first_header(answers.get(inbox, [])) == pr.exceeded_max_request_expires(limit)
    finally:
        await client.nc.close()


@pytest.mark.natsserver
def test_max_expires_prints_as_go_duration(tmp_path):
    """nats-server formats max_expires with %v: Go's Duration.String()."""
    natsserver.require_nats_server()
    pytest.importorskip("nats")
    limits = [1_000_000, 1_500_000, 123_456_789, SECOND, 1_500 * 1_000_000, 90 * SECOND,
              3600 * SECOND, 3600 * SECOND + 1_000_000, 100 * 3600 * SECOND + 1]
    with natsserver.nats_server(tmp_path / "server") as server:
        asyncio.run(_expires_texts(server.url, limits))
