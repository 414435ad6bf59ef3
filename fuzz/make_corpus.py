"""Write the seed corpora: valid inputs of each kind, so fuzzing starts from real structure."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import jsstore  # noqa: E402
from jsstore import StoreOptions, StreamConfig  # noqa: E402
from jsstore._core.compress import ALG_S2, compress_block  # noqa: E402
from jsstore._core.seqcodec import encode as encode_seqset  # noqa: E402
from jsstore._core.seqset import SeqSet  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def save(target: str, name: str, data: bytes) -> None:
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        fs = jsstore.FileStore(d, StreamConfig(name="FUZZ", subjects=[">"]), StoreOptions(block_size=2048))
        for i in range(150):
            fs.store_msg(f"a.{i % 3}", b"NATS/1.0\r\nX: y\r\n\r\n" if i % 4 == 0 else None, b"m%d" % i)
        fs.remove_msg(3)
        fs.skip_msgs(fs.state().last_seq + 1, 3)
        fs.stop()
        msgs = os.path.join(d, "msgs")
        blocks = sorted(n for n in os.listdir(msgs) if n.endswith(".blk"))
        for n in blocks[:3] + blocks[-1:]:
            data = open(os.path.join(msgs, n), "rb").read()
            save("block_records", n, data)
            save("filestore_open", n, data)
            save("block_file", n + ".s2", compress_block(data, ALG_S2))
        save("index_db", "index.db", open(os.path.join(msgs, "index.db"), "rb").read())
    ss = SeqSet()
    for s in (1, 2, 3, 5000, 5001, 99999):
        ss.insert(s)
    save("seqset_decode", "small", encode_seqset(ss))
    save("seqset_decode", "empty", encode_seqset(SeqSet()))
    consumer_seeds()
    save("protocol_parse", "client", b'CONNECT {"verbose":false}\r\nPING\r\nSUB a.* q 1\r\n'
         b"PUB a.b _INBOX.1 5\r\nhello\r\nHPUB a r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"
         b"UNSUB 1 3\r\nPONG\r\n")


def consumer_seeds() -> None:
    from jsstore._core.ackstate import AckState
    acks = AckState("explicit")
    for dseq, sseq in ((1, 1), (2, 2), (3, 3), (4, 2), (5, 7)):
        acks.update_delivered(dseq, sseq, 2 if dseq == 4 else 1, 1_800_000_000_000_000_000 + dseq)
    acks.update_acks(1, 1)
    save("odat_decode", "pending", acks.encode(1_800_000_000_000_000_000))
    save("odat_decode", "empty", AckState("explicit").encode(0))
    save("ack_payload", "v1_ack", b"$JS.ACK.S.C.1.5.7.1800000000000000000.3\0+ACK")
    save("ack_payload", "v2_nak", b"$JS.ACK._.HASH1234.S.C.2.5.7.1800000000000000000.3.tok\0"
         b'-NAK {"delay": 1000000000}')
    save("ack_payload", "term", b"$JS.ACK.S.C.1.5.7.1.0\0+TERM  bad input ")
    save("ack_payload", "next", b"$JS.ACK.S.C.1.5.7.1.0\0+NXT {\"batch\":5}")
    save("pull_request", "json", b'{"batch":10,"expires":5000000000,"max_bytes":1024,'
         b'"idle_heartbeat":1000000000,"no_wait":false}')
    save("pull_request", "group", b'{"batch":1,"group":"g","min_pending":5,"id":"x","priority":3}')
    save("pull_request", "integer", b" 25 ")
    save("consumer_create", "durable", b'{"stream_name":"S","config":{"durable_name":"C",'
         b'"ack_policy":"explicit","filter_subject":"s.>","max_deliver":5,'
         b'"backoff":[1000000000,2000000000]}}')
    save("consumer_create", "pull_limits", b'{"stream_name":"S","action":"create","config":{'
         b'"name":"C","max_waiting":10,"max_batch":5,"max_expires":1000000000,'
         b'"opt_start_time":"2026-01-01T00:00:00Z","deliver_policy":"by_start_time"}}')
    save("consumer_session", "explicit", bytes([ord("e"), ord("m")]) + bytes(
        [0, 8, 16, 1, 9, 2, 10, 3, 5, 77, 1, 4, 12, 6, 14, 1, 2, 3, 4, 13, 5, 255, 1, 2]))
    save("consumer_session", "ack_all", b"a-" + bytes([0, 0, 0, 1, 25, 2, 3, 5, 200, 1, 4]))


if __name__ == "__main__":
    main()
