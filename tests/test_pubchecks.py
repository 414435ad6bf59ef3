"""Header blocks and the publish-path checks: nats-server's lookups, errors and texts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from jsstore.wire import headers
from jsstore.wire import apierrors as errors
from jsstore.wire.headers import HeaderBlock, HeaderError
from jsstore.stream.checks import (DedupeWindow, check_expected, check_headers, check_sizes,
                                   msg_ttl, parse_msg_ttl, parse_uint, rollup_mode)

SECOND = 1_000_000_000


def block(*pairs: tuple[str, str]) -> bytes:
    return headers.build(list(pairs))


# ---- headers.get: nats-server's sliceHeader cases -------------------------------------------

@pytest.mark.parametrize("hdr,key,expected", [
    (b"NATS/1.0\r\nEmpty-Header: \r\n\r\n", "Empty-Header", b""),
    (b"NATS/1.0\r\nX-Test-Header: a\r\nx-test-header: b\r\n\r\n", "X-Test-Header", b"a"),
    (b"NATS/1.0\r\nX-Test-Header: a\r\nx-test-header: b\r\n\r\n", "x-test-header", b"b"),
    (b"NATS/1.0\r\nX-Test-Header: a\r\n\r\n", "X-TEST-HEADER", None),
    (b"NATS/1.0\r\nExisting-Header: v\r\n\r\n", "Existing", None),
    (b"NATS/1.0\r\nExisting-Header: v\r\n\r\n", "Existing-Header-Extra", None),
    (b"NATS/1.0\r\nExisting-Header: v\r\n\r\n", "", None),
    (b"NATS/1.0\r\n\r\nX-Test:    spaced\r\n\r\n", "X-Test", b"spaced"),
    (b"NATS/1.0\r\n\r\nX-Test:value\r\n\r\n", "X-Test", b"value"),
    (b"NATS/1.0\r\n\r\nTest:value", "Test", b"value"),
    (b"NATS/1.0\n\nTest:value\n", "Test", None),
    (b"NATS/1.0\r\n\r\nTest: value:with:colons\r\n\r\n", "Test", b"value:with:colons"),
    (b"NATS/1.0\r\nX-My-Test-Header: 1\r\nTest: 2\r\n\r\n", "Test", b"2"),
    (b"NATS/1.0\r\nTest value\r\n\r\n", "Test", None),
    (b"Test: first\r\n", "Test", None),  # a key must start a line after the version line
    (b"NATS/1.0\r\nA: 1\r\nA: 2\r\n\r\n", "A", b"1"),
    (b"NATS/1.0\r\nA: trailing  \r\n\r\n", "A", b"trailing  "),
    (b"", "A", None),
    (None, "A", None),
])
def test_get_matches_nats_server_lookup(hdr, key, expected):
    assert headers.get(hdr, key) == expected


def test_parse_status_fields_and_repeats():
    parsed = headers.parse(b"NATS/1.0 404 No Messages\r\nA: 1\r\nB:2\r\nA:  3\r\n\r\n")
    assert (parsed.status, parsed.description) == ("404", "No Messages")
    assert parsed.fields == [("A", "1"), ("B", "2"), ("A", "3")]
    assert parsed.get("A") == "1" and parsed.get_all("A") == ["1", "3"]
    assert parsed.keys() == ["A", "B"] and "B" in parsed and "b" not in parsed
    assert parsed.to_dict() == {"A": ["1", "3"], "B": ["2"]}
    assert headers.parse(b"NATS/1.0 503\r\n\r\n").status == "503"
    assert headers.parse(b"NATS/1.0\r\n\r\n") == HeaderBlock()


@pytest.mark.parametrize("bad,offset", [
    (b"HTTP/1.1\r\n\r\n", 0),
    (b"NATS/1.1\r\n\r\n", 0),
    (b"NATS/1.0 40x Bad\r\n\r\n", 9),
    (b"NATS/1.0\r\nNoColon\r\n\r\n", 10),
    (b"NATS/1.0\r\n: empty key\r\n\r\n", 10),
    (b"NATS/1.0\r\nA B: space in key\r\n\r\n", 11),
    (b"NATS/1.0\r\nOk: 1\r\nBad\x00: x\r\n\r\n", 20),
])
def test_parse_rejects_malformed_blocks_with_offset(bad, offset):
    with pytest.raises(HeaderError) as caught:
        headers.parse(bad)
    assert caught.value.offset == offset


def test_parse_rejects_non_bytes():
    with pytest.raises(TypeError):
        headers.parse("NATS/1.0\r\n\r\n")


@pytest.mark.parametrize("pairs", [[("", "v")], [("A:B", "v")], [("A B", "v")], [("Ä", "v")],
                                   [("A", "line\r\nB: injected")], [("A", "lf\n")]])
def test_build_rejects_bad_keys_and_values(pairs):
    with pytest.raises(HeaderError):
        headers.build(pairs)


def test_build_forms():
    assert headers.build({}) == b"NATS/1.0\r\n\r\n"
    assert headers.build({"A": "1", "B": ["2", "3"]}) == b"NATS/1.0\r\nA: 1\r\nB: 2\r\nB: 3\r\n\r\n"
    assert headers.build([], status="408", description="Request Timeout") == \
        b"NATS/1.0 408 Request Timeout\r\n\r\n"
    with pytest.raises(HeaderError):
        headers.build([], status="40")
    with pytest.raises(HeaderError):
        headers.build([], description="no status")


def test_set_header_replaces_first_keeps_spacing_or_appends():
    assert headers.set_header(b"NATS/1.0\r\nTest: old\r\n\r\n", "Test", "new") == \
        b"NATS/1.0\r\nTest: new\r\n\r\n"
    assert headers.set_header(b"NATS/1.0\r\nTest:old\r\nTest: 2\r\n\r\n", "Test", "") == \
        b"NATS/1.0\r\nTest:\r\nTest: 2\r\n\r\n"
    assert headers.set_header(b"NATS/1.0\r\nA: 1\r\n\r\n", "New", "v") == \
        b"NATS/1.0\r\nA: 1\r\nNew: v\r\n\r\n"
    assert headers.set_header(None, "A", "1") == b"NATS/1.0\r\nA: 1\r\n\r\n"
    assert headers.set_header(b"NATS/1.0\r\n\r\n", "A", "1") == b"NATS/1.0\r\nA: 1\r\n\r\n"


def test_remove_header_first_middle_last_only_absent():
    three = block(("First", "1"), ("Second", "2"), ("Third", "3"))
    for key in ("First", "Second", "Third"):
        removed = headers.remove_header(three, key)
        assert headers.get(removed, key) is None
        assert [k for k, _ in headers.parse(removed)] == [k for k in ("First", "Second", "Third") if k != key]
    assert headers.remove_header(block(("Only", "v")), "Only") is None
    assert headers.remove_header(three, "Absent") is three
    assert headers.remove_header(three, "Fir") is three
    twice = block(("A", "1"), ("B", "2"), ("A", "3"))
    assert headers.remove_header(twice, "A") == block(("B", "2"), ("A", "3"))
    assert headers.remove_headers(twice, "A") == block(("B", "2"))
    assert headers.remove_headers(block(("A", "1"), ("A", "2")), "A") is None


keys = st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters=":"),
               min_size=1, max_size=12)
values = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\r\n"),
                 max_size=20).filter(lambda v: not v.startswith(" "))
pairs_strategy = st.lists(st.tuples(keys, values), max_size=8)


@given(pairs_strategy, st.sampled_from(["", "100", "404", "503"]))
def test_build_parse_round_trip(pairs, status):
    raw = headers.build(pairs, status=status, description="Desc" if status else "")
    parsed = headers.parse(raw)
    assert parsed.fields == pairs
    assert parsed.status == status
    assert parsed.encode() == raw
    for key, _ in pairs:
        first = next(v for k, v in pairs if k == key)
        assert headers.get_str(raw, key) == first


@given(st.binary(max_size=40).filter(lambda b: b"\r" not in b and b"\n" not in b))
def test_values_survive_as_bytes(value):
    raw = b"NATS/1.0\r\nK: " + value + b"\r\n\r\n"
    parsed = headers.parse(raw)
    expected = value.lstrip(b" ")
    assert headers.get(raw, "K") == expected
    assert parsed.get("K").encode("utf-8", "surrogateescape") == expected


@given(pairs_strategy, keys, values)
def test_set_then_get_and_remove(pairs, key, value):
    raw = headers.set_header(headers.build(pairs), key, value)
    assert headers.get_str(raw, key) == value
    stripped = headers.remove_headers(raw, key)
    assert headers.get(stripped, key) is None
    if stripped is not None:
        assert [p for p in headers.parse(stripped)] == [p for p in pairs if p[0] != key]


@given(st.binary(max_size=80))
def test_arbitrary_bytes_never_crash(raw):
    headers.get(raw, "Nats-Msg-Id")
    try:
        headers.parse(raw)
    except HeaderError:
        pass


# ---- Expected-* headers --------------------------------------------------------------------

def last_for(table):
    return lambda subject: table.get(subject, 0)


def expected(hdr, *, subject="orders.new", last_seq=10, last_msg_id="m-10", table=None):
    check_expected(hdr, stream_name="ORDERS", last_seq=last_seq, last_msg_id=last_msg_id,
                   last_seq_for_subject=last_for(table or {"orders.new": 7, "orders.old": 3}),
                   subject=subject)


def test_expected_headers_pass_when_they_match():
    expected(None)
    expected(block(("Nats-Expected-Stream", "ORDERS"), ("Nats-Expected-Last-Sequence", "10"),
                   ("Nats-Expected-Last-Subject-Sequence", "7"), ("Nats-Expected-Last-Msg-Id", "m-10")))
    expected(block(("Nats-Expected-Last-Subject-Sequence", "0")), subject="orders.none")
    expected(block(("Nats-Expected-Last-Subject-Sequence", "3"),
                   ("Nats-Expected-Last-Subject-Sequence-Subject", "orders.old")))
    expected(block(("Nats-Expected-Last-Sequence", "")))  # empty: as absent


@pytest.mark.parametrize("pairs,error,text", [
    ([("Nats-Expected-Stream", "OTHER")], errors.JSStreamNotMatchErr, "expected stream does not match"),
    ([("Nats-Expected-Last-Sequence", "9")], errors.JSStreamWrongLastSequenceErrF, "wrong last sequence: 10"),
    ([("Nats-Expected-Last-Sequence", "x")], errors.JSStreamWrongLastSequenceErrF, "wrong last sequence: 10"),
    ([("Nats-Expected-Last-Subject-Sequence", "6")], errors.JSStreamWrongLastSequenceErrF,
     "wrong last sequence: 7"),
    ([("Nats-Expected-Last-Subject-Sequence", "0")], errors.JSStreamWrongLastSequenceErrF,
     "wrong last sequence: 7"),
    ([("Nats-Expected-Last-Subject-Sequence", "7"), ("Nats-Expected-Last-Subject-Sequence-Subject", "orders.old")],
     errors.JSStreamWrongLastSequenceErrF, "wrong last sequence: 3"),
    ([("Nats-Expected-Last-Subject-Sequence-Subject", "orders.old")],
     errors.JSStreamExpectedLastSeqPerSubjectInvalid, "missing sequence for expected last sequence per subject"),
    ([("Nats-Expected-Last-Msg-Id", "m-9")], errors.JSStreamWrongLastMsgIDErrF, "wrong last msg ID: m-10"),
    # nats-server's order: stream, per-subject sequence, sequence, msg id
    ([("Nats-Expected-Last-Msg-Id", "m-9"), ("Nats-Expected-Last-Sequence", "1"),
      ("Nats-Expected-Last-Subject-Sequence", "1"), ("Nats-Expected-Stream", "X")],
     errors.JSStreamNotMatchErr, "expected stream does not match"),
    ([("Nats-Expected-Last-Msg-Id", "m-9"), ("Nats-Expected-Last-Sequence", "1"),
      ("Nats-Expected-Last-Subject-Sequence", "1")],
     errors.JSStreamWrongLastSequenceErrF, "wrong last sequence: 7"),
    ([("Nats-Expected-Last-Msg-Id", "m-9"), ("Nats-Expected-Last-Sequence", "1")],
     errors.JSStreamWrongLastSequenceErrF, "wrong last sequence: 10"),
])
def test_expected_header_errors(pairs, error, text):
    with pytest.raises(errors.ApiError) as caught:
        expected(block(*pairs))
    assert type(caught.value) is error
    assert caught.value.description == text
    assert caught.value.to_dict()["err_code"] == error.err_code


def test_expected_last_msg_id_when_last_had_none():
    with pytest.raises(errors.JSStreamWrongLastMsgIDErrF) as caught:
        expected(block(("Nats-Expected-Last-Msg-Id", "m-1")), last_msg_id="")
    assert caught.value.to_dict() == {"code": 400, "err_code": 10070, "description": "wrong last msg ID: "}


def test_parse_uint_reads_like_parse_int64():
    assert parse_uint(None) is None and parse_uint(b"") is None
    assert parse_uint(b"42") == 42 and parse_uint(b"007") == 7
    for bad in (b"-1", b"+1", b" 1", b"1 ", b"1.0", "٣".encode()):
        assert parse_uint(bad) == 2**64 - 1


# ---- Rollup, TTL, sizes --------------------------------------------------------------------

def test_rollup_modes_and_errors():
    assert rollup_mode(None, True) is None
    assert rollup_mode(block(("Nats-Rollup", "sub")), True) == "sub"
    assert rollup_mode(block(("Nats-Rollup", "ALL")), True) == "all"
    with pytest.raises(errors.JSStreamRollupFailedF) as caught:
        rollup_mode(block(("Nats-Rollup", "Subject")), True)
    assert caught.value.to_dict() == {"code": 500, "err_code": 10111,
                                      "description": 'rollup value invalid: "subject"'}
    for allow, deny in ((False, False), (True, True)):
        with pytest.raises(errors.JSStreamRollupFailedF) as caught:
            rollup_mode(block(("Nats-Rollup", "bogus")), allow, deny)
        assert caught.value.description == "rollup not permitted"


@pytest.mark.parametrize("value,seconds", [
    ("5", 5), ("90s", 90), ("1h30m", 5400), ("1.5s", 1), ("+2m", 120), ("never", -1), ("NEVER", -1),
    ("007", 7), ("1000ms", 1),
])
def test_ttl_values(value, seconds):
    assert parse_msg_ttl(value.encode()) == seconds
    assert msg_ttl(block(("Nats-TTL", value)), True) == seconds


@pytest.mark.parametrize("value", ["0", "+0", "-0", "0s", "999ms", "-5s", "-5", "+5", "5x", "1 h",
                                   "5 ", "s", "٣", "never!"])
def test_invalid_ttl_values(value):
    with pytest.raises(ValueError):
        parse_msg_ttl(value.encode())
    with pytest.raises(errors.JSMessageTTLInvalidErr) as caught:
        msg_ttl(block(("Nats-TTL", value)), True)
    assert caught.value.to_dict() == {"code": 400, "err_code": 10165, "description": "invalid per-message TTL"}
    # an invalid TTL is not "disabled" (nats-server rejects it later, as invalid)
    with pytest.raises(errors.JSMessageTTLInvalidErr):
        msg_ttl(block(("Nats-TTL", value)), False)


def test_ttl_disabled_and_marker_minimum():
    assert msg_ttl(None, False) == 0
    assert msg_ttl(block(("Nats-TTL", "")), False) == 0
    with pytest.raises(errors.JSMessageTTLDisabledErr) as caught:
        msg_ttl(block(("Nats-TTL", "never")), False)
    assert caught.value.description == "per-message TTL is disabled"
    hdr = block(("Nats-TTL", "5"))
    assert msg_ttl(hdr, True, subject_delete_marker_ttl=60) == 60
    assert msg_ttl(hdr, True, subject_delete_marker_ttl=60, max_msgs_per_subject=1) == 5
    assert msg_ttl(block(("Nats-TTL", "never")), True, subject_delete_marker_ttl=60) == -1
    assert msg_ttl(block(("Nats-TTL", "2m")), True, subject_delete_marker_ttl=60) == 120


def test_sizes():
    check_sizes(10, 90, 100)
    check_sizes(10, 10**9, -1)
    check_sizes(65535, 0, -1)
    for hdr_len, msg_len, max_size, max_payload in ((10, 91, 100, None), (101, 0, 100, None),
                                                     (0, 1025, -1, 1024), (0, 1025, 4096, 1024),
                                                     (10, 1015, 2000, 1024)):
        with pytest.raises(errors.JSStreamMessageExceedsMaximumErr) as caught:
            check_sizes(hdr_len, msg_len, max_size, max_payload)
        assert caught.value.to_dict() == {"code": 400, "err_code": 10054,
                                          "description": "message size exceeds maximum allowed"}
    check_sizes(0, 1024, -1, 1024)
    with pytest.raises(errors.JSStreamHeaderExceedsMaximumErr) as caught:
        check_sizes(65536, 0, -1)
    assert caught.value.description == "header size exceeds maximum allowed of 64k"
    with pytest.raises(errors.JSStreamMessageExceedsMaximumErr):  # size first
        check_sizes(65536, 0, 1000)


# ---- The dedupe window ---------------------------------------------------------------------

def test_dedupe_window_basics():
    window = DedupeWindow(2 * SECOND)
    assert window.check("a", 0) is None
    window.record("a", 1, 100)
    window.record("", 2, 100)
    assert len(window) == 1
    assert window.check("a", 100) == 1
    assert window.check("a", 100 + 2 * SECOND - 1) == 1
    assert window.check("a", 100 + 2 * SECOND) is None
    assert window.next_expiry() == 100 + 2 * SECOND
    window.record("b", 3, 100 + SECOND)
    assert window.expire(100 + 2 * SECOND) == 1 and "a" not in window and "b" in window
    with pytest.raises(ValueError):
        DedupeWindow(0)


def test_dedupe_record_bounds_memory_to_one_window():
    window = DedupeWindow(10)
    for seq in range(1, 10_001):
        window.record(f"id-{seq}", seq, seq)
    assert len(window) == 10
    assert window.check("id-10000", 10_000) == 10_000 and window.check("id-9990", 10_000) is None


def test_dedupe_rebuild_like_a_restart():
    window = DedupeWindow(60 * SECOND)
    now = 1_000 * SECOND
    stored = [("old", 1, now - 61 * SECOND), ("x", 2, now - 30 * SECOND), (None, 3, now - 20 * SECOND),
              ("y", 4, now - 10 * SECOND)]
    assert window.rebuild(stored, now=now) == "y"
    assert window.check("old", now) is None and "old" not in window
    assert window.check("x", now) == 2 and window.check("y", now) == 4
    assert DedupeWindow(SECOND).rebuild(stored[:3]) == ""
    assert DedupeWindow(SECOND).rebuild([]) == ""


class DedupeAgainstModel(RuleBasedStateMachine):
    """The window against a dict of every id ever recorded with its latest (seq, ts)."""

    WINDOW = 50

    def __init__(self):
        super().__init__()
        self.window = DedupeWindow(self.WINDOW)
        self.model: dict[str, tuple[int, int]] = {}
        self.now = 0
        self.seq = 0

    def expected(self, msg_id):
        entry = self.model.get(msg_id)
        return entry[0] if entry and self.now - entry[1] < self.WINDOW else None

    @rule(step=st.integers(0, 30))
    def tick(self, step):
        self.now += step

    @rule(msg_id=st.sampled_from("abcdefgh"))
    def publish(self, msg_id):
        duplicate = self.window.check(msg_id, self.now)
        assert duplicate == self.expected(msg_id)
        if duplicate is None:
            self.seq += 1
            self.window.record(msg_id, self.seq, self.now)
            self.model[msg_id] = (self.seq, self.now)

    def live(self):
        return sum(1 for _, ts in self.model.values() if self.now - ts < self.WINDOW)

    @rule()
    def expire(self):
        self.window.expire(self.now)
        assert len(self.window) == self.live()  # exactly the ids inside the window remain

    @rule()
    def restart(self):
        stored = sorted(((i, s, t) for i, (s, t) in self.model.items()), key=lambda e: e[1])
        self.window = DedupeWindow(self.WINDOW)
        self.window.rebuild([e for e in stored if e[2] >= self.now - self.WINDOW], now=self.now)
        assert len(self.window) == self.live()

    @invariant()
    def agrees_with_model(self):
        for msg_id in "abcdefgh":
            assert self.window.check(msg_id, self.now) == self.expected(msg_id)
        assert len(self.window) <= len(self.model)


TestDedupeAgainstModel = DedupeAgainstModel.TestCase
TestDedupeAgainstModel.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


# ---- All header checks of one publish, in order --------------------------------------------

def run_checks(hdr, *, dedupe=None, now=0, allow_ttl=False, allow_rollup=False):
    return check_headers(hdr, subject="orders.new", stream_name="ORDERS", last_seq=10,
                         last_msg_id="m-10", last_seq_for_subject=last_for({"orders.new": 7}),
                         dedupe=dedupe, now=now, allow_msg_ttl=allow_ttl,
                         allow_rollup_hdrs=allow_rollup)


def test_check_headers_order_and_result():
    window = DedupeWindow(SECOND)
    window.record("dup", 4, 0)
    assert run_checks(None) == run_checks(b"NATS/1.0\r\n\r\n")
    ok = run_checks(block(("Nats-Msg-Id", "new"), ("Nats-Rollup", "sub")), dedupe=window, allow_rollup=True)
    assert (ok.msg_id, ok.duplicate_seq, ok.rollup) == ("new", None, "sub")
    # a duplicate is answered before Expected-Last-Msg-Id and Rollup are looked at
    dup = run_checks(block(("Nats-Msg-Id", "dup"), ("Nats-Expected-Last-Msg-Id", "wrong"),
                           ("Nats-Rollup", "bad")), dedupe=window)
    assert (dup.msg_id, dup.duplicate_seq, dup.rollup) == ("dup", 4, None)
    # ... but after the Expected-Last-Sequence check
    with pytest.raises(errors.JSStreamWrongLastSequenceErrF):
        run_checks(block(("Nats-Msg-Id", "dup"), ("Nats-Expected-Last-Sequence", "3")), dedupe=window)
    # the TTL check comes after Expected-Stream and before the sequences
    with pytest.raises(errors.JSStreamNotMatchErr):
        run_checks(block(("Nats-TTL", "5"), ("Nats-Expected-Stream", "X")))
    with pytest.raises(errors.JSMessageTTLDisabledErr):
        run_checks(block(("Nats-TTL", "5"), ("Nats-Expected-Last-Sequence", "3")))
    with pytest.raises(errors.JSStreamWrongLastSequenceErrF):
        run_checks(block(("Nats-TTL", "5"), ("Nats-Expected-Last-Sequence", "3")), allow_ttl=True)
    with pytest.raises(errors.JSStreamWrongLastMsgIDErrF):
        run_checks(block(("Nats-Expected-Last-Msg-Id", "x"), ("Nats-Rollup", "bad")))
    with pytest.raises(errors.JSStreamRollupFailedF):
        run_checks(block(("Nats-Rollup", "sub")))
    expired = run_checks(block(("Nats-Msg-Id", "dup")), dedupe=window, now=SECOND)
    assert expired.duplicate_seq is None
