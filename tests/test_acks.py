"""The ack protocol: reply subjects (v1 and v2, built and read back as nats-server's
ackReplyInfo reads them) and ack payloads (processAck, processNak, processTerm and +NXT).
The natsserver-marked test reads real reply subjects (v1, and v2 with and without a
domain) and checks which acks nats-server answers."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, strategies as st

from jsstore.wire import ackreply as acks
from jsstore.wire.ackreply import (ACK, NAK, NEXT, PROGRESS, TERM, UNKNOWN, Ack, AckSubject,
                                   AckSubjects, ack_reply_info, parse_ack, parse_ack_subject,
                                   sends_reply)

UINT64_MAX = (1 << 64) - 1
TS = 1795520076257931090


# -- subjects ------------------------------------------------------------------------------
def test_v1_subject():
    subjects = AckSubjects("ORDERS", "worker")
    assert subjects.subject(1, 2, 3, TS, 9) == f"$JS.ACK.ORDERS.worker.1.2.3.{TS}.9"
    assert acks.ack_subject("ORDERS", "worker", 1, 2, 3, TS, 9) == subjects.subject(1, 2, 3, TS, 9)
    # names may hold "%" (nats-server escapes it in its format template)
    assert AckSubjects("a%d", "b%%").subject(1, 2, 3, 4, 5) == "$JS.ACK.a%d.b%%.1.2.3.4.5"


def test_v2_subject_carries_domain_and_account_hash():
    # the hash of the global account, as a nats-server with js_ack_fc_v2 writes it
    assert acks.account_hash("$G") == "szMpdrwD"
    assert AckSubjects("S", "C", v2=True).subject(1, 1, 1, TS, 0) == (
        f"$JS.ACK._.szMpdrwD.S.C.1.1.1.{TS}.0")
    assert AckSubjects("S", "C", v2=True, domain="hub", account="ACME").subject(2, 5, 4, 7, 0) == (
        f"$JS.ACK.hub.{acks.account_hash('ACME')}.S.C.2.5.4.7.0")


@pytest.mark.parametrize("subject,info", [
    (f"$JS.ACK.S.C.1.2.3.{TS}.9", (2, 3, 1, TS, 9)),
    (f"$JS.ACK._.szMpdrwD.S.C.4.5.6.{TS}.7", (5, 6, 4, TS, 7)),
    (f"$JS.ACK._.szMpdrwD.S.C.4.5.6.{TS}.7.more.tokens", (5, 6, 4, TS, 7)),
    # neither 9 nor at least 11 tokens, or not $JS.ACK: nothing (a stream seq of 0)
    ("$JS.ACK.S.C.1.2.3.4", (0, 0, 0, 0, 0)),
    ("$JS.ACK.S.C.1.2.3.4.5.6", (0, 0, 0, 0, 0)),
    ("$JS.NAK.S.C.1.2.3.4.5", (0, 0, 0, 0, 0)),
    ("$js.ACK.S.C.1.2.3.4.5", (0, 0, 0, 0, 0)),
    ("", (0, 0, 0, 0, 0)),
    # a bad number reads as -1: 2**64-1 unsigned, -1 for the timestamp
    ("$JS.ACK.S.C.1.x.3.4.5", (UINT64_MAX, 3, 1, 4, 5)),
    ("$JS.ACK.S.C.1..3.-4.+5", (UINT64_MAX, 3, 1, -1, UINT64_MAX)),
    ("$JS.ACK.S.C.\u0661.2.3.4.5", (2, 3, UINT64_MAX, 4, 5)),       # an Arabic-Indic one
    ("$JS.ACK.S.C.1.2.3.4.5\u00b2", (2, 3, 1, 4, UINT64_MAX)),
    # digits past the int64 range wrap as Go's arithmetic does
    ("$JS.ACK.S.C.1.18446744073709551615.3.9223372036854775808.18446744073709551616",
     (UINT64_MAX, 3, 1, -(1 << 63), 0)),
    ("$JS.ACK.S.C.1.99999999999999999999.3.4.5", (7766279631452241919, 3, 1, 4, 5)),
])
def test_ack_reply_info_reads_as_nats_server(subject, info):
    assert ack_reply_info(subject) == info


def test_parse_ack_subject_names_every_part():
    assert parse_ack_subject(f"$JS.ACK.S.C.1.2.3.{TS}.9") == AckSubject("S", "C", 1, 2, 3, TS, 9)
    assert parse_ack_subject(f"$JS.ACK.hub.szMpdrwD.S.C.4.5.6.{TS}.7.x.y") == AckSubject(
        "S", "C", 4, 5, 6, TS, 7, domain="hub", account_hash="szMpdrwD", extra=("x", "y"))
    assert parse_ack_subject("$JS.ACK.S.C.1.2.3.4") is None
    assert parse_ack_subject("$JS.ACK.S.C.1.-2.3.4.5").stream_seq == UINT64_MAX


_NAME = st.text(st.characters(blacklist_characters=".", blacklist_categories=("Cs",)),
                min_size=1, max_size=12)
_U64 = st.integers(min_value=0, max_value=UINT64_MAX)
_TS = st.integers(min_value=0, max_value=(1 << 63) - 1)


@given(_NAME, _NAME, _U64, _U64, _U64, _TS, _U64, st.booleans(),
       st.one_of(st.none(), _NAME), _NAME)
def test_subjects_round_trip(stream, consumer, delivered, sseq, dseq, ts, pending, v2, domain,
                             account):
    subjects = AckSubjects(stream, consumer, v2=v2, domain=domain, account=account)
    subject = subjects.subject(delivered, sseq, dseq, ts, pending)
    assert ack_reply_info(subject) == (sseq, dseq, delivered, ts, pending)
    parsed = parse_ack_subject(subject)
    assert (parsed.stream, parsed.consumer, parsed.delivered, parsed.stream_seq,
            parsed.consumer_seq, parsed.timestamp, parsed.pending) == (
        stream, consumer, delivered, sseq, dseq, ts, pending)
    if v2:
        assert parsed.domain == (domain or "_")
        assert parsed.account_hash == acks.account_hash(account) and parsed.extra == ()
    else:
        assert parsed.domain is None and parsed.account_hash is None


@given(st.text(st.sampled_from(list("$JSACK.0123456789x-_")), max_size=60))
def test_reply_info_never_fails(subject):
    sseq, dseq, dc, ts, pending = ack_reply_info(subject)
    for value in (sseq, dseq, dc, pending):
        assert 0 <= value <= UINT64_MAX
    assert -(1 << 63) <= ts < (1 << 63)
    parsed = parse_ack_subject(subject)
    if parsed is None:
        assert (sseq, dseq, dc, ts, pending) == (0, 0, 0, 0, 0)
    else:
        assert (parsed.stream_seq, parsed.consumer_seq, parsed.delivered, parsed.timestamp,
                parsed.pending) == (sseq, dseq, dc, ts, pending)


# -- payloads ------------------------------------------------------------------------------
@pytest.mark.parametrize("payload,ack", [
    (b"", Ack(ACK)), (b"+ACK", Ack(ACK)), (b"+OK", Ack(ACK)),
    (b"+ACK ", Ack(UNKNOWN)), (b"+ACKx", Ack(UNKNOWN)), (b"+OK\n", Ack(UNKNOWN)),
    (b"ACK", Ack(UNKNOWN)), (b" ", Ack(UNKNOWN)), (b"+ack", Ack(UNKNOWN)),
    (b"-NAK", Ack(NAK)), (b"-NAK ", Ack(NAK)), (b"-NAK \t", Ack(NAK)),
    (b"-NAK 5s", Ack(NAK, delay=5_000_000_000)), (b"-NAK5s", Ack(NAK, delay=5_000_000_000)),
    (b"-NAK  1m30s \r\n", Ack(NAK, delay=90_000_000_000)),
    (b"-NAK 1.5\xc2\xb5s", Ack(NAK, delay=1_500)),
    (b"-NAK -2s", Ack(NAK, delay=-2_000_000_000)),                   # negative: due at once
    (b"-NAK 0", Ack(NAK, delay=0)),
    (b"-NAK 5", Ack(NAK)), (b"-NAKnonsense", Ack(NAK)), (b"-NAK 5 s", Ack(NAK)),
    (b'-NAK {"delay": 5000000000}', Ack(NAK, delay=5_000_000_000)),
    (b'-NAK{"delay":1}', Ack(NAK, delay=1)),
    (b'-NAK {"DELAY": 7}', Ack(NAK, delay=7)),                        # Go matches names loosely
    (b'-NAK {}', Ack(NAK, delay=0)),
    (b'-NAK {"delay": null}', Ack(NAK, delay=0)),
    (b'-NAK {"delay": -3, "other": [1]}', Ack(NAK, delay=-3)),
    (b'-NAK {"delay": "5s"}', Ack(NAK)), (b'-NAK {"delay": 1.5}', Ack(NAK)),
    (b'-NAK {"delay": 5', Ack(NAK)), (b'-NAK {"delay": 5} x', Ack(NAK)),
    (b"+WPI", Ack(PROGRESS)), (b"+WPI ", Ack(UNKNOWN)), (b"+WPI2", Ack(UNKNOWN)),
    (b"+NXT", Ack(NEXT, next_request=b"")), (b"+NXT 5", Ack(NEXT, next_request=b" 5")),
    (b'+NXT {"batch":2}', Ack(NEXT, next_request=b' {"batch":2}')),
    (b"+NXTabc", Ack(NEXT, next_request=b"abc")),
    (b"+TERM", Ack(TERM)), (b"+TERM ", Ack(TERM)),
    (b"+TERM  not wanted \n", Ack(TERM, reason="not wanted")),
    (b"+TERMINATE", Ack(TERM, reason="INATE")),
    (b"+TERM bad \xff byte", Ack(TERM, reason="bad \ufffd byte")),
    (b"+TERM caf\xc3\xa9", Ack(TERM, reason="caf\u00e9")),
])
def test_payloads_read_as_process_ack_does(payload, ack):
    assert parse_ack(payload) == ack


def test_next_request_is_a_pull_request_body():
    from jsstore.consumer import pullrequests
    assert pullrequests.parse_request(parse_ack(b"+NXT 5").next_request).batch == 5
    assert pullrequests.parse_request(parse_ack(b"+NXT").next_request).batch == 1


@given(st.one_of(st.binary(max_size=40),
                 st.tuples(st.sampled_from([b"+ACK", b"+OK", b"-NAK", b"+WPI", b"+NXT",
                                            b"+TERM", b"{"]),
                           st.binary(max_size=30)).map(b"".join)))
def test_any_payload_reads_without_failing(payload):
    ack = parse_ack(payload)
    assert isinstance(ack, Ack)
    expected_kind = (ACK if payload in (b"", b"+ACK", b"+OK") else
                     NEXT if payload.startswith(b"+NXT") else
                     NAK if payload.startswith(b"-NAK") else
                     PROGRESS if payload == b"+WPI" else
                     TERM if payload.startswith(b"+TERM") else UNKNOWN)
    assert ack.kind is expected_kind
    assert (ack.delay is None) or ack.kind is NAK
    assert (ack.next_request is not None) == (ack.kind is NEXT)


@pytest.mark.parametrize("ack,stream_seq,applied,reply", [
    (Ack(ACK), 5, True, True), (Ack(ACK), 5, False, False),
    (Ack(TERM, reason="x"), 5, True, True), (Ack(TERM), 5, False, False),
    (Ack(NAK), 5, False, True), (Ack(NAK, delay=1), 5, False, True),
    (Ack(PROGRESS), 5, False, True), (Ack(UNKNOWN), 5, False, True),
    (Ack(NEXT, next_request=b""), 5, True, False),
    (Ack(ACK), 0, True, False), (Ack(NAK), 0, True, False), (Ack(UNKNOWN), 0, True, False),
])
def test_double_ack_replies(ack, stream_seq, applied, reply):
    assert sends_reply(ack, stream_seq, applied) is reply


# -- against nats-server ---------------------------------------------------------------------
natsserver = pytest.importorskip("natsserver")


async def _subjects_and_replies(url: str, check_replies: bool) -> list[str]:
    """Pull three messages; with `check_replies`, send acks of every kind to their
    subjects and compare which ones nats-server answers with sends_reply."""
    import nats
    nc = await nats.connect(url)
    try:
        async def api(subject, body):
            return json.loads((await nc.request(subject, json.dumps(body).encode(), timeout=5)).data)

        await api("$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
        for n in range(3):
            await nc.request("s.x", b"m%d" % n, timeout=5)
        await api("$JS.API.CONSUMER.CREATE.S.C", {"stream_name": "S", "config": {
            "durable_name": "C", "ack_policy": "explicit"}})
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox)
        await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.C", b"3", reply=inbox)
        replies = [(await sub.next_msg(timeout=2)).reply for _ in range(3)]
        if check_replies:
            first, second, third = replies
            beyond = acks.ack_subject("S", "C", 1, 99, 99, 0, 0)      # past anything delivered
            for subject, payload, applied in [
                    (first, b"+ACK ", False), (first, b"+WPI", False), (first, b"-NAK 1s", False),
                    (first, b"+NXTx", False), (second, b"+TERM enough", True),
                    (third, b"", True), (third, b"+ACK", True), (beyond, b"+ACK", False),
                    (beyond, b"-NAK", False), ("$JS.ACK.S.C.1.x.3.4.5", b"+ACK", False)]:
                answered = True
                try:
                    await nc.request(subject, payload, timeout=0.3)
                except nats.errors.TimeoutError:
                    answered = False
                ack = parse_ack(payload)
                stream_seq = ack_reply_info(subject)[0]
                assert answered is sends_reply(ack, stream_seq, applied), (subject, payload)
        return replies
    finally:
        await nc.close()


@pytest.mark.natsserver
def test_nats_server_subjects_and_double_acks(tmp_path):
    natsserver.require_nats_server()
    pytest.importorskip("nats")
    with natsserver.nats_server(tmp_path / "server") as server:
        replies = asyncio.run(_subjects_and_replies(server.url, True))
    for number, subject in enumerate(replies, 1):
        parsed = parse_ack_subject(subject)
        assert (parsed.stream, parsed.consumer, parsed.delivered, parsed.stream_seq,
                parsed.consumer_seq, parsed.pending) == ("S", "C", 1, number, number, 3 - number)
        assert AckSubjects("S", "C").subject(*_numbers(parsed)) == subject


def _numbers(parsed: AckSubject) -> tuple[int, int, int, int, int]:
    return (parsed.delivered, parsed.stream_seq, parsed.consumer_seq, parsed.timestamp,
            parsed.pending)


@pytest.mark.natsserver
@pytest.mark.parametrize("domain", [None, "hub"])
def test_nats_server_v2_subjects(tmp_path, domain):
    """With the js_ack_fc_v2 feature flag nats-server writes the v2 form."""
    natsserver.require_nats_server()
    pytest.importorskip("nats")
    conf = tmp_path / "v2.conf"
    conf.write_text("feature_flags: { js_ack_fc_v2: true }\n"
                    + (f"jetstream {{ domain: {domain} }}\n" if domain else ""))
    with natsserver.nats_server(tmp_path / "server", ["-c", str(conf)]) as server:
        replies = asyncio.run(_subjects_and_replies(server.url, False))
    for number, subject in enumerate(replies, 1):
        parsed = parse_ack_subject(subject)
        assert parsed.domain == (domain or "_") and parsed.account_hash == acks.account_hash("$G")
        assert parsed.stream_seq == number and parsed.pending == 3 - number
        assert AckSubjects("S", "C", v2=True, domain=domain).subject(*_numbers(parsed)) == subject
        assert ack_reply_info(subject)[:3] == (number, number, 1)
