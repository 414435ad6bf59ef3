"""jsstore verify on crafted damage: a truncated block, a flipped byte, a corrupt index.db,
a corrupt o.dat, a corrupt thw.db and a corrupt or stale sched.db are each reported exactly
(file, problem, what is lost) with exit status 1; an intact store passes with 0, also after
the removals the issue reported as damage (KV puts on one key, max_msgs, subject and KV
purges) and with an index.db older than the blocks (a note), printing the state a reopen
finds; a store a jsstore process has open is refused; nothing is written.  (Every store
shape against both servers: test_verify_shapes.py; crafted faults against nats-server:
test_verify_faults.py.)"""

from __future__ import annotations

import json
import os
import time

import pytest
from jsstoreserver import jsstore_server

import jsstore
from jsstore.cli import main
from jsstore.stream.schedules import ScheduleTable

STREAM = os.path.join("jetstream", "$G", "streams", "ORDERS")
BLOCK = os.path.join(STREAM, "msgs", "1.blk")
INDEX = os.path.join(STREAM, "msgs", "index.db")
ODAT = os.path.join(STREAM, "obs", "C", "o.dat")


def ok(capsys, *argv) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def verify(capsys, store) -> tuple[int, dict, str]:
    code = main(["verify", "--store", store, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert main(["verify", "--store", store]) == code
    return code, report, capsys.readouterr().out


def findings(report) -> list[tuple]:
    return [(f["path"], f["problem"].split(":")[0].split(" at ")[0], f["lost_seqs"],
             f["lost_unknown"]) for s in report["streams"] for f in s["findings"]]


@pytest.fixture
def store(tmp_path, capsys):
    path = str(tmp_path / "store")
    ok(capsys, "stream", "add", "ORDERS", "--subjects", "orders.>", "--store", path)
    for n in range(10):
        ok(capsys, "pub", "orders.new", f"message {n:03d}", "--store", path)
    ok(capsys, "consumer", "add", "ORDERS", "C", "--store", path)
    ok(capsys, "consumer", "next", "ORDERS", "C", "--count", "3", "--store", path)
    return path


def test_an_intact_store_passes(store, capsys):
    code, report, text = verify(capsys, store)
    assert code == 0 and report["ok"] and findings(report) == []
    assert report["streams"][0]["messages"] == 10
    assert "OK       $G > ORDERS: 10 messages (first sequence 1, last 10)" in text
    assert text.endswith("ok\n")


def test_removals_are_not_damage(tmp_path, capsys):
    """The reported cases: two KV puts on one key, max_msgs 2 with 3 publishes, a subject
    purge and a KV purge, through the command line."""
    path = str(tmp_path / "store")
    ok(capsys, "stream", "add", "L", "--subjects", "l", "--max-msgs", "2", "--store", path)
    for n in range(3):
        ok(capsys, "pub", "l", f"m{n}", "--store", path)
    ok(capsys, "stream", "add", "P", "--subjects", "p.*", "--store", path)
    for n in range(3):
        ok(capsys, "pub", "p.a", "a", "--store", path)
        ok(capsys, "pub", "p.b", "b", "--store", path)
    ok(capsys, "stream", "purge", "P", "--subject", "p.a", "-f", "--store", path)
    ok(capsys, "kv", "add", "B", "--store", path)
    ok(capsys, "kv", "put", "B", "k", "one", "--store", path)
    ok(capsys, "kv", "put", "B", "k", "two", "--store", path)
    ok(capsys, "kv", "put", "B", "gone", "x", "--store", path)
    ok(capsys, "kv", "purge", "B", "gone", "-f", "--store", path)
    code, report, text = verify(capsys, path)
    assert findings(report) == [] and code == 0
    assert "OK       $G > KV_B: 2 messages (first sequence 2, last 4)" in text
    assert "OK       $G > L: 2 messages (first sequence 2, last 3)" in text
    assert "OK       $G > P: 3 messages (first sequence 2, last 6)" in text


def test_messages_aged_out_since_the_stop(tmp_path, capsys):
    """index.db written while the messages were young: verify and a reopen both apply
    max_age, as nats-server does on either recovery path."""
    path = str(tmp_path / "store")
    js = jsstore.open(path)
    js.add_stream(name="A", subjects=["a"], max_age=300_000_000)      # 0.3 s
    for n in range(3):
        js.publish("a", b"x")
    stored = js.stream_info("A").state.last_ts
    js.close()
    while time.time_ns() <= stored + 400_000_000:           # (last_ts: Unix ns)
        time.sleep(0.05)
    code, report, text = verify(capsys, path)
    assert code == 0 and findings(report) == []
    assert "OK       $G > A: 0 messages (last sequence 3)" in text
    js = jsstore.open(path)
    try:
        assert js.stream_info("A").state.messages == 0
    finally:
        js.close()


def test_truncated_block(store, capsys):
    path = os.path.join(store, BLOCK)
    os.truncate(path, os.path.getsize(path) - 5)
    before = open(path, "rb").read()
    code, report, text = verify(capsys, store)
    assert code == 1 and not report["ok"]
    assert findings(report) == [(BLOCK, "truncated record", [[10, 10]], False)]
    assert "lost: messages 10" in text and text.endswith("damaged\n")
    assert open(path, "rb").read() == before          # read-only: nothing truncated


def test_flipped_byte(store, capsys):
    path = os.path.join(store, BLOCK)
    data = bytearray(open(path, "rb").read())
    record = len(data) // 10                          # ten records of one size
    data[4 * record + record // 2] ^= 0x40            # inside the fifth message
    open(path, "wb").write(bytes(data))
    code, report, text = verify(capsys, store)
    assert code == 1
    assert findings(report) == [(BLOCK, "bad record", [[5, 10]], False)]
    assert f"bad record at offset {4 * record}" in text and "lost: messages 5..10" in text


def test_an_index_db_older_than_the_blocks_is_a_note(store, capsys):
    """index.db written before the last two messages, as a crash of nats-server leaves it:
    a reopen rebuilds from the blocks and loses nothing, so it is a note, not damage."""
    path = os.path.join(store, INDEX)
    old = open(path, "rb").read()
    ok(capsys, "pub", "orders.new", "eleven", "--store", store)
    ok(capsys, "pub", "orders.new", "twelve", "--store", store)
    open(path, "wb").write(old)
    code, report, text = verify(capsys, store)
    assert code == 0 and findings(report) == []
    (stream,) = report["streams"]
    assert (stream["messages"], stream["last_seq"]) == (12, 12)
    assert stream["notes"] == [{"path": INDEX, "note": (
        "older than the blocks (its last record hash does not match the last block's): "
        "rebuilt from them on the next open, nothing lost")}]
    assert f"  note: {INDEX}: older than the blocks" in text and text.endswith("ok\n")


def test_corrupt_index_db(store, capsys):
    path = os.path.join(store, INDEX)
    data = bytearray(open(path, "rb").read())
    data[5] ^= 0xFF
    open(path, "wb").write(bytes(data))
    code, report, _ = verify(capsys, store)
    assert code == 1 and findings(report) == [(INDEX, "corrupt", [], False)]


def test_corrupt_o_dat(store, capsys):
    open(os.path.join(store, ODAT), "wb").write(b"\x16\x09garbage")
    code, report, text = verify(capsys, store)
    assert code == 1
    assert findings(report) == [(ODAT, "corrupt consumer state", [], True)]
    assert "lost: data whose sequences cannot be known" in text


def test_a_store_in_use_is_refused(store, capsys):
    """A store a running `jsstore serve` has open changes while it is read: verify refuses
    it in one line naming the holder, and checks it once the server has stopped."""
    with jsstore_server(store) as server:
        assert main(["verify", "--store", store]) == 1
        out, err = capsys.readouterr()
        assert out == "" and len(err.splitlines()) == 1
        assert err.startswith(f"jsstore: {STREAM} is in use by pid {server.pid} (")
    assert verify(capsys, store)[0] == 0


def test_not_a_store_is_one_line(tmp_path, capsys):
    assert main(["verify", "--store", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("jsstore: ") and len(err.splitlines()) == 1


def _ttl_stream(store) -> str:
    """A stream T whose message carries a Nats-TTL (so a clean stop writes msgs/thw.db)."""
    js = jsstore.open(store)
    js.add_stream(name="T", subjects=["t"], allow_msg_ttl=True)
    js.publish("t", b"expires", headers={"Nats-TTL": "1h"})
    js.close()
    return os.path.join("jetstream", "$G", "streams", "T", "msgs")


def test_corrupt_ttl_state(store, capsys):
    msgs = _ttl_stream(store)
    thw = os.path.join(msgs, "thw.db")
    assert verify(capsys, store)[0] == 0
    open(os.path.join(store, thw), "wb").write(b"\x01garbage")
    code, report, text = verify(capsys, store)
    assert code == 1 and findings(report) == [(thw, "corrupt", [], False)]
    assert "Nats-TTL headers" in text


def test_schedule_state_of_nats_server_corrupt_or_stale(store, capsys):
    msgs = _ttl_stream(store)
    sched = os.path.join(msgs, "sched.db")
    open(os.path.join(store, sched), "wb").write(b"\x01\x02")
    code, report, _ = verify(capsys, store)
    assert code == 1 and findings(report) == [(sched, "corrupt", [], False)]
    open(os.path.join(store, sched), "wb").write(ScheduleTable().encode(high_seq=99))
    code, report, text = verify(capsys, store)
    assert code == 1 and findings(report) == [(sched, "stale", [], False)]
    assert "up to 98, the blocks end at 1" in text
    open(os.path.join(store, sched), "wb").write(ScheduleTable().encode(high_seq=2))
    assert verify(capsys, store)[0] == 0
