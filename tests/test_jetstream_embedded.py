"""The embedded JetStream API: streams, publish routing, reading, removing, persistence."""

import json
import os

import pytest

import jsstore
from jsstore.stream import config as streamconfig
from jsstore._core.storage.hashing import meta_hash_key, meta_sum
from jsstore.wire import apierrors as E
from jsstore.jetstream.info import AccountLimits, meta_info_json
from jsstore.wire.headers import decode_headers, encode_headers


@pytest.fixture(params=["file", "memory-only"])
def js(request, tmp_path):
    handle = jsstore.open(tmp_path) if request.param == "file" else jsstore.open()
    yield handle
    handle.close()


def test_add_stream_defaults_and_info(js):
    info = js.add_stream(name="ORDERS", subjects=["orders.>"], max_msgs=1000)
    assert info.config.name == "ORDERS"
    assert info.config.max_msgs == 1000 and info.config.max_bytes == -1
    assert info.config.duplicate_window == streamconfig.DEFAULT_DUPLICATE_WINDOW
    assert info.state.messages == 0 and info.state.last_seq == 0
    assert info.created.endswith("Z")
    assert js.stream_info("ORDERS").config == info.config


def test_add_stream_accepts_config_objects(js):
    js.add_stream(streamconfig.StreamConfig(name="A", subjects=["a.*"]))
    js.add_stream(jsstore.StreamConfig(name="B", subjects=["b"], max_msgs=5))
    js.add_stream(streamconfig.StreamConfig(name="C"), subjects=["c.>"])
    assert js.stream_info("B").config.max_msgs == 5
    assert js.stream_info("C").config.subjects == ["c.>"]
    assert js.stream_names() == ["A", "B", "C"]


def test_add_same_config_is_idempotent_different_fails(js):
    first = js.add_stream(name="S", subjects=["s.>"])
    js.publish("s.1", b"x")
    again = js.add_stream(name="S", subjects=["s.>"])
    assert again.created == first.created and again.state.messages == 1
    with pytest.raises(E.JSStreamNameExistErr):
        js.add_stream(name="S", subjects=["s.>"], max_msgs=3)


def test_add_stream_rejections(js):
    js.add_stream(name="ORDERS", subjects=["orders.>"])
    with pytest.raises(E.JSStreamSubjectOverlapErr):
        js.add_stream(name="OTHER", subjects=["orders.new"])
    with pytest.raises(E.JSStreamInvalidConfigF) as exc:
        js.add_stream(name="bad.name")
    assert exc.value.err_code == 10052
    with pytest.raises(E.JSStreamReplicasNotSupportedErr):
        js.add_stream(name="R3", subjects=["r"], num_replicas=3)
    assert js.stream_names() == ["ORDERS"]


def test_update_stream(js):
    js.add_stream(name="S", subjects=["s.>"])
    for i in range(5):
        js.publish(f"s.{i}", b"x")
    info = js.update_stream(name="S", subjects=["s.>", "t"], max_msgs=2)
    assert info.config.max_msgs == 2 and info.state.messages == 2
    assert js.publish("t", b"y").stream == "S"
    with pytest.raises(E.JSStreamNotFoundErr):
        js.update_stream(name="NOPE", subjects=["n"])
    with pytest.raises(E.JSStreamInvalidConfigF) as exc:
        js.update_stream(name="S", subjects=["s.>"], storage="memory"
                         if info.config.storage == "file" else "file")
    assert "can not change storage type" in exc.value.description


def test_update_rejects_overlap_and_unsealing(js):
    js.add_stream(name="A", subjects=["a.>"])
    js.add_stream(name="B", subjects=["b.>"])
    with pytest.raises(E.JSStreamSubjectOverlapErr):
        js.update_stream(name="B", subjects=["b.>", "a.x"])
    sealed = js.update_stream(name="A", subjects=["a.>"], sealed=True)
    assert sealed.config.sealed and sealed.config.deny_delete and sealed.config.discard == "new"
    with pytest.raises(E.JSStreamInvalidConfigF):
        js.update_stream(name="A", subjects=["a.>"])


def test_publish_routes_by_subject(js):
    js.add_stream(name="ORDERS", subjects=["orders.>"])
    js.add_stream(name="EVENTS", subjects=["events.*", "audit"])
    assert js.publish("orders.eu.new", b"1") == jsstore.PubAck(stream="ORDERS", seq=1)
    assert js.publish("events.click", b"2") == jsstore.PubAck(stream="EVENTS", seq=1)
    assert js.publish("audit", b"3") == jsstore.PubAck(stream="EVENTS", seq=2)
    assert js.publish("orders.x", b"4").seq == 2
    with pytest.raises(jsstore.NoStreamResponseError):
        js.publish("events.a.b", b"no")
    with pytest.raises(jsstore.NoStreamResponseError):
        js.publish("nothing", b"no")
    # a wildcard token is an ordinary token that only the wildcards of a stream's subjects
    # take, as in nats-server's sublist: stored under the subject as published
    assert js.publish("orders.*", b"wildcard") == jsstore.PubAck(stream="ORDERS", seq=3)
    assert js.get_msg("ORDERS", 3).subject == "orders.*"
    assert js.publish("events.>", b"5") == jsstore.PubAck(stream="EVENTS", seq=3)
    with pytest.raises(jsstore.NoStreamResponseError):
        js.publish("events.*.b", b"no")
    with pytest.raises(ValueError):
        js.publish("orders..x", b"an empty token")
    js.delete_stream("EVENTS")
    with pytest.raises(jsstore.NoStreamResponseError):
        js.publish("audit", b"gone")


def test_default_subject_is_the_name(js):
    js.add_stream(name="plain")
    assert js.publish("plain", b"x").stream == "plain"


def test_get_msg_forms(js):
    js.add_stream(name="S", subjects=["s.*"])
    js.publish("s.a", b"a1", headers={"K": "v", "Multi": ["1", "2"]})
    js.publish("s.b", b"b1")
    js.publish("s.a", b"a2")
    msg = js.get_msg("S", seq=1)
    assert (msg.subject, msg.seq, msg.data) == ("s.a", 1, b"a1")
    assert msg.headers == {"K": "v", "Multi": "1"}
    assert msg.hdr == b"NATS/1.0\r\nK: v\r\nMulti: 1\r\nMulti: 2\r\n\r\n"
    assert msg.time > 0
    assert js.get_msg("S", last_by_subject="s.a").seq == 3
    assert js.get_msg("S", next_by_subject="s.b").seq == 2
    assert js.get_msg("S", seq=3, next_by_subject="s.*").seq == 3
    assert js.get_msg("S", seq=2).headers is None
    with pytest.raises(E.JSNoMessageFoundErr):
        js.get_msg("S", seq=9)
    with pytest.raises(E.JSNoMessageFoundErr):
        js.get_msg("S", last_by_subject="s.zz")
    with pytest.raises(E.JSBadRequestErr):
        js.get_msg("S")
    with pytest.raises(E.JSBadRequestErr):
        js.get_msg("S", seq=1, last_by_subject="s.a")
    with pytest.raises(E.JSBadRequestErr):
        js.get_msg("S", last_by_subject="s.a", next_by_subject="s.a")
    with pytest.raises(E.JSStreamNotFoundErr):
        js.get_msg("NOPE", seq=1)


def test_delete_msg(js):
    js.add_stream(name="S", subjects=["s"])
    for _ in range(3):
        js.publish("s", b"x")
    assert js.delete_msg("S", 2)
    assert js.delete_msg("S", 3, no_erase=True)
    with pytest.raises(E.JSSequenceNotFoundErrF) as exc:
        js.delete_msg("S", 2)
    assert exc.value.description == "sequence 2 not found"
    assert js.stream_info("S").state.messages == 1
    with pytest.raises(E.JSStreamNotFoundErr):
        js.delete_msg("NOPE", 1)


def test_purge_forms(js):
    js.add_stream(name="S", subjects=["s.*"])
    for i in range(10):
        js.publish("s.a" if i % 2 else "s.b", b"x")
    assert js.purge_stream("S", filter="s.a", keep=2) == 3
    assert js.purge_stream("S", seq=5) == 2
    with pytest.raises(E.JSBadRequestErr):
        js.purge_stream("S", seq=3, keep=1)
    assert js.purge_stream("S") == 5
    state = js.stream_info("S").state
    assert state.messages == 0 and state.last_seq == 10 and state.first_seq == 11


def test_deny_delete_deny_purge_and_sealed(js):
    js.add_stream(name="D", subjects=["d"], deny_delete=True, deny_purge=True)
    js.publish("d", b"x")
    with pytest.raises(E.JSStreamMsgDeleteFailedF) as exc:
        js.delete_msg("D", 1)
    assert (exc.value.err_code, exc.value.description) == (10057, "message delete not permitted")
    with pytest.raises(E.JSStreamPurgeFailedF) as exc:
        js.purge_stream("D")
    assert (exc.value.err_code, exc.value.description) == (10110, "stream purge not permitted")
    js.update_stream(name="D", subjects=["d"], deny_delete=True, deny_purge=True, sealed=True)
    for call in (lambda: js.publish("d", b"y"), lambda: js.delete_msg("D", 1),
                 lambda: js.purge_stream("D")):
        with pytest.raises(E.JSStreamSealedErr):
            call()
    assert js.stream_info("D").state.messages == 1


def test_message_and_header_size_limits(js):
    js.add_stream(name="S", subjects=["s"], max_msg_size=16)
    assert js.publish("s", b"x" * 16).seq == 1
    with pytest.raises(E.JSStreamMessageExceedsMaximumErr):
        js.publish("s", b"x" * 17)
    with pytest.raises(E.JSStreamMessageExceedsMaximumErr):
        js.publish("s", b"", headers={"Key": "a-long-value"})
    js.add_stream(name="H", subjects=["h"])
    with pytest.raises(E.JSStreamHeaderExceedsMaximumErr):
        js.publish("h", b"x", headers={"Big": "v" * 70_000})
    assert js.stream_info("S").state.messages == 1 and js.stream_info("H").state.messages == 0


def test_store_limit_errors_become_store_failed(js):
    js.add_stream(name="S", subjects=["s"], max_msgs=2, discard="new")
    js.publish("s", b"1")
    js.publish("s", b"2")
    with pytest.raises(E.JSStreamStoreFailedF) as exc:
        js.publish("s", b"3")
    assert (exc.value.code, exc.value.err_code) == (503, 10077)
    assert exc.value.description == "maximum messages exceeded"


def test_limits_enforced_by_store_discard_old(js):
    js.add_stream(name="S", subjects=["s.*"], max_msgs_per_subject=2)
    for i in range(5):
        js.publish("s.a", str(i).encode())
    state = js.stream_info("S").state
    assert state.messages == 2 and state.first_seq == 4


def test_delete_stream_and_account_info(js):
    js.add_stream(name="A", subjects=["a"])
    js.add_stream(name="M", subjects=["m"], storage="memory")
    js.publish("a", b"12345")
    js.publish("m", b"123")
    account = js.account_info()
    assert account.streams == 2
    assert account.memory > 0 and account.memory + account.storage > account.memory
    assert [info.config.name for info in js.streams_info()] == ["A", "M"]
    assert js.delete_stream("A")
    with pytest.raises(E.JSStreamNotFoundErr):
        js.delete_stream("A")
    with pytest.raises(E.JSStreamNotFoundErr):
        js.stream_info("A")
    assert js.account_info().streams == 1


def test_stream_info_details(js):
    js.add_stream(name="S", subjects=["s.*"])
    for subject in ("s.a", "s.b", "s.a"):
        js.publish(subject, b"x")
    js.delete_msg("S", 2)
    info = js.stream_info("S")
    assert info.state.deleted is None and info.state.subjects is None
    detailed = js.stream_info("S", subjects_filter=">", deleted_details=True)
    assert detailed.state.deleted == [2] and detailed.state.subjects == {"s.a": 2}


def test_persistence_across_reopen(tmp_path):
    with jsstore.open(tmp_path) as js:
        created = js.add_stream(name="ORDERS", subjects=["orders.>"], max_msgs=100,
                                description="<orders & more>").created
        js.add_stream(name="MEM", subjects=["mem"], storage="memory")
        js.publish("orders.a", b"one", headers={"X": "1"})
        js.publish("orders.b", b"two")
        js.update_stream(name="ORDERS", subjects=["orders.>"], max_msgs=50,
                         description="<orders & more>")
    with jsstore.open(tmp_path) as js:
        assert js.stream_names() == ["ORDERS"]    # memory streams are not kept, as in nats-server
        info = js.stream_info("ORDERS")
        assert info.created == created and info.config.max_msgs == 50
        assert info.state.messages == 2
        assert js.get_msg("ORDERS", seq=1).headers == {"X": "1"}
        assert js.publish("orders.c", b"three").seq == 3


def test_meta_inf_is_nats_server_stream_info(tmp_path):
    with jsstore.open(tmp_path) as js:
        js.add_stream(name="S", subjects=["s.>"])
        js.update_stream(name="S", subjects=["s.>"], max_bytes=1 << 20)
        created = js.stream_info("S").created
        config = js.stream_info("S").config
    directory = jsstore.stream_dir(str(tmp_path), "S")
    data = (open(os.path.join(directory, "meta.inf"), "rb")).read()
    assert data == meta_info_json(config, created)
    assert data.startswith(b'{"Created":"') and b'"s.\\u003e"' in data
    assert json.loads(data)["max_bytes"] == 1 << 20
    checksum = open(os.path.join(directory, "meta.sum"), "rb").read()
    assert checksum == meta_sum(meta_hash_key("S"), data)


def test_reopen_skips_a_stream_whose_meta_sum_does_not_match(tmp_path):
    with jsstore.open(tmp_path) as js:
        js.add_stream(name="GOOD", subjects=["g"])
        js.add_stream(name="BAD", subjects=["b"])
    with open(os.path.join(jsstore.stream_dir(str(tmp_path), "BAD"), "meta.sum"), "wb") as f:
        f.write(b"0000000000000000")
    with jsstore.open(tmp_path) as js:
        assert js.stream_names() == ["GOOD"]
        assert "BAD" in js.unrecovered


def test_filestore_without_meta_writes_storage_config(tmp_path):
    store = jsstore.FileStore(tmp_path / "S", jsstore.StreamConfig(name="S", subjects=["s"]))
    store.stop()
    data = json.loads((tmp_path / "S" / "meta.inf").read_bytes())
    assert data["name"] == "S" and "Created" in data


def test_memory_only_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with jsstore.open() as js:
        js.add_stream(name="S", subjects=["s"])
        js.publish("s", b"x")
        assert js.stream_info("S").config.storage == "file"
        assert js.stream_info("S").state.messages == 1
    assert os.listdir(tmp_path) == []


def test_closed_handle_refuses_calls(tmp_path):
    js = jsstore.open(tmp_path)
    js.add_stream(name="S", subjects=["s"])
    js.close()
    js.close()
    with pytest.raises(jsstore.errors.StoreClosed):
        js.publish("s", b"x")
    with pytest.raises(jsstore.errors.StoreClosed):
        js.stream_names()


def test_header_block_round_trip():
    assert encode_headers(None) is None and encode_headers({}) is None
    block = encode_headers({"Nats-Msg-Id": "o-1", "A": "x: y"})
    assert block == b"NATS/1.0\r\nNats-Msg-Id: o-1\r\nA: x: y\r\n\r\n"
    assert decode_headers(block) == {"Nats-Msg-Id": "o-1", "A": "x: y"}
    assert encode_headers(block) == block
    with pytest.raises(ValueError):
        encode_headers({"Bad Key": "v"})
    with pytest.raises(ValueError):
        encode_headers({"K": "line\r\nbreak"})


def test_an_account_with_limits_in_its_own_directory(tmp_path):
    """An embedded JetStream opened for an account keeps its streams under
    jetstream/<account>/ and enforces that account's JetStream limits."""
    limits = AccountLimits(max_streams=1, max_storage=400, max_bytes_required=True,
                           storage_max_stream_bytes=1000)
    with jsstore.open(tmp_path, account="ACC", limits=limits, domain="hub") as js:
        with pytest.raises(E.JSStreamMaxBytesRequired):
            js.add_stream(name="S", subjects=["s.>"])
        with pytest.raises(E.JSStreamMaxStreamBytesExceeded):
            js.add_stream(name="S", subjects=["s.>"], max_bytes=1001)
        with pytest.raises(E.JSStorageResourcesExceededErr):
            js.add_stream(name="S", subjects=["s.>"], max_bytes=401)
        js.add_stream(name="S", subjects=["s.>"], max_bytes=400)
        with pytest.raises(E.JSMaximumStreamsLimitErr):
            js.add_stream(name="T", subjects=["t.>"], max_bytes=1)
        ack = js.publish("s.1", b"x" * 200)
        assert (ack.stream, ack.seq, ack.domain) == ("S", 1, "hub")
        with pytest.raises(E.JSAccountResourcesExceededErr):
            js.publish("s.2", b"x" * 200)
        info = js.account_info()
        assert (info.reserved_storage, info.limits) == (400, limits)
    assert os.listdir(tmp_path / "jetstream" / "ACC" / "streams") == ["S"]
    with jsstore.open(tmp_path, account="ACC") as js:
        assert js.stream_names() == ["S"]
    with jsstore.open(tmp_path) as js:
        assert js.stream_names() == []
