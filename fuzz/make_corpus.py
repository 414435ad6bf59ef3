"""Write the seed corpora: valid inputs of each kind, so fuzzing starts from real structure."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jsstore  # noqa: E402
from jsstore import StoreOptions, StreamConfig  # noqa: E402
from jsstore._core.storage.compress import ALG_S2, compress_block  # noqa: E402
from jsstore._core.storage.seqcodec import encode as encode_seqset  # noqa: E402
from jsstore._core.storage.seqset import SeqSet  # noqa: E402

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
    save("protocol_parse", "pub_runs", b"PUB s.1 5\r\nhello\r\n" * 3 + b"HPUB s.2 _INBOX.x 22 24\r\n"
         b"NATS/1.0\r\nA: bcdefgh\r\n\r\nok\r\npub s.3 0\r\n\r\nping\r\n")
    save("protocol_parse", "bad_size", b"PUB a 2\r\nhello\r\nPING\r\n")
    header_seeds()
    config_seeds()
    api_seeds()


def header_seeds() -> None:
    from jsstore.wire import headers
    save("header_block", "fields", headers.build([("Nats-Msg-Id", "1"), ("A", "x y "), ("A", "2")]))
    save("header_block", "status", headers.build({}, status="408", description="Request Timeout"))
    save("header_block", "direct_get", b"NATS/1.0\r\nNats-Stream: S\r\nNats-Sequence: 5\r\n"
         b"Nats-Time-Stamp: 2026-01-01T00:00:00Z\r\nNats-Subject: s.1\r\n\r\n")
    save("header_block", "no_final_crlf", b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 3")


def config_seeds() -> None:
    save("server_config", "server", b"""# a server
port: 4222
host = 127.0.0.1
server_name: "js-1"
max_payload: 1MB
http_port 8222
lame_duck_duration: "30s"
jetstream {
  store_dir: "/tmp/js"
  max_memory_store: 512MB
  max_file_store: 10G
  domain: hub
}
""")
    save("server_config", "accounts", b"""NOBODY = "x"
accounts {
  A: { users: [ {user: a, password: $NOBODY, permissions: {publish: ["a.>"], subscribe: {allow: "a.*", deny: ["b"]}}} ]
       jetstream: { max_mem: 1M, max_file: 2G, max_streams: 10, max_consumers: -1 } }
  B: { users = [ {user: b, password: "p"} ], jetstream: enabled }
}
no_auth_user: a
authorization { users [ {user: u, password: p} ] }
include "other.conf"
""")
    save("server_config", "token", b'authorization: { token: "s3cret" }\njetstream: enabled\n'
         b"listen: 0.0.0.0:4333 // comment\n")


def api_seeds() -> None:
    """A request: the index of its subject's start in the target's table, the rest of the
    subject, NUL, a header block, NUL, the body."""
    import targets_live
    table = targets_live._API_SUBJECTS

    def request(name: str, start: str, rest: bytes, body: bytes, hdr: bytes = b"") -> None:
        save("api_request", name, bytes([table.index(start)]) + rest + b"\0" + hdr + b"\0" + body)
    request("stream_create", "$JS.API.STREAM.CREATE.", b"T", b'{"name":"T","subjects":["t.>"],'
            b'"max_msgs":10,"storage":"memory","discard":"new","max_age":1000000000}')
    request("stream_update", "$JS.API.STREAM.UPDATE.", b"S", b'{"name":"S","subjects":["s.>","x"],'
            b'"allow_direct":true,"max_msgs_per_subject":3}')
    request("stream_info", "$JS.API.STREAM.INFO.", b"S", b'{"subjects_filter":">","deleted_details":true}')
    request("stream_purge", "$JS.API.STREAM.PURGE.", b"S", b'{"filter":"s.1","keep":1}')
    request("msg_get", "$JS.API.STREAM.MSG.GET.", b"S", b'{"last_by_subj":"s.2"}')
    request("direct_get", "$JS.API.DIRECT.GET.", b"S", b'{"seq":2}')
    request("direct_get_last", "$JS.API.DIRECT.GET.", b"S.s.1", b"")
    request("consumer_create", "$JS.API.CONSUMER.CREATE.", b"S.D", b'{"stream_name":"S","config":'
            b'{"name":"D","ack_policy":"all","filter_subjects":["s.1","s.2"],"max_ack_pending":5}}')
    request("consumer_info", "$JS.API.CONSUMER.INFO.", b"S.C", b"")
    request("pull", "$JS.API.CONSUMER.MSG.NEXT.", b"S.C", b'{"batch":2,"no_wait":true}')
    request("pause", "$JS.API.CONSUMER.PAUSE.", b"S.C", b'{"pause_until":"2030-01-01T00:00:00Z"}')
    request("publish", "s.", b"9", b"payload", b"NATS/1.0\r\nNats-Msg-Id: m1\r\n"
            b"Nats-Expected-Last-Sequence: 2\r\n\r\n")
    request("ack", "$JS.ACK.S.C.", b"1.1.1.1800000000000000000.0", b"+ACK")
    request("names", "$JS.API.STREAM.NAMES", b"", b'{"subject":"s.1"}')


def consumer_seeds() -> None:
    from jsstore._core.storage.ackstate import AckState
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
