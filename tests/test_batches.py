"""Atomic batch staging: errors in nats-server's order, limits, timeouts, eob, BatchView."""

import asyncio
import json

import pytest

from jsstore.stream import batches
from jsstore.wire import headers
from jsstore.wire import apierrors as E
from jsstore.stream.batches import BatchLimits, BatchRegistry, BatchView, Commit, Staged

SEC = 1_000_000_000


def B(ident, seq, commit=None, **extra):
    pairs = [("Nats-Batch-Id", ident), ("Nats-Batch-Sequence", str(seq))]
    if commit is not None:
        pairs.append(("Nats-Batch-Commit", commit))
    pairs += [(key.replace("_", "-"), value) for key, value in extra.items()]
    return headers.build(pairs)


def stage(registry, hdr, stream="A", now=0, allow_atomic=True, subject="a.x", payload=b"x"):
    return registry.stage(stream, hdr, subject, payload, now, allow_atomic)


def test_batch_commits_in_order():
    registry = BatchRegistry()
    assert stage(registry, B("b", 1), subject="a.1") == Staged("b", 1)
    assert stage(registry, B("b", 2), subject="a.2") == Staged("b", 2)
    commit = stage(registry, B("b", 3, "1"), subject="a.3")
    assert isinstance(commit, Commit) and commit.count == 3 and commit.stores_commit_msg
    assert [m.subject for m in commit.messages] == ["a.1", "a.2", "a.3"]
    assert commit.messages[2].hdr == B("b", 3, "1")
    assert len(registry) == 0 and registry.take_abandoned() == []
    assert batches.batch_pub_ack("A", 7, "b", 3) == {"stream": "A", "seq": 7, "batch": "b", "count": 3}


def test_eob_commits_without_its_message():
    registry = BatchRegistry()
    stage(registry, B("k", 1, Nats_Incr="1"), payload=b"")
    commit = stage(registry, B("k", 2, "eob", Nats_Incr="100"))
    assert not commit.stores_commit_msg and commit.count == 1
    assert commit.messages[0].hdr == (b"NATS/1.0\r\nNats-Batch-Id: k\r\nNats-Batch-Sequence: 1\r\n"
                                      b"Nats-Incr: 1\r\nNats-Batch-Commit: 1\r\n\r\n")
    with pytest.raises(E.JSAtomicPublishIncompleteBatchErr):
        stage(registry, B("k2", 1, "eob"))
    assert registry.take_abandoned() == [batches.Abandoned("A", "k2", "incomplete")]


def test_required_api_level_is_removed_or_rejected():
    registry = BatchRegistry()
    stage(registry, B("r", 1, Nats_Required_Api_Level="1"))
    assert stage(registry, B("r", 2, "1")).messages[0].hdr == B("r", 1)
    with pytest.raises(E.JSRequiredApiLevelErr):
        stage(registry, B("r2", 1, "1", Nats_Required_Api_Level="99"))
    assert registry.take_abandoned() == [batches.Abandoned("A", "r2", "unsupported")]


@pytest.mark.parametrize("hdr,allow,error", [
    (B("x" * 65, 1, "1"), False, E.JSAtomicPublishDisabledErr),
    (B("b", 1, "1"), False, E.JSAtomicPublishDisabledErr),
    (B("x" * 65, 1, "1"), True, E.JSAtomicPublishInvalidBatchIDErr),
    (headers.build({"Nats-Batch-Id": "x" * 65}), True, E.JSAtomicPublishInvalidBatchIDErr),
    (headers.build({"Nats-Batch-Id": "b"}), True, E.JSAtomicPublishMissingSeqErr),
    (B("b", "abc"), True, E.JSAtomicPublishMissingSeqErr),
    (B("b", "0"), True, E.JSAtomicPublishIncompleteBatchErr),
    (B("b", 2, "2"), True, E.JSAtomicPublishIncompleteBatchErr),
    (B("b", 1, "2"), True, E.JSAtomicPublishInvalidBatchCommitErr),
    (B("b", 1, ""), True, E.JSAtomicPublishInvalidBatchCommitErr),
])
def test_first_message_errors(hdr, allow, error):
    registry = BatchRegistry()
    with pytest.raises(error):
        stage(registry, hdr, allow_atomic=allow)
    assert len(registry) == 0 and registry.take_abandoned() == []
    assert isinstance(stage(registry, B("x" * 64, 1, "1")), Commit)


@pytest.mark.parametrize("second,error,reason", [
    (B("g", 3), E.JSAtomicPublishIncompleteBatchErr, "incomplete"),
    (B("g", 1), E.JSAtomicPublishIncompleteBatchErr, "incomplete"),
    (B("g", 2, "2"), E.JSAtomicPublishInvalidBatchCommitErr, None),
    (B("g", 3, "2"), E.JSAtomicPublishInvalidBatchCommitErr, None),
    (B("g", 2, "1", Nats_Required_Api_Level="99"), E.JSRequiredApiLevelErr, "unsupported"),
])
def test_later_errors_discard_the_batch(second, error, reason):
    registry = BatchRegistry()
    stage(registry, B("g", 1))
    with pytest.raises(error):
        stage(registry, second)
    assert len(registry) == 0
    expected = [batches.Abandoned("A", "g", reason)] if reason else []
    assert registry.take_abandoned() == expected
    with pytest.raises(E.JSAtomicPublishIncompleteBatchErr):
        stage(registry, B("g", 2, "1"))


def test_missing_sequence_leaves_the_batch():
    registry = BatchRegistry()
    stage(registry, B("g", 1))
    with pytest.raises(E.JSAtomicPublishMissingSeqErr):
        stage(registry, headers.build({"Nats-Batch-Id": "g"}))
    assert stage(registry, B("g", 2, "1")).count == 2


def test_too_large_and_inflight_limits():
    registry = BatchRegistry(BatchLimits(max_msgs=3, max_inflight_per_stream=2, max_inflight_total=3))
    for seq in (1, 2, 3):
        stage(registry, B("c8", seq))
    with pytest.raises(E.JSAtomicPublishTooLargeBatchErrF) as raised:
        stage(registry, B("c8", 4))
    assert raised.value.description == "atomic publish batch is too large: 3"
    assert registry.take_abandoned() == [batches.Abandoned("A", "c8", "large")]
    stage(registry, B("i1", 1))
    stage(registry, B("i2", 1))
    with pytest.raises(E.JSAtomicPublishTooManyInflight):
        stage(registry, B("i3", 1))
    stage(registry, B("j1", 1), stream="A2")
    with pytest.raises(E.JSAtomicPublishTooManyInflight):
        stage(registry, B("j2", 1), stream="A2")
    assert (registry.inflight("A"), registry.inflight("A2"), registry.inflight()) == (2, 1, 3)
    assert registry.discard("A") == ["i1", "i2"]
    assert stage(registry, B("i3", 1, "1")).count == 1


def test_timeouts():
    registry = BatchRegistry(BatchLimits(timeout_ns=SEC))
    stage(registry, B("t1", 1), now=0)
    stage(registry, B("t2", 1), now=SEC // 2)
    assert registry.next_expiry() == SEC
    assert registry.expire(SEC - 1) == []
    stage(registry, B("t1", 2), now=SEC - 1)  # activity keeps a batch open
    assert registry.expire(SEC + SEC // 2) == [("A", "t2")]
    with pytest.raises(E.JSAtomicPublishIncompleteBatchErr):  # t1 timed out meanwhile
        stage(registry, B("t1", 3, "1"), now=3 * SEC)
    assert registry.take_abandoned() == [batches.Abandoned("A", "t1", "timeout")]
    assert registry.next_expiry() is None


def test_batch_view_within_batch_checks():
    view = BatchView(stream_last_seq=3)
    last = {"a.y": 2}.get
    lookup = lambda subject: last(subject, 0)
    view.check(headers.build({"Nats-Expected-Last-Sequence": "3", "Nats-Msg-Id": "p"}), "a.x")
    view.record("a.x", headers.build({"Nats-Msg-Id": "p"}))
    assert view.last_seq == 4
    with pytest.raises(E.JSAtomicPublishUnsupportedHeaderBatchErr) as raised:
        view.check(headers.build({"Nats-Expected-Last-Msg-Id": "z", "Nats-Msg-Id": "p"}), "a.x")
    assert raised.value.description == "atomic publish unsupported header used: Nats-Expected-Last-Msg-Id"
    with pytest.raises(E.JSStreamWrongLastSequenceConstantErr):
        view.check(headers.build({"Nats-Expected-Last-Sequence": "4"}), "a.x")
    with pytest.raises(E.JSAtomicPublishContainsDuplicateMessageErr):
        view.check(headers.build({"Nats-Msg-Id": "p"}), "a.z")
    with pytest.raises(E.JSAtomicPublishContainsDuplicateMessageErr):
        view.check(headers.build({"Nats-Msg-Id": "old"}), "a.z", in_dedupe_window={"old"}.__contains__)
    with pytest.raises(E.JSStreamWrongLastSequenceConstantErr):
        view.check(headers.build({"Nats-Expected-Last-Subject-Sequence": "1"}), "a.x")
    with pytest.raises(E.JSStreamWrongLastSequenceErrF) as raised:
        view.check(headers.build({"Nats-Expected-Last-Subject-Sequence": "6"}), "a.y", last_seq_for_subject=lookup)
    assert raised.value.description == "wrong last sequence: 2"
    view.check(headers.build({"Nats-Expected-Last-Subject-Sequence": "0"}), "a.z", last_seq_for_subject=lookup)
    first = BatchView(stream_last_seq=2)
    with pytest.raises(E.JSStreamWrongLastSequenceErrF):
        first.check(headers.build({"Nats-Expected-Last-Sequence": "4"}), "a.x")
    view.set_counter("c", 5, {})
    assert view.counter("c") == (5, {}) and view.counter("d") is None


STAGING_SCRIPT = [
    ("N", B("b1", 1, "1")), ("A", B("x" * 65, 1, "1")), ("A", B("b2", "abc")), ("A", B("b3", "0")),
    ("A", B("b3", 2)), ("A", B("b4", 1)), ("A", B("b4", 3)), ("A", B("b5", 1, "2")),
    ("A", B("b5", 1, "eob")), ("A", B("b5", 1, "")), ("A", B("b6", 1)), ("A", B("b6", 1)),
    ("A", B("b7", 1)), ("A", headers.build({"Nats-Batch-Id": "b7"})), ("A", B("b7", 2, "3")),
    ("A", B("b8", 1, "1", Nats_Required_Api_Level="99")), ("A", B("b9", 1, "1")), ("A", B("c8", 1)), ("A", B("c8", 2)),
    ("A", B("c8", 3)), ("A", B("c8", 4)), ("A", B("i1", 1)), ("A", B("i2", 1)), ("A", B("i3", 1)),
]


@pytest.mark.natsserver
def test_staging_answers_match_nats_server(tmp_path):
    natsserver = pytest.importorskip("natsserver")
    nats = pytest.importorskip("nats")
    natsserver.require_nats_server()
    conf = tmp_path / "server.conf"
    conf.write_text("jetstream { limits { batch { max_msgs: 3, max_inflight_per_stream: 2, "
                    "max_inflight_total: 5, timeout: 10s } } }\n")
    registry = BatchRegistry(BatchLimits(max_msgs=3, max_inflight_per_stream=2, max_inflight_total=5))

    async def run(url):
        nc = await nats.connect(url)
        advisories = []

        async def on_advisory(msg):
            advisories.append((json.loads(msg.data)["batch"], json.loads(msg.data)["reason"]))

        await nc.subscribe("$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.>", cb=on_advisory)
        try:
            for cfg in (dict(name="N", subjects=["n.>"]), dict(name="A", subjects=["a.>"], allow_atomic=True)):
                await nc.request("$JS.API.STREAM.CREATE." + cfg["name"], json.dumps(cfg).encode(), timeout=2)
            for stream, hdr in STAGING_SCRIPT:
                subject = stream.lower() + ".x"
                msg = await nc.request(subject, b"x", timeout=2, headers=_pairs(hdr))
                real = json.loads(msg.data) if msg.data else None
                try:
                    result = registry.stage(stream, hdr, subject, b"x", 0, stream == "A")
                    mine = None if isinstance(result, Staged) else batches.batch_pub_ack(
                        stream, result.count, result.batch_id, result.count)  # A starts empty
                except E.ApiError as error:
                    mine = {"error": error.to_dict(), "stream": stream, "seq": 0}
                assert mine == real, (stream, hdr)
            await asyncio.sleep(0.2)
            assert advisories == [(a.batch_id, a.reason) for a in registry.take_abandoned()]
        finally:
            await nc.close()

    with natsserver.nats_server(tmp_path / "server", extra_args=["-c", str(conf)]) as server:
        asyncio.run(run(server.url))


def _pairs(hdr):
    out = {}
    for line in hdr.split(b"\r\n")[1:]:
        if b":" in line:
            key, value = line.split(b":", 1)
            out[key.decode()] = value.strip().decode()
    return out
