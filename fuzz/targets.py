"""Fuzz targets: each takes arbitrary bytes and must either succeed or raise a jsstore
error (or ValueError for malformed arguments) -- never crash, hang or raise anything else.

The atheris harness (fuzz/run.py) drives them with coverage feedback; the test suite
replays the seed corpora in fuzz/corpus/<target>/ through the same functions.
"""

from __future__ import annotations

import os
import tempfile

from jsstore._core import seqcodec
from jsstore._core.block import MsgBlock
from jsstore._core.compress import decompress_block, s2_decode_stream
from jsstore._core.hashing import block_hash_key
from jsstore._core.subjects import SubjectIndex
from jsstore.errors import StoreError

EXPECTED = (StoreError, ValueError)


def block_records(data: bytes) -> None:
    """Recovery scan of a block's bytes (every record length, flag and hash path)."""
    mb = MsgBlock(1, block_hash_key("FUZZ", 1))
    mb.load_bytes(data)
    mb.build_cache(SubjectIndex(), True, [])
    assert mb.raw_bytes <= len(data)


def seqset_decode(data: bytes) -> None:
    try:
        ss, used = seqcodec.decode(data)
    except EXPECTED:
        return
    assert 0 < used <= len(data)
    again, _ = seqcodec.decode(seqcodec.encode(ss))
    assert again.to_list() == ss.to_list()


def index_db(data: bytes) -> None:
    from jsstore.store.indexdb import decode_index
    try:
        decode_index("FUZZ", data)
    except EXPECTED:
        pass


def block_file(data: bytes) -> None:
    try:
        decompress_block(data)
    except EXPECTED:
        pass
    try:
        s2_decode_stream(data)
    except EXPECTED:
        pass


def filestore_open(data: bytes) -> None:
    """A whole FileStore recovery over a block file with these bytes."""
    import jsstore
    from jsstore import StreamConfig
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "msgs"))
        with open(os.path.join(d, "msgs", "1.blk"), "wb") as f:
            f.write(data)
        try:
            fs = jsstore.FileStore(d, StreamConfig(name="FUZZ", subjects=[">"]))
        except EXPECTED:
            return
        st = fs.state()
        for seq in range(st.first_seq, min(st.last_seq, st.first_seq + 64) + 1):
            try:
                fs.load_msg(seq)
            except EXPECTED:
                pass
        fs.stop()


def odat_decode(data: bytes) -> None:
    """A consumer's o.dat: decoded, then encoded and decoded again; o.dat keeps pending
    times in whole seconds, so after one round trip the state is a fixed point."""
    from jsstore._core.ackstate import AckState, decode
    try:
        state = decode(data)
    except EXPECTED:
        return

    def round_trip(state):
        acks = AckState("explicit")
        acks.load(state)
        return decode(acks.encode())
    once = round_trip(state)
    assert once.delivered == state.delivered and once.ack_floor == state.ack_floor
    assert sorted(once.pending or {}) == sorted(state.pending or {})
    assert round_trip(once) == once


def ack_payload(data: bytes) -> None:
    """An ack message: the subject (up to the first NUL) and the payload (the rest), read as
    nats-server reads them; round trip of the numbers of a well-formed subject."""
    from jsstore.wire import ackreply as acks
    subject_bytes, _, payload = data.partition(b"\0")
    subject = subject_bytes.decode("utf-8", "replace")
    numbers = acks.ack_reply_info(subject)
    parsed = acks.parse_ack_subject(subject)
    if parsed is not None:
        assert (parsed.stream_seq, parsed.consumer_seq, parsed.delivered) == numbers[:3]
    ack = acks.parse_ack(payload)
    assert ack.kind in acks.AckKind
    acks.sends_reply(ack, numbers[0], True)


def pull_request(data: bytes) -> None:
    """A pull request body: parsed (or refused with a 400 status) and checked."""
    from jsstore.consumer import pullrequests
    from jsstore.consumer.config import ConsumerConfig
    try:
        request = pullrequests.parse_request(data)
    except pullrequests.PullRequestError as exc:
        assert exc.status.startswith(b"NATS/1.0 400 Bad Request - ")
        return
    status = pullrequests.check_request(ConsumerConfig(max_batch=50, max_bytes=1 << 20), request)
    assert status is None or status.startswith(b"NATS/1.0 ")


def consumer_create(data: bytes) -> None:
    """A CONSUMER.CREATE body through the whole create path of a live JetStream: an answer
    is JSON with a type and either an error or the consumer's info."""
    import json
    from jsstore.jetstream import account as jetstream
    js = jetstream.open()
    js.add_stream(name="S", subjects=["s.>"])
    js.publish("s.1", b"x")
    for subject in ("$JS.API.CONSUMER.CREATE.S", "$JS.API.CONSUMER.CREATE.S.C",
                    "$JS.API.CONSUMER.DURABLE.CREATE.S.C"):
        answer = json.loads(js.request(subject, data))
        assert answer["type"] == "io.nats.jetstream.api.v1.consumer_create_response"
        assert ("error" in answer) != ("config" in answer)
    js.close()


def consumer_session(data: bytes) -> None:
    """A consumer driven by the bytes: the first two pick the ack policy and max_deliver,
    then each byte one operation (publish, pull request, an ack of some kind on a delivered
    message, clock advance and tick, message deletion); the numbers consumer info reports
    must stay consistent after each."""
    from jsstore.jetstream import account as jetstream
    from jsstore.wire.apierrors import ApiError
    now = [1_800_000_000 * 1_000_000_000]
    js = jetstream.open(clock=lambda: now[0])
    js.add_stream(name="S", subjects=["s.*"])
    js.add_consumer("S", durable_name="C", ack_policy="explicit" if data[:1] != b"a" else "all",
                    ack_wait=1_000_000_000, max_deliver=3 if data[1:2] == b"m" else -1)
    inbox = js.bus.subscribe("_fz", lambda msg: delivered.append(msg))
    delivered: list = []
    payloads = (b"+ACK", b"-NAK", b'-NAK {"delay": 500000000}', b"+WPI", b"+TERM why",
                b"+NXT 2", b"", b"-NAK 2s")
    for byte in data[2:200]:
        op = byte & 7
        if op == 0:
            js.publish(f"s.{byte >> 3 & 3}", b"m")
        elif op == 1:
            js.router().dispatch("$JS.API.CONSUMER.MSG.NEXT.S.C", b"%d" % (1 + (byte >> 3 & 3)),
                                  None, lambda hdr, body: None, "_fz")
        elif op in (2, 3, 4) and delivered:
            msg = delivered[(byte >> 3) % len(delivered)]
            if msg.reply:
                js.request(msg.reply, payloads[(byte >> 3) & 7])
        elif op == 5:
            now[0] += (byte >> 3) * 100_000_000
            js.tick()
        elif op == 6:
            try:
                js.delete_msg("S", 1 + (byte >> 3) % 8)
            except ApiError:
                pass            # not there (any more)
        info = js.consumer_info("S", "C")
        assert info.ack_floor.stream_seq <= info.delivered.stream_seq
        assert info.ack_floor.consumer_seq <= info.delivered.consumer_seq
        assert 0 <= info.num_ack_pending <= info.delivered.consumer_seq - info.ack_floor.consumer_seq
        assert info.num_pending >= 0
    inbox.unsubscribe()
    js.close()


def protocol_parse(data: bytes) -> None:
    """Client protocol bytes, fed whole and in pieces: the same operations and the same
    error either way, every operation well formed."""
    from jsstore._core import protocol
    whole = protocol.Parser()
    expected = whole.feed(data)
    split = protocol.Parser()
    got = []
    step = 1 + (data[0] % 7 if data else 0)
    for at in range(0, len(data), step):
        got += split.feed(data[at:at + step])
    assert got == expected and split.error == whole.error
    for op in expected:
        if op[0] == protocol.PUB:
            assert isinstance(op[1], str) and isinstance(op[4], bytes)


TARGETS = {
    "block_records": block_records,
    "seqset_decode": seqset_decode,
    "index_db": index_db,
    "block_file": block_file,
    "filestore_open": filestore_open,
    "odat_decode": odat_decode,
    "ack_payload": ack_payload,
    "pull_request": pull_request,
    "consumer_create": consumer_create,
    "consumer_session": consumer_session,
    "protocol_parse": protocol_parse,
}
