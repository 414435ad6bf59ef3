"""STREAM.SNAPSHOT / STREAM.RESTORE through the bus: round trips, flow control, errors,
advisories, and a comparison with a real nats-server."""

from __future__ import annotations

import json
import os
import re
import threading
import time

import pytest

import jsstore.jetstream.account as jetstream
from jsstore.api import snapshot as snap
from jsstore.wire.bus import Msg

ACK_REPLY = re.compile(r"^\$JS\.SNAPSHOT\.ACK\.(\w+)\.([0-9A-Za-z]{22})\.(\d+)\.(\d+)$")


class Client:
    """Requests into one JetStream through js.handle, answers collected from the bus."""

    def __init__(self, js):
        self.js = js
        self.answers: list[Msg] = []
        self.advisories: list[Msg] = []
        self._n = 0
        js.bus.subscribe("_R.>", self.answers.append)
        js.bus.subscribe("$JS.EVENT.ADVISORY.>", self.advisories.append)

    def request(self, subject: str, body: bytes = b"") -> dict | bytes | None:
        self._n += 1
        reply = f"_R.{self._n}"
        before = len(self.answers)
        assert self.js.handle(Msg(subject, body, reply=reply))
        mine = [m for m in self.answers[before:] if m.subject == reply]
        if not mine:
            return None
        return json.loads(mine[0].data) if mine[0].data else b""


class Receiver:
    """A deliver-subject subscriber; acks from inside its callback unless told not to."""

    def __init__(self, js, subject="snap.deliver", ack=True):
        self.js = js
        self.ack = ack
        self.msgs: list[Msg] = []
        js.bus.subscribe(subject, self.on_msg)

    def on_msg(self, msg: Msg) -> None:
        self.msgs.append(msg)
        if self.ack and msg.reply:
            self.js.handle(Msg(msg.reply, b""))

    @property
    def ended(self) -> bool:
        return bool(self.msgs) and not self.msgs[-1].data

    def data(self) -> bytes:
        return b"".join(m.data for m in self.msgs)


def fill(js, name="S", subjects=("s.>",), count=60, size=700, **config):
    js.add_stream(name=name, subjects=list(subjects), **config)
    for i in range(count):
        js.publish(f"{subjects[0][:-1]}{i % 7}", os.urandom(size),
                   headers={"k": str(i)} if i % 3 == 0 else None)


def messages(js, name):
    state = js.stream_info(name).state
    out = []
    for seq in range(state.first_seq, state.last_seq + 1):
        try:
            msg = js.get_msg(name, seq)
        except Exception:
            continue
        out.append((msg.seq, msg.subject, msg.data, msg.hdr, msg.time))
    return out


def take_snapshot(js, name="S", **request) -> tuple[dict, Receiver]:
    client = Client(js)
    receiver = Receiver(js, ack=request.pop("ack", True))
    body = {"deliver_subject": "snap.deliver", **request}
    answer = client.request(f"$JS.API.STREAM.SNAPSHOT.{name}", json.dumps(body).encode())
    return answer, receiver


def restore(js, name, data: bytes, config: dict | None = None, piece=4000) -> dict:
    client = Client(js)
    body = {"config": config if config is not None else {"name": name}}
    answer = client.request(f"$JS.API.STREAM.RESTORE.{name}", json.dumps(body).encode())
    subject = answer["deliver_subject"]
    assert re.fullmatch(rf"\$JS\.SNAPSHOT\.RESTORE\.{name}\.[0-9A-Za-z]{{22}}", subject)
    for i in range(0, len(data), piece):
        assert client.request(subject, data[i:i + piece]) == b""     # each chunk acked
    return client.request(subject, b"")


@pytest.fixture(params=["memory", "directory"])
def target(request, tmp_path):
    js = jetstream.open(None if request.param == "memory" else tmp_path / "target")
    yield js
    js.close()


def test_round_trip_file_stream(tmp_path, target):
    js = jetstream.open(tmp_path / "source")
    fill(js, count=80)
    js.delete_msg("S", 1)
    js.delete_msg("S", 40)
    before = messages(js, "S")
    answer, receiver = take_snapshot(js, chunk_size=2048)
    assert answer["type"] == "io.nats.jetstream.api.v1.stream_snapshot_response"
    assert list(answer) == ["type", "config", "state"]
    assert answer["state"]["messages"] == 78 and answer["state"]["first_seq"] == 2
    assert receiver.ended and receiver.msgs[-1].hdr == snap.END_HEADER
    result = restore(target, "S", receiver.data(), {"name": "S", "subjects": ["s.>"]})
    assert result["type"] == "io.nats.jetstream.api.v1.stream_create_response"
    assert result["state"]["messages"] == 78
    assert (result["state"]["first_seq"], result["state"]["last_seq"]) == (2, 80)
    assert messages(target, "S") == before
    assert target.stream_info("S").state.num_deleted == 1
    ack = target.publish("s.new", b"after")          # the restored stream takes publishes
    assert ack.seq == 81
    js.close()


def test_round_trip_file_stream_survives_reopen(tmp_path):
    source = jetstream.open(tmp_path / "a")
    fill(source, count=30)
    _, receiver = take_snapshot(source)
    restored_dir = tmp_path / "b"
    target = jetstream.open(restored_dir)
    assert restore(target, "S", receiver.data(), {"name": "S", "subjects": ["s.>"]})["config"]
    expected = messages(source, "S")
    target.close()
    again = jetstream.open(restored_dir)
    assert messages(again, "S") == expected
    again.close()
    source.close()


def test_round_trip_memory_stream(target):
    js = jetstream.open()
    fill(js, count=40, storage="memory")
    js.purge_stream("S", seq=5)
    before = messages(js, "S")
    _, receiver = take_snapshot(js)
    result = restore(target, "S", receiver.data(), {"name": "S", "subjects": ["s.>"],
                                                    "storage": "memory"})
    assert result["config"]["storage"] == "memory"
    assert messages(target, "S") == before
    assert result["state"]["first_seq"] == 5


def test_restore_with_another_config(tmp_path, target):
    js = jetstream.open(tmp_path / "source")
    fill(js, count=25)
    before = messages(js, "S")
    _, receiver = take_snapshot(js)
    result = restore(target, "S", receiver.data(),
                     {"name": "S", "subjects": ["s.>", "t.>"], "description": "again"})
    assert result["config"]["subjects"] == ["s.>", "t.>"]
    assert target.stream_info("S").config.description == "again"
    assert messages(target, "S") == before
    js.close()


def test_restore_under_another_name_fails(tmp_path):
    js = jetstream.open(tmp_path / "source")
    fill(js, count=5)
    _, receiver = take_snapshot(js)
    target = jetstream.open(tmp_path / "target")
    result = restore(target, "T", receiver.data(), {"name": "T", "subjects": ["t.>"]})
    assert error_of(result) == (500, 10062, "restore failed: stream names do not match")
    assert target.stream_names() == []
    js.close()


def test_restore_without_config_takes_the_subject_name(tmp_path):
    js = jetstream.open(tmp_path / "a")
    js.add_stream(name="X")
    js.publish("X", b"one")
    _, receiver = take_snapshot(js, "X")
    target = jetstream.open()
    client = Client(target)
    answer = client.request("$JS.API.STREAM.RESTORE.X", b'{"state":{}}')
    subject = answer["deliver_subject"]
    client.request(subject, receiver.data())
    result = client.request(subject, b"")
    assert result["config"]["name"] == "X" and result["config"]["subjects"] == ["X"]
    assert result["state"]["messages"] == 1
    js.close()


def test_snapshot_without_consumers_flag_accepted(tmp_path):
    js = jetstream.open(tmp_path / "a")
    fill(js, count=3)
    answer, receiver = take_snapshot(js, no_consumers=True, jsck=True)
    assert "error" not in answer and receiver.ended
    js.close()


# -- flow control --------------------------------------------------------------------------
def test_window_limits_chunks_in_flight(tmp_path):
    js = jetstream.open(tmp_path / "a")
    fill(js, count=20, size=1000)
    answer, receiver = take_snapshot(js, chunk_size=1024, window_size=3 * 1024, ack=False)
    assert "error" not in answer
    assert len(receiver.msgs) == 3                       # the window: three unacked chunks
    ids = set()
    for index, msg in enumerate(receiver.msgs, 1):
        match = ACK_REPLY.match(msg.reply)
        assert match and match.group(1) == "S"
        assert (int(match.group(3)), int(match.group(4))) == (1024, index)
        assert len(msg.data) == 1024
        ids.add(match.group(2))
    assert len(ids) == 1
    assert js.handle(Msg(receiver.msgs[1].reply, b""))  # acks in any order
    assert len(receiver.msgs) == 4
    assert js.handle(Msg(receiver.msgs[1].reply, b""))  # a repeated ack frees nothing
    assert len(receiver.msgs) == 4
    while not receiver.ended:
        pending = [m for m in receiver.msgs if m.reply]
        before = len(receiver.msgs)
        for msg in pending:
            js.handle(Msg(msg.reply, b""))
        assert len(receiver.msgs) > before
    data_msgs = receiver.msgs[:-1]
    assert data_msgs[-1].reply is None and len(data_msgs[-1].data) < 1024
    assert all(m.reply for m in data_msgs[:-1])
    assert receiver.msgs[-1].hdr == snap.END_HEADER
    assert not js.handle(Msg(receiver.msgs[0].reply, b""))   # the transfer is over
    js.close()


def test_end_waits_for_the_last_acks(tmp_path):
    js = jetstream.open(tmp_path / "a")
    fill(js, count=10, size=1000)
    _, receiver = take_snapshot(js, chunk_size=1024, window_size=1 << 20, ack=False)
    assert not receiver.ended                            # every chunk sent, acks owed
    assert receiver.msgs[-1].reply is None
    for msg in [m for m in receiver.msgs if m.reply]:
        assert not receiver.ended
        js.handle(Msg(msg.reply, b""))
    assert receiver.ended and receiver.msgs[-1].hdr == snap.END_HEADER
    js.close()


def test_single_short_chunk_needs_no_ack(tmp_path):
    js = jetstream.open(tmp_path / "a")
    fill(js, count=2, size=10)
    _, receiver = take_snapshot(js, ack=False)
    assert [m.reply for m in receiver.msgs] == [None, None]
    assert receiver.msgs[-1].data == b"" and receiver.msgs[-1].hdr is None
    js.close()


def test_synchronous_acks_do_not_recurse(tmp_path):
    js = jetstream.open(tmp_path / "a")
    fill(js, count=600, size=4000)
    state = js.stream_info("S").state
    answer, receiver = take_snapshot(js, chunk_size=1024, window_size=1024)
    assert receiver.ended and len(receiver.msgs) > 1000
    target = jetstream.open()
    restore(target, "S", receiver.data(), {"name": "S", "subjects": ["s.>"]}, piece=100_000)
    assert target.stream_info("S").state.messages == state.messages
    js.close()


def test_acks_from_another_thread(tmp_path):
    js = jetstream.open(tmp_path / "a")
    fill(js, count=50, size=1000)
    replies: list[str] = []
    cond = threading.Condition()
    msgs: list[Msg] = []

    def on_msg(msg):
        msgs.append(msg)
        if msg.reply:
            with cond:
                replies.append(msg.reply)
                cond.notify()

    js.bus.subscribe("snap.deliver", on_msg)

    def acker():
        while True:
            with cond:
                while not replies:
                    if not cond.wait(5):
                        return
                reply = replies.pop(0)
            js.handle(Msg(reply, b""))
            if msgs and not msgs[-1].data:
                return

    thread = threading.Thread(target=acker)
    thread.start()
    Client(js).request("$JS.API.STREAM.SNAPSHOT.S",
                       b'{"deliver_subject":"snap.deliver","chunk_size":1024,"window_size":2048}')
    thread.join(10)
    assert msgs and msgs[-1].data == b"" and msgs[-1].hdr == snap.END_HEADER
    js.close()


def test_no_acks_ends_with_408(tmp_path, monkeypatch):
    monkeypatch.setattr(snap.SnapshotApi, "ack_timeout", 0.2)
    js = jetstream.open(tmp_path / "a")
    fill(js, count=10, size=1000)
    client = Client(js)
    receiver = Receiver(js, ack=False)
    client.request("$JS.API.STREAM.SNAPSHOT.S",
                   b'{"deliver_subject":"snap.deliver","chunk_size":1024,"window_size":1024}')
    assert len(receiver.msgs) == 1
    deadline = time.time() + 5
    while not receiver.ended and time.time() < deadline:
        time.sleep(0.02)
    assert receiver.msgs[-1].hdr == snap.NO_FLOW_HEADER and len(receiver.msgs) == 2
    complete = json.loads(client.advisories[-1].data)
    assert complete["type"] == "io.nats.jetstream.advisory.v1.snapshot_complete"
    assert complete["error"] == "no flow response"
    js.close()


def test_clamps():
    assert snap.clamp_flow(0, 0) == (128 * 1024, 64)
    assert snap.clamp_flow(10, 1) == (1024, 1)
    assert snap.clamp_flow(10 << 20, 0) == (1 << 20, 8)
    assert snap.clamp_flow(4096, 1) == (4096, 1)
    assert snap.clamp_flow(1024, 1 << 30) == (1024, 32 * 1024)


# -- errors --------------------------------------------------------------------------------
def error_of(answer: dict) -> tuple[int, int, str]:
    error = answer["error"]
    return error["code"], error["err_code"], error["description"]


@pytest.mark.parametrize("name,body,expected", [
    ("S", b"", (400, 10003, "bad request")),
    ("S", b"  {}  ", (400, 10003, "bad request")),
    ("NOPE", b'{"deliver_subject":"x"}', (404, 10059, "stream not found")),
    ("S", b'{"deliver_subject":""}', (400, 10015, "deliver subject not valid")),
    ("S", b'{"deliver_subject":"a.*"}', (400, 10015, "deliver subject not valid")),
    ("S", b'{"deliver_subject":"a..b"}', (400, 10015, "deliver subject not valid")),
])
def test_snapshot_errors(name, body, expected):
    js = jetstream.open()
    js.add_stream(name="S", subjects=["s.>"])
    answer = Client(js).request(f"$JS.API.STREAM.SNAPSHOT.{name}", body)
    assert answer["type"] == "io.nats.jetstream.api.v1.stream_snapshot_response"
    assert list(answer) == ["type", "error"]
    assert error_of(answer) == expected


@pytest.mark.parametrize("body", [b"{", b'{"deliver_subject":"x","bogus":1}', b"[1]",
                                  b'{"deliver_subject":5}'])
def test_snapshot_bad_json(body):
    js = jetstream.open()
    js.add_stream(name="S")
    answer = Client(js).request("$JS.API.STREAM.SNAPSHOT.S", body)
    code, err_code, description = error_of(answer)
    assert (code, err_code) == (400, 10025) and description.startswith("invalid JSON: ")


@pytest.mark.parametrize("name,body,expected", [
    ("T", b"", (400, 10003, "bad request")),
    ("S", b'{"config":{"name":"S"}}', (400, 10130, "stream name already in use, cannot restore")),
    ("X", b'{"config":{"name":"Y"}}', (400, 10056, "stream name in subject does not match request")),
])
def test_restore_request_errors(name, body, expected):
    js = jetstream.open()
    js.add_stream(name="S", subjects=["s.>"])
    answer = Client(js).request(f"$JS.API.STREAM.RESTORE.{name}", body)
    assert list(answer) == ["type", "error", "deliver_subject"]
    assert answer["deliver_subject"] == "" and error_of(answer) == expected


def test_restore_bad_json():
    js = jetstream.open()
    answer = Client(js).request("$JS.API.STREAM.RESTORE.T", b"{")
    assert error_of(answer)[:2] == (400, 10025) and answer["deliver_subject"] == ""


def test_restore_of_a_pending_name_fails():
    js = jetstream.open()
    client = Client(js)
    assert "deliver_subject" in client.request("$JS.API.STREAM.RESTORE.T", b'{"config":{"name":"T"}}')
    again = client.request("$JS.API.STREAM.RESTORE.T", b'{"config":{"name":"T"}}')
    assert error_of(again)[1] == 10130


@pytest.mark.parametrize("data,description", [
    (b"", "restore failed: EOF"),
    (b"garbage", None),
])
def test_restore_failures_answer_with_the_error(data, description):
    js = jetstream.open()
    client = Client(js)
    subject = client.request("$JS.API.STREAM.RESTORE.T", b'{"config":{"name":"T"}}')["deliver_subject"]
    if data:
        client.request(subject, data)
    answer = client.request(subject, b"")
    assert answer["type"] == "io.nats.jetstream.api.v1.stream_create_response"
    code, err_code, text = error_of(answer)
    assert (code, err_code) == (500, 10062)
    assert text == description if description else text.startswith("restore failed: ")
    assert js.stream_names() == []
    assert not js.handle(Msg(subject, b"", reply="_R.x"))   # the session is gone


def test_restore_overlapping_subjects_fails(tmp_path):
    source = jetstream.open(tmp_path / "a")
    fill(source, count=3)
    _, receiver = take_snapshot(source)
    js = jetstream.open(tmp_path / "b")
    js.add_stream(name="S", subjects=["s.>"])
    result = restore(js, "W", receiver.data(), {"name": "W", "subjects": ["s.>"]})
    assert error_of(result) == (500, 10062, "restore failed: error adding stream: subjects "
                                            "overlap with an existing stream (10065)")
    assert js.stream_names() == ["S"]
    assert sorted(os.listdir(tmp_path / "b" / "jetstream" / "$G" / "streams")) == ["S"]
    source.close()


def test_chunk_without_reply_drops_the_restore():
    js = jetstream.open()
    client = Client(js)
    subject = client.request("$JS.API.STREAM.RESTORE.T", b'{"config":{"name":"T"}}')["deliver_subject"]
    assert js.handle(Msg(subject, b"data"))
    assert not js.handle(Msg(subject, b"", reply="_R.y"))
    assert json.loads(client.advisories[-1].data)["type"].endswith("restore_complete")


def test_idle_restore_is_dropped(monkeypatch):
    monkeypatch.setattr(snap.SnapshotApi, "idle_timeout", 0.1)
    js = jetstream.open()
    client = Client(js)
    subject = client.request("$JS.API.STREAM.RESTORE.T", b'{"config":{"name":"T"}}')["deliver_subject"]
    time.sleep(0.4)
    assert not js.handle(Msg(subject, b"x", reply="_R.z"))


def test_unknown_transfer_subjects_are_not_served():
    js = jetstream.open()
    assert not js.handle(Msg("$JS.SNAPSHOT.ACK.S.abc.1024.1", b""))
    assert not js.handle(Msg("$JS.SNAPSHOT.RESTORE.S.abc", b"", reply="_R.1"))


# -- advisories ----------------------------------------------------------------------------
def test_advisories_of_a_snapshot_and_a_restore(tmp_path):
    js = jetstream.open(tmp_path / "a")
    fill(js, count=5)
    client = Client(js)
    receiver = Receiver(js)
    client.request("$JS.API.STREAM.SNAPSHOT.S", b'{"deliver_subject":"snap.deliver"}')
    kinds = [m.subject for m in client.advisories]
    assert kinds[-2:] == ["$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_CREATE.S",
                          "$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_COMPLETE.S"]
    created = json.loads(client.advisories[-2].data)
    assert created["state"]["messages"] == 5 and created["client"] == {"acc": "$G"}
    target = jetstream.open()
    watcher = Client(target)
    data = receiver.data()
    restore(target, "S", data, {"name": "S", "subjects": ["s.>"]})
    subjects = [m.subject for m in watcher.advisories]
    assert subjects[0] == "$JS.EVENT.ADVISORY.STREAM.RESTORE_CREATE.S"
    assert "$JS.EVENT.ADVISORY.STREAM.CREATED.S" in subjects
    assert subjects[-1] == "$JS.EVENT.ADVISORY.STREAM.RESTORE_COMPLETE.S"
    done = json.loads(watcher.advisories[-1].data)
    assert done["bytes"] == len(data)
    js.close()


def test_send_callback_gets_the_answer_before_the_chunks(tmp_path):
    js = jetstream.open(tmp_path / "a")
    fill(js, count=5)
    order: list[str] = []
    js.bus.subscribe("snap.deliver", lambda m: order.append("chunk"))
    api = snap.SnapshotApi(js)
    result = api.snapshot("S", b'{"deliver_subject":"snap.deliver"}', "_R.1",
                          lambda hdr, data: order.append("answer"))
    assert result is None and order[0] == "answer" and order.count("chunk") == 2
    error = api.snapshot("NOPE", b'{"deliver_subject":"snap.deliver"}', "_R.1")
    assert json.loads(error)["error"]["err_code"] == 10059
    js.close()


# -- the real nats-server ------------------------------------------------------------------
@pytest.mark.natsserver
def test_protocol_matches_nats_server(tmp_path):
    """Errors byte for byte; the success shapes, chunk replies and end message; and a
    jsstore snapshot restored by nats-server."""
    import asyncio
    from natsserver import nats_server, require_nats_server
    require_nats_server()
    nats = pytest.importorskip("nats")

    js = jetstream.open(tmp_path / "jsstore")
    fill(js, count=20, size=1000)
    ours = Client(js)
    requests = [
        ("$JS.API.STREAM.SNAPSHOT.S", b""),
        ("$JS.API.STREAM.SNAPSHOT.NOPE", b'{"deliver_subject":"x"}'),
        ("$JS.API.STREAM.SNAPSHOT.S", b'{"deliver_subject":"a.*"}'),
        ("$JS.API.STREAM.RESTORE.S", b'{"config":{"name":"S"}}'),
        ("$JS.API.STREAM.RESTORE.X", b'{"config":{"name":"Y"}}'),
        ("$JS.API.STREAM.RESTORE.T", b""),
    ]
    expected_ours = [ours.request(subject, body) for subject, body in requests]
    _, receiver = take_snapshot(js, chunk_size=1024)
    snapshot_data = receiver.data()
    copy = jetstream.open(tmp_path / "copy")
    copy_client = Client(copy)
    restore(copy, "S", snapshot_data, {"name": "S", "subjects": ["s.>"]})
    our_advisories = [json.loads(m.data) for m in ours.advisories + copy_client.advisories]

    async def scenario(url):
        nc = await nats.connect(url)
        jsc = nc.jetstream()
        events = []

        async def on_event(m):
            events.append(json.loads(m.data))
        await nc.subscribe("$JS.EVENT.ADVISORY.STREAM.>", cb=on_event)
        await jsc.add_stream(name="S", subjects=["s.>"])
        for _ in range(20):
            await jsc.publish("s.a", os.urandom(1000))
        answers = []
        for subject, body in requests:
            answers.append(json.loads((await nc.request(subject, body)).data))
        chunks, done = [], asyncio.Event()

        async def on_chunk(m):
            chunks.append(m)
            if m.reply:
                await nc.publish(m.reply, b"")
            if not m.data:
                done.set()
        await nc.subscribe("snap.deliver", cb=on_chunk)
        await nc.request("$JS.API.STREAM.SNAPSHOT.S",
                         b'{"deliver_subject":"snap.deliver","chunk_size":1024}')
        await asyncio.wait_for(done.wait(), 10)
        await jsc.delete_stream("S")
        start = json.loads((await nc.request("$JS.API.STREAM.RESTORE.S",
                                             b'{"config":{"name":"S","subjects":["s.>"]}}')).data)
        for i in range(0, len(snapshot_data), 4096):
            await nc.request(start["deliver_subject"], snapshot_data[i:i + 4096])
        restored = json.loads((await nc.request(start["deliver_subject"], b"")).data)
        await nc.flush()
        await asyncio.sleep(0.2)
        await nc.close()
        return answers, chunks, restored, events

    with nats_server(str(tmp_path / "server")) as server:
        theirs, chunks, restored, events = asyncio.run(scenario(server.url))
    for mine, real in zip(expected_ours, theirs):
        assert mine == real
    real_replies = [ACK_REPLY.match(m.reply) for m in chunks if m.reply]
    assert real_replies and all(real_replies)
    assert [m.reply for m in chunks[-2:]] == ["", ""] and chunks[-1].headers == {"Status": "204"}
    assert receiver.msgs[-2].reply is None and receiver.msgs[-1].hdr == snap.END_HEADER
    # nats-server takes a jsstore snapshot back
    assert "error" not in restored, restored
    assert restored["state"]["messages"] == 20
    mine = js.stream_info("S").state
    assert (restored["state"]["first_seq"], restored["state"]["last_seq"]) == (1, 20)
    assert restored["state"]["bytes"] == mine.bytes
    # the advisories: same types, keys in the same order, the same state keys
    def shapes(docs):
        out = {}
        for doc in docs:
            keys = list(doc)
            if "state" in doc:
                keys.append(sorted(doc["state"]))
            out.setdefault(doc["type"], keys)
        return out
    real_shapes = shapes(events)
    our_shapes = shapes(our_advisories)
    for kind in ("snapshot_create", "snapshot_complete", "restore_create",
                 "restore_complete", "stream_action"):
        kind = "io.nats.jetstream.advisory.v1." + kind
        assert our_shapes[kind] == real_shapes[kind], kind
    js.close()
    copy.close()
