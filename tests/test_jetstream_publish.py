"""The publish path of the embedded API: every Nats-* header and its errors, end to end
through js.publish, in nats-server's order; Msg-Id dedupe in and out of the window (the
module's clock is moved, nothing sleeps) and across a reopen; rollups; per-message TTLs."""

import time

import pytest

import jsstore
from jsstore.wire import apierrors as E

SECOND = 1_000_000_000
WINDOW = 2 * 60 * SECOND   # the default duplicate_window


class ShiftedClock:
    """Real time moved by an offset; JetStream stamps and checks with it."""

    def __init__(self):
        self.offset_ns = 0

    def __call__(self) -> int:
        return time.time_ns() + self.offset_ns


@pytest.fixture
def clock():
    return ShiftedClock()


@pytest.fixture(params=["file", "memory-only"])
def js(request, tmp_path, clock):
    handle = jsstore.open(tmp_path, clock=clock) if request.param == "file" else jsstore.open(clock=clock)
    yield handle
    handle.close()


@pytest.fixture
def shift_clock(clock):
    """Move the clock: shift(ns) makes it run that far ahead of real time."""
    def shift(offset_ns: int) -> None:
        clock.offset_ns = offset_ns
    return shift


def messages(js, name):
    return js.stream_info(name).state.messages


# -- Nats-Expected-Stream ----------------------------------------------------------------

def test_expected_stream(js):
    js.add_stream(name="S", subjects=["s"])
    assert js.publish("s", b"x", headers={"Nats-Expected-Stream": "S"}).seq == 1
    with pytest.raises(E.JSStreamNotMatchErr) as exc:
        js.publish("s", b"x", headers={"Nats-Expected-Stream": "OTHER"})
    assert (exc.value.err_code, exc.value.description) == (10060, "expected stream does not match")
    assert messages(js, "S") == 1


# -- Nats-Expected-Last-Sequence -----------------------------------------------------------

def test_expected_last_sequence(js):
    js.add_stream(name="S", subjects=["s.*"])
    assert js.publish("s.a", b"1", headers={"Nats-Expected-Last-Sequence": "0"}).seq == 1
    assert js.publish("s.b", b"2", headers={"Nats-Expected-Last-Sequence": "1"}).seq == 2
    with pytest.raises(E.JSStreamWrongLastSequenceErrF) as exc:
        js.publish("s.a", b"3", headers={"Nats-Expected-Last-Sequence": "1"})
    assert (exc.value.err_code, exc.value.description) == (10071, "wrong last sequence: 2")
    with pytest.raises(E.JSStreamWrongLastSequenceErrF):
        js.publish("s.a", b"3", headers={"Nats-Expected-Last-Sequence": "two"})
    # the stream's last sequence counts a removed last message
    js.delete_msg("S", 2)
    assert js.publish("s.a", b"3", headers={"Nats-Expected-Last-Sequence": "2"}).seq == 3
    assert messages(js, "S") == 2


# -- Nats-Expected-Last-Subject-Sequence(-Subject) -----------------------------------------

def test_expected_last_subject_sequence(js):
    js.add_stream(name="S", subjects=["s.*"])
    key = "Nats-Expected-Last-Subject-Sequence"
    assert js.publish("s.a", b"1", headers={key: "0"}).seq == 1
    assert js.publish("s.b", b"2", headers={key: "0"}).seq == 2
    with pytest.raises(E.JSStreamWrongLastSequenceErrF) as exc:
        js.publish("s.a", b"x", headers={key: "0"})
    assert exc.value.description == "wrong last sequence: 1"
    with pytest.raises(E.JSStreamWrongLastSequenceErrF) as exc:
        js.publish("s.a", b"x", headers={key: "2"})
    assert exc.value.description == "wrong last sequence: 1"
    assert js.publish("s.a", b"3", headers={key: "1"}).seq == 3
    assert messages(js, "S") == 3


def test_expected_last_subject_sequence_of_another_subject(js):
    js.add_stream(name="S", subjects=["s.*"])
    js.publish("s.a", b"1")
    js.publish("s.b", b"2")
    hdrs = {"Nats-Expected-Last-Subject-Sequence": "2",
            "Nats-Expected-Last-Subject-Sequence-Subject": "s.b"}
    assert js.publish("s.a", b"3", headers=hdrs).seq == 3
    with pytest.raises(E.JSStreamWrongLastSequenceErrF) as exc:
        js.publish("s.a", b"4", headers=dict(hdrs, **{"Nats-Expected-Last-Subject-Sequence": "3"}))
    assert exc.value.description == "wrong last sequence: 2"
    # a wildcard names the last message of any matching subject
    wildcard = {"Nats-Expected-Last-Subject-Sequence": "3",
                "Nats-Expected-Last-Subject-Sequence-Subject": "s.*"}
    assert js.publish("s.c", b"5", headers=wildcard).seq == 4
    with pytest.raises(E.JSStreamExpectedLastSeqPerSubjectInvalid) as exc:
        js.publish("s.a", b"x", headers={"Nats-Expected-Last-Subject-Sequence-Subject": "s.b"})
    assert exc.value.err_code == 10193
    assert messages(js, "S") == 4


# -- Nats-Msg-Id dedupe --------------------------------------------------------------------

def test_duplicate_inside_window_stores_nothing(js):
    js.add_stream(name="S", subjects=["s.*"])
    first = js.publish("s.a", b"1", headers={"Nats-Msg-Id": "m-1"})
    js.publish("s.b", b"2", headers={"Nats-Msg-Id": "m-2"})
    again = js.publish("s.b", b"other payload", headers={"Nats-Msg-Id": "m-1"})
    assert again == jsstore.PubAck(stream="S", seq=first.seq, duplicate=True)
    assert not first.duplicate
    state = js.stream_info("S").state
    assert (state.messages, state.last_seq) == (2, 2)
    assert js.get_msg("S", seq=1).data == b"1"


def test_duplicate_window_edges(js, shift_clock):
    js.add_stream(name="S", subjects=["s"], duplicate_window=10 * SECOND)
    js.publish("s", b"1", headers={"Nats-Msg-Id": "id"})
    shift_clock(9 * SECOND)
    assert js.publish("s", b"x", headers={"Nats-Msg-Id": "id"}).duplicate
    shift_clock(11 * SECOND)
    stored = js.publish("s", b"2", headers={"Nats-Msg-Id": "id"})
    assert (stored.seq, stored.duplicate) == (2, False)
    # the id now points at the new message
    shift_clock(0)
    assert js.publish("s", b"x", headers={"Nats-Msg-Id": "id"}) == \
        jsstore.PubAck(stream="S", seq=2, duplicate=True)
    assert messages(js, "S") == 2


def test_default_window_and_update(js, shift_clock):
    js.add_stream(name="S", subjects=["s"])
    js.publish("s", b"1", headers={"Nats-Msg-Id": "id"})
    shift_clock(WINDOW - SECOND)
    assert js.publish("s", b"x", headers={"Nats-Msg-Id": "id"}).duplicate
    js.update_stream(name="S", subjects=["s"], duplicate_window=30 * SECOND)
    assert not js.publish("s", b"2", headers={"Nats-Msg-Id": "id"}).duplicate
    assert messages(js, "S") == 2


def test_duplicate_is_answered_before_later_checks(js):
    js.add_stream(name="S", subjects=["s"], max_msg_size=64)
    js.publish("s", b"1", headers={"Nats-Msg-Id": "id"})
    js.publish("s", b"2")
    # Expected-Last-Msg-Id, Rollup and the size are not looked at for a duplicate
    ack = js.publish("s", b"x" * 200, headers={"Nats-Msg-Id": "id",
                                              "Nats-Expected-Last-Msg-Id": "nope",
                                              "Nats-Rollup": "all"})
    assert ack.duplicate and ack.seq == 1
    # the checks before it still apply
    with pytest.raises(E.JSStreamWrongLastSequenceErrF):
        js.publish("s", b"x", headers={"Nats-Msg-Id": "id", "Nats-Expected-Last-Sequence": "1"})
    assert messages(js, "S") == 2


def test_dedupe_survives_reopen(tmp_path, clock, shift_clock):
    with jsstore.open(tmp_path, clock=clock) as js:
        js.add_stream(name="S", subjects=["s.*"], duplicate_window=60 * SECOND)
        js.publish("s.a", b"1", headers={"Nats-Msg-Id": "a"})
        js.publish("s.b", b"2", headers={"Nats-Msg-Id": "b"})
        js.publish("s.c", b"3", headers={"K": "no id"})
        js.publish("s.d", b"4", headers={"Nats-Msg-Id": "d"})
    with jsstore.open(tmp_path, clock=clock) as js:
        assert js.publish("s.x", b"x", headers={"Nats-Msg-Id": "b"}) == \
            jsstore.PubAck(stream="S", seq=2, duplicate=True)
        assert js.publish("s.x", b"x", headers={"Nats-Msg-Id": "d"}).seq == 4
        with pytest.raises(E.JSStreamWrongLastMsgIDErrF) as exc:
            js.publish("s.x", b"x", headers={"Nats-Expected-Last-Msg-Id": "b"})
        assert exc.value.description == "wrong last msg ID: d"
        assert js.publish("s.e", b"5", headers={"Nats-Expected-Last-Msg-Id": "d"}).seq == 5
        assert messages(js, "S") == 5
    # reopened after the window: the ids are forgotten
    shift_clock(61 * SECOND)
    with jsstore.open(tmp_path, clock=clock) as js:
        ack = js.publish("s.a", b"6", headers={"Nats-Msg-Id": "a"})
        assert (ack.seq, ack.duplicate) == (6, False)
        shift_clock(0)  # back to the clock the store stamped seq 6 with
        assert js.publish("s.a", b"x", headers={"Nats-Msg-Id": "a"}).seq == 6


def test_reopen_with_a_last_message_outside_the_window_has_no_last_msg_id(tmp_path, clock, shift_clock):
    with jsstore.open(tmp_path, clock=clock) as js:
        js.add_stream(name="S", subjects=["s"], duplicate_window=60 * SECOND)
        js.publish("s", b"1", headers={"Nats-Msg-Id": "a"})
    shift_clock(120 * SECOND)
    with jsstore.open(tmp_path, clock=clock) as js:
        with pytest.raises(E.JSStreamWrongLastMsgIDErrF) as exc:
            js.publish("s", b"x", headers={"Nats-Expected-Last-Msg-Id": "a"})
        assert exc.value.description == "wrong last msg ID: "


# -- Nats-Expected-Last-Msg-Id -------------------------------------------------------------

def test_expected_last_msg_id(js):
    js.add_stream(name="S", subjects=["s"])
    js.publish("s", b"1", headers={"Nats-Msg-Id": "first"})
    with pytest.raises(E.JSStreamWrongLastMsgIDErrF) as exc:
        js.publish("s", b"x", headers={"Nats-Expected-Last-Msg-Id": "other"})
    assert (exc.value.err_code, exc.value.description) == (10070, "wrong last msg ID: first")
    ack = js.publish("s", b"2", headers={"Nats-Expected-Last-Msg-Id": "first",
                                         "Nats-Msg-Id": "second"})
    assert ack.seq == 2
    js.publish("s", b"3")   # a message without an id: the last id is now empty
    with pytest.raises(E.JSStreamWrongLastMsgIDErrF) as exc:
        js.publish("s", b"x", headers={"Nats-Expected-Last-Msg-Id": "second"})
    assert exc.value.description == "wrong last msg ID: "
    assert messages(js, "S") == 3


# -- Nats-Rollup ---------------------------------------------------------------------------

def test_rollup_subject_keeps_only_the_new_message(js):
    js.add_stream(name="S", subjects=["s.*"], allow_rollup_hdrs=True)
    for subject in ("s.a", "s.b", "s.a", "s.b", "s.a"):
        js.publish(subject, b"old")
    ack = js.publish("s.a", b"rolled", headers={"Nats-Rollup": "sub"})
    assert ack.seq == 6
    info = js.stream_info("S", subjects_filter=">")
    assert info.state.subjects == {"s.a": 1, "s.b": 2}
    assert js.get_msg("S", last_by_subject="s.a").data == b"rolled"
    assert js.get_msg("S", next_by_subject="s.a").seq == 6


def test_rollup_all_purges_everything_before(js):
    js.add_stream(name="S", subjects=["s.*"], allow_rollup_hdrs=True)
    for subject in ("s.a", "s.b", "s.c"):
        js.publish(subject, b"old")
    assert js.publish("s.b", b"snapshot", headers={"Nats-Rollup": "ALL"}).seq == 4
    state = js.stream_info("S").state
    assert (state.messages, state.first_seq, state.last_seq) == (1, 4, 4)
    assert js.publish("s.c", b"after").seq == 5
    assert messages(js, "S") == 2


def test_rollup_errors(js):
    js.add_stream(name="NO", subjects=["no"])
    js.publish("no", b"1")
    with pytest.raises(E.JSStreamRollupFailedF) as exc:
        js.publish("no", b"x", headers={"Nats-Rollup": "sub"})
    assert (exc.value.err_code, exc.value.description) == (10111, "rollup not permitted")
    js.add_stream(name="YES", subjects=["yes"], allow_rollup_hdrs=True)
    js.publish("yes", b"1")
    with pytest.raises(E.JSStreamRollupFailedF) as exc:
        js.publish("yes", b"x", headers={"Nats-Rollup": "Everything"})
    assert exc.value.description == 'rollup value invalid: "everything"'
    assert messages(js, "NO") == 1 and messages(js, "YES") == 1


# -- Nats-TTL ------------------------------------------------------------------------------

def _ttl_entries(js, name):
    return sorted((seq, expires) for expires, seq in js._streams[name].store.ttls.heap)


def test_ttl_passed_to_the_store(js):
    js.add_stream(name="S", subjects=["s"], allow_msg_ttl=True)
    ack = js.publish("s", b"1", headers={"Nats-TTL": "5s"})
    js.publish("s", b"2")
    js.publish("s", b"3", headers={"Nats-TTL": "90"})
    stored = js.get_msg("S", seq=ack.seq)
    entries = _ttl_entries(js, "S")
    assert entries == [(1, stored.time + 5 * SECOND),
                       (3, js.get_msg("S", seq=3).time + 90 * SECOND)]


def test_ttl_errors_and_their_order(js):
    js.add_stream(name="OFF", subjects=["off"], max_msg_size=32)
    with pytest.raises(E.JSMessageTTLDisabledErr) as exc:
        js.publish("off", b"x", headers={"Nats-TTL": "5s"})
    assert exc.value.err_code == 10166
    # disabled is found before the size, with the header checks
    with pytest.raises(E.JSMessageTTLDisabledErr):
        js.publish("off", b"x" * 100, headers={"Nats-TTL": "5s"})
    js.add_stream(name="ON", subjects=["on"], allow_msg_ttl=True, max_msg_size=64)
    with pytest.raises(E.JSMessageTTLInvalidErr) as exc:
        js.publish("on", b"x", headers={"Nats-TTL": "soon"})
    assert exc.value.err_code == 10165
    with pytest.raises(E.JSMessageTTLInvalidErr):
        js.publish("on", b"x", headers={"Nats-TTL": "500ms"})
    # an invalid TTL is found after the size
    with pytest.raises(E.JSStreamMessageExceedsMaximumErr):
        js.publish("on", b"x" * 100, headers={"Nats-TTL": "soon"})
    assert messages(js, "OFF") == 0 and messages(js, "ON") == 0
    assert _ttl_entries(js, "ON") == []


def test_ttl_raised_to_the_subject_delete_marker_ttl(js):
    js.add_stream(name="S", subjects=["s"], subject_delete_marker_ttl=60 * SECOND,
                  max_age=3600 * SECOND)
    js.publish("s", b"1", headers={"Nats-TTL": "5s"})
    assert _ttl_entries(js, "S") == [(1, js.get_msg("S", seq=1).time + 60 * SECOND)]


# -- order of the checks -------------------------------------------------------------------

def test_sealed_comes_before_the_headers(js):
    js.add_stream(name="S", subjects=["s"])
    js.publish("s", b"1", headers={"Nats-Msg-Id": "id"})
    js.update_stream(name="S", subjects=["s"], sealed=True)
    with pytest.raises(E.JSStreamSealedErr):
        js.publish("s", b"x", headers={"Nats-Msg-Id": "id"})


def test_header_checks_come_before_the_size(js):
    js.add_stream(name="S", subjects=["s"], max_msg_size=8)
    big = b"x" * 100
    with pytest.raises(E.JSStreamNotMatchErr):
        js.publish("s", big, headers={"Nats-Expected-Stream": "T"})
    with pytest.raises(E.JSStreamWrongLastSequenceErrF):
        js.publish("s", big, headers={"Nats-Expected-Last-Sequence": "7"})
    with pytest.raises(E.JSStreamMessageExceedsMaximumErr):
        js.publish("s", big, headers={"Nats-Expected-Last-Sequence": "0"})


def test_expected_stream_is_checked_first(js):
    js.add_stream(name="S", subjects=["s"])
    with pytest.raises(E.JSStreamNotMatchErr):
        js.publish("s", b"x", headers={"Nats-Expected-Last-Sequence": "9",
                                       "Nats-Expected-Stream": "T", "Nats-Rollup": "bad"})
    with pytest.raises(E.JSStreamWrongLastSequenceErrF):
        js.publish("s", b"x", headers={"Nats-Expected-Last-Sequence": "9", "Nats-Rollup": "bad"})


def test_raw_header_block_is_read(js):
    js.add_stream(name="S", subjects=["s"])
    block = b"NATS/1.0\r\nNats-Msg-Id: raw\r\n\r\n"
    assert js.publish("s", b"1", headers=block).seq == 1
    assert js.publish("s", b"2", headers=block).duplicate
    assert js.get_msg("S", seq=1).headers == {"Nats-Msg-Id": "raw"}
