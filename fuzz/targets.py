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
    from jsstore.statefile import decode_index
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


TARGETS = {
    "block_records": block_records,
    "seqset_decode": seqset_decode,
    "index_db": index_db,
    "block_file": block_file,
    "filestore_open": filestore_open,
}
