"""Fuzz targets: each takes arbitrary bytes and must either succeed or raise a jsstore
error (or ValueError for malformed arguments) -- never crash, hang or raise anything else.
Everything they reach is imported here, at the top, so that atheris instruments it; the
targets over a live store or JetStream are in targets_live.py, imported here too.

The atheris harness (fuzz/run.py) drives them with coverage feedback; the test suite
replays the seed corpora in fuzz/corpus/<target>/ through the same functions.
"""

from __future__ import annotations

import io
import os

from targets_live import (
    EXPECTED,
    api_request,
    consumer_create,
    consumer_session,
    filestore_open,
)

from jsstore._core.storage import seqcodec
from jsstore._core.storage.ackstate import AckState, decode
from jsstore._core.storage.block import MsgBlock
from jsstore._core.storage.compress import decompress_block, s2_decode_stream
from jsstore._core.storage.hashing import block_hash_key
from jsstore._core.storage.subjects import SubjectIndex
from jsstore._core.wire import protocol
from jsstore.consumer import pullrequests
from jsstore.consumer.config import ConsumerConfig
from jsstore.server import config
from jsstore.server.options import server_options
from jsstore.store.indexdb import decode_index
from jsstore.wire import ackreply as acks
from jsstore.wire import headers


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


def odat_decode(data: bytes) -> None:
    """A consumer's o.dat: decoded, then encoded and decoded again; o.dat keeps pending
    times in whole seconds, so after one round trip the state is a fixed point."""
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
    try:
        request = pullrequests.parse_request(data)
    except pullrequests.PullRequestError as exc:
        assert exc.status.startswith(b"NATS/1.0 400 Bad Request - ")
        return
    status = pullrequests.check_request(ConsumerConfig(max_batch=50, max_bytes=1 << 20), request)
    assert status is None or status.startswith(b"NATS/1.0 ")


def _parse_pieces(pieces) -> tuple[list, object]:
    parser = protocol.Parser()
    ops = []
    for piece in pieces:
        ops += parser.feed(piece)
    return ops, parser.error


def protocol_parse(data: bytes) -> None:
    """Client protocol bytes, fed whole and split: at one point the bytes choose, in
    pieces of a length they choose, and one byte at a time: the same operations and the
    same error every way, every operation well formed."""
    expected = _parse_pieces([data])
    cut = int.from_bytes(data[-2:], "little") % (len(data) + 1) if data else 0
    step = 1 + (data[0] % 7 if data else 0)
    for pieces in ([data[:cut], data[cut:]],
                   [data[at:at + step] for at in range(0, len(data), step)],
                   [data[at:at + 1] for at in range(len(data))] if len(data) <= 512 else []):
        if pieces:
            assert _parse_pieces(pieces) == expected, pieces
    for op in expected[0]:
        if op[0] == protocol.PUB:
            assert isinstance(op[1], str) and isinstance(op[4], bytes)


def protocol_splits(data: bytes) -> None:
    """protocol_parse, and the bytes split in two at every point (the replay test's check
    for the saved inputs; quadratic, so not what the fuzzer runs)."""
    protocol_parse(data)
    expected = _parse_pieces([data])
    for cut in range(len(data) + 1):
        assert _parse_pieces([data[:cut], data[cut:]]) == expected, cut


def header_block(data: bytes) -> None:
    """A header block: parsed (or refused with HeaderError), written back and parsed again
    to the same block; the quick lookup finds what the parse found first for every key."""
    try:
        block = headers.parse(data)
    except headers.HeaderError:
        return
    except ValueError as exc:       # only HeaderError is documented
        raise AssertionError(f"{type(exc).__name__}: {exc}") from exc
    again = headers.parse(block.encode())
    assert again == block, (again, block)
    for key in block.keys():
        value = headers.get(data, key)
        assert value is not None and value.decode("utf-8", "surrogateescape") == block.get(key), key
    decoded = headers.decode_headers(data)
    if data:
        assert decoded == {key: block.get(key) for key in block.keys()}


_CONFIG_FILES = {
    "other.conf": "port: 4333\nauthorization { token: t }\n",
    "self.conf": 'include "self.conf"\n',
}


def _config_open(path, *args, **kwargs):
    """The configuration parser's file system: includes come from _CONFIG_FILES."""
    text = _CONFIG_FILES.get(os.path.basename(path))
    if text is None:
        raise FileNotFoundError(2, "No such file or directory", path)
    return io.StringIO(text)


def server_config(data: bytes) -> None:
    """A configuration file (bytes as UTF-8, undecodable bytes replaced): parsed and read
    as server options, or refused with ConfigError (OSError for an include it cannot
    open, as `jsstore serve -c` reports it)."""
    text = data.decode("utf-8", "replace")
    config.open = _config_open      # taken back below: the module's own tests read files
    try:
        parsed = config.parse(text, os.path.join("fuzzconf", "main.conf"))
        assert isinstance(parsed, dict)
        options = server_options(parsed)
        assert isinstance(options, dict)
    except (config.ConfigError, OSError):
        pass
    except ValueError as exc:       # only ConfigError is documented
        raise AssertionError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        del config.open


# The Cython core is not instrumented for coverage (atheris sees Python only), so raw
# bytes into a core decoder give the fuzzer little to go on: it shrinks its corpus to a
# few bytes that fail the first check. file_edits keeps the structure instead: it edits
# a real file (a seed of the targets below) and runs that target on the result.
_EDITED = ("block_records", "block_file", "index_db", "odat_decode", "seqset_decode")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _seeds() -> list[tuple[str, bytes]]:
    seeds = []
    for target in _EDITED:
        folder = os.path.join(_HERE, "corpus", target)
        for name in sorted(os.listdir(folder)):
            if not name.startswith("crash"):
                with open(os.path.join(folder, name), "rb") as f:
                    seeds.append((target, f.read()))
    return seeds


_SEEDS = _seeds()


def file_edits(data: bytes) -> None:
    """The first byte picks a seed file (and so the target), then every four bytes are one
    edit: a position (two bytes, modulo the length), an operation and a byte: xor, set,
    insert, delete, or cut the file there."""
    if not data:
        return
    target, seed = _SEEDS[data[0] % len(_SEEDS)]
    edited = bytearray(seed)
    for at in range(1, len(data) - 3, 4):
        if not edited:
            break
        pos = int.from_bytes(data[at:at + 2], "little") % len(edited)
        op, value = data[at + 2] % 5, data[at + 3]
        if op == 0:
            edited[pos] ^= value or 1
        elif op == 1:
            edited[pos] = value
        elif op == 2:
            edited[pos:pos] = bytes([value]) * (1 + value % 8)
        elif op == 3:
            del edited[pos:pos + 1 + value % 16]
        else:
            del edited[pos:]
    TARGETS[target](bytes(edited))


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
    "header_block": header_block,
    "server_config": server_config,
    "api_request": api_request,
    "file_edits": file_edits,
}

# what the replay test runs over a target's saved inputs, where it checks more than the
# fuzzer can afford per execution
REPLAY = dict(TARGETS, protocol_parse=protocol_splits)
