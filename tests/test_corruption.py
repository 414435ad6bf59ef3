"""Hand-made damage on a closed FileStore: torn tails, flipped bytes in every record field,
bad lengths, missing / stale / corrupt index.db, a missing block.  Every case ends in
recovery (with the lost data reported) or a clean jsstore.errors exception, never a crash:
the reopens that walk damaged records run in a child process."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import crashwriter  # noqa: E402
from jsstore.errors import BadMsg, MsgNotFound, StoreError   # noqa: E402

COUNT = 600          # messages in the template store: a few 64 KiB blocks
REMOVED = (7, 300)   # removed before the stop (tombstones)
TIMEOUT = 60
SEQ_MASK = (1 << 62) - 1
TOMBSTONE_BIT = 1 << 62

CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
import crashwriter
from jsstore.errors import StoreError
try:
    fs = crashwriter.open_store(sys.argv[1])
except StoreError as exc:
    print(json.dumps({"error": type(exc).__name__})); sys.exit(0)
st = fs.state()
bad = {}
for seq in range(1, st.last_seq + 1):
    try:
        problem = crashwriter.check_message(fs, seq)
    except StoreError as exc:
        problem = type(exc).__name__
    if problem is not None:
        bad[seq] = problem
print(json.dumps({"messages": st.messages, "first_seq": st.first_seq, "last_seq": st.last_seq,
                  "lost": st.lost.msgs if st.lost else None,
                  "bad": {str(k): v for k, v in bad.items()},
                  "blocks": [[mb.index, mb.first_seq, mb.last_seq] for mb in fs.blocks]}))
fs.stop()
"""


def child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(os.path.dirname(HERE), "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def reopen_in_child(directory: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, directory, HERE], capture_output=True,
                         timeout=TIMEOUT, env=child_env())
    assert out.returncode == 0, f"reopen crashed ({out.returncode}): {out.stderr.decode()[-3000:]}"
    result = json.loads(out.stdout.decode().strip().splitlines()[-1])
    result["bad"] = {int(k): v for k, v in result.get("bad", {}).items()}
    return result


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("template") / "stream")
    fs = crashwriter.open_store(directory)
    for seq in range(1, COUNT + 1):
        fs.store_msg(*crashwriter.expected_message(seq))
    for seq in REMOVED:
        fs.remove_msg(seq)
    ranges = {mb.index: (mb.first_seq, mb.last_seq) for mb in fs.blocks}
    fs.stop()
    assert len(ranges) >= 3
    return directory, ranges


@pytest.fixture
def store(template, tmp_path):
    src, ranges = template
    directory = str(tmp_path / "stream")
    shutil.copytree(src, directory)
    return directory, ranges


def block_path(directory: str, index: int) -> str:
    return os.path.join(directory, "msgs", f"{index}.blk")


def index_path(directory: str) -> str:
    return os.path.join(directory, "msgs", "index.db")


def records(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, length, seq with flag bits) of each record of an intact block."""
    out, pos = [], 0
    while pos < len(data):
        length = struct.unpack_from("<I", data, pos)[0] & 0x7FFFFFFF
        out.append((pos, length, struct.unpack_from("<Q", data, pos + 4)[0]))
        pos += length
    return out


def field_offsets(data: bytes, offset: int) -> dict[str, int]:
    """Offset of one byte inside each field of the record at `offset` (it must have headers)."""
    subj_len = struct.unpack_from("<H", data, offset + 20)[0]
    hdr_len_at = offset + 22 + subj_len
    hdr_len = struct.unpack_from("<I", data, hdr_len_at)[0]
    length = struct.unpack_from("<I", data, offset)[0] & 0x7FFFFFFF
    return {"record_len": offset + 1, "seq": offset + 4, "ts": offset + 13, "subj_len": offset + 20,
            "subject": offset + 22 + subj_len // 2, "hdr_len": hdr_len_at, "headers": hdr_len_at + 4 + 3,
            "payload": hdr_len_at + 4 + hdr_len + 2, "hash": offset + length - 3}


def patch(path: str, offset: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def flip(path: str, offset: int) -> None:
    with open(path, "rb") as f:
        f.seek(offset)
        byte = f.read(1)[0]
    patch(path, offset, bytes([byte ^ 0x5A]))


def live_expected(first: int, last: int) -> set[int]:
    return {seq for seq in range(first, last + 1) if seq not in REMOVED}


# -- torn tails ---------------------------------------------------------------------------

def test_torn_tail_every_offset(store):
    directory, ranges = store
    last_index = max(ranges)
    path = block_path(directory, last_index)
    with open(path, "rb") as f:
        data = f.read()
    recs = records(data)
    os.unlink(index_path(directory))   # index.db would no longer match the file anyway
    pristine = directory + ".pristine"
    shutil.copytree(directory, pristine)
    # every byte offset within the last three records
    start = recs[-3][0]
    for cut in range(start, len(data)):
        shutil.rmtree(directory)
        shutil.copytree(pristine, directory)
        with open(path, "r+b") as f:
            f.truncate(cut)
        whole = [r for r in recs if r[0] + r[1] <= cut]
        message_seqs = [r[2] & SEQ_MASK for r in whole if not r[2] & TOMBSTONE_BIT]
        last_whole = max(message_seqs) if message_seqs else ranges[last_index][0] - 1
        fs = crashwriter.open_store(directory)
        try:
            st = fs.state()
            assert st.last_seq == last_whole, cut
            for seq in list(range(1, 40)) + list(range(last_whole - 5, last_whole + 1)):
                if seq not in REMOVED:
                    assert crashwriter.check_message(fs, seq) is None, (cut, seq)
            # the block was cut at the last whole record, and appending goes on from there
            assert fs.lmb.raw_bytes == (whole[-1][0] + whole[-1][1] if whole else 0)
            assert fs.store_msg(*crashwriter.expected_message(last_whole + 1))[0] == last_whole + 1
        finally:
            fs.stop()
    shutil.rmtree(pristine)


def test_truncated_middle_block(store):
    directory, ranges = store
    index = sorted(ranges)[1]
    first, last = ranges[index]
    path = block_path(directory, index)
    recs = records(open(path, "rb").read())
    cut_rec = recs[len(recs) // 2]
    with open(path, "r+b") as f:
        f.truncate(cut_rec[0] + 5)
    cut_off = set(range(cut_rec[2], last + 1)) - set(REMOVED)
    # with index.db the block is not walked at open: the cut-off messages fail on load,
    # the ones before the cut still load, and the clean stop writes no index.db
    result = reopen_in_child(directory)
    assert set(result["bad"]) - set(REMOVED) == cut_off
    assert not os.path.exists(index_path(directory))
    # so the next open walks the blocks, finds the cut, and reports what is gone as lost
    result = reopen_in_child(directory)
    lost = set(result["lost"] or [])
    assert set(range(cut_rec[2], last + 1)) <= lost | set(REMOVED)
    assert set(result["bad"]) - set(REMOVED) == set(range(cut_rec[2], last + 1)) - set(REMOVED)
    assert result["last_seq"] == COUNT


# -- flipped bytes in each field ----------------------------------------------------------

def middle_record_with_headers(path: str) -> tuple[bytes, tuple[int, int, int]]:
    data = open(path, "rb").read()
    recs = records(data)
    for rec in recs[len(recs) // 3:]:
        if rec[2] % 5 == 0 and rec[2] not in REMOVED:
            return data, rec
    raise AssertionError("no record with headers")


@pytest.mark.parametrize("field", ["record_len", "seq", "ts", "subj_len", "subject", "headers",
                                   "payload", "hash"])
def test_flipped_field_rebuild(store, field):
    """Without index.db the blocks are walked: the damage is found, cut and reported."""
    directory, ranges = store
    index = sorted(ranges)[1]
    path = block_path(directory, index)
    data, (offset, _length, seq) = middle_record_with_headers(path)
    flip(path, field_offsets(data, offset)[field])
    os.unlink(index_path(directory))
    result = reopen_in_child(directory)
    assert "error" not in result
    assert result["lost"] is not None and seq in result["lost"], result["lost"]
    # everything before the damaged record and in the other blocks is intact
    damaged = set(range(seq, ranges[index][1] + 1))
    assert set(result["bad"]) - set(REMOVED) == damaged - set(REMOVED)
    assert set(result["lost"]) <= damaged
    assert result["last_seq"] == COUNT


@pytest.mark.parametrize("field", ["seq", "ts", "subject", "headers", "payload", "hash"])
def test_flipped_field_with_index(store, field):
    """With a valid index.db no block is walked at open: the damage shows at load, as BadMsg
    (checksum) or, when the seq field itself is hit, as a missing message."""
    directory, ranges = store
    index = sorted(ranges)[1]
    path = block_path(directory, index)
    data, (offset, _length, seq) = middle_record_with_headers(path)
    flip(path, field_offsets(data, offset)[field])
    result = reopen_in_child(directory)
    assert result["bad"].get(seq) in ("BadMsg", f"seq {seq}: missing")
    # a bad record can make its whole block unloadable (BadMsg), never the other blocks
    first, last = ranges[index]
    assert set(result["bad"]) - set(REMOVED) <= set(range(first, last + 1))
    assert all(v == "BadMsg" or v.endswith("missing") for v in result["bad"].values())


@pytest.mark.parametrize("value", [b"\x00\x00\x00\x00", None])
def test_header_length_outside_hash(store, value):
    """The record hash covers header and payload bytes but not hdr_len (nats-server's
    layout): moving the boundary inside the record cannot be detected.  The reopen must
    still succeed and the bytes of headers + payload are unchanged."""
    directory, ranges = store
    index = sorted(ranges)[1]
    path = block_path(directory, index)
    data, (offset, _length, seq) = middle_record_with_headers(path)
    at = field_offsets(data, offset)["hdr_len"]
    if value is None:
        flip(path, at)
    else:
        patch(path, at, value)
    os.unlink(index_path(directory))
    result = reopen_in_child(directory)
    assert set(result["bad"]) - set(REMOVED) <= {seq}
    assert result["last_seq"] == COUNT
    import jsstore
    fs = crashwriter.open_store(directory)
    try:
        _subject, hdr, payload = crashwriter.expected_message(seq)
        try:
            sm = fs.load_msg(seq)
        except jsstore.errors.StoreError:
            return
        assert (bytes(sm.hdr or b"") + bytes(sm.msg)) == hdr + payload
    finally:
        fs.stop()


@pytest.mark.parametrize("value", [0, 1, 29, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000 | 40, 33 * 1024 * 1024])
def test_bad_record_length(store, value):
    directory, ranges = store
    index = sorted(ranges)[1]
    path = block_path(directory, index)
    data, (offset, _length, seq) = middle_record_with_headers(path)
    patch(path, offset, struct.pack("<I", value))
    os.unlink(index_path(directory))
    result = reopen_in_child(directory)
    assert seq in (result["lost"] or [])
    assert min(result["bad"].keys() - set(REMOVED)) == seq
    assert result["last_seq"] == COUNT


@pytest.mark.parametrize("field,value", [("subj_len", b"\xff\xff"), ("subj_len", b"\x00\x00"),
                                         ("hdr_len", b"\xff\xff\xff\x7f")])
def test_bad_inner_length(store, field, value):
    directory, ranges = store
    index = sorted(ranges)[1]
    path = block_path(directory, index)
    data, (offset, _length, seq) = middle_record_with_headers(path)
    patch(path, field_offsets(data, offset)[field], value)
    for with_index in (True, False):
        if not with_index and os.path.exists(index_path(directory)):
            os.unlink(index_path(directory))  # (a damaged open writes none on stop)
        result = reopen_in_child(directory)
        assert seq in result["bad"]
        if not with_index:
            assert seq in (result["lost"] or [])


def test_garbage_block(store):
    directory, ranges = store
    index = sorted(ranges)[1]
    path = block_path(directory, index)
    size = os.path.getsize(path)
    with open(path, "wb") as f:
        f.write(os.urandom(size))
    os.unlink(index_path(directory))
    result = reopen_in_child(directory)
    first, last = ranges[index]
    assert set(range(first, last + 1)) - set(REMOVED) <= set(result["lost"] or [])
    assert result["last_seq"] == COUNT


# -- index.db ----------------------------------------------------------------------------

def expect_intact(result: dict, lost_ok: bool = False) -> None:
    assert "error" not in result
    assert result["bad"].keys() == set(REMOVED)
    assert result["messages"] == COUNT - len(REMOVED)
    assert result["last_seq"] == COUNT
    if not lost_ok:
        assert result["lost"] is None


def test_missing_index(store):
    directory, _ = store
    os.unlink(index_path(directory))
    expect_intact(reopen_in_child(directory))


@pytest.mark.parametrize("where", [0, 1, 5, 40, -9, -1])
def test_corrupt_index(store, where):
    directory, _ = store
    path = index_path(directory)
    flip(path, where % os.path.getsize(path))
    expect_intact(reopen_in_child(directory))


def test_truncated_index(store):
    directory, _ = store
    path = index_path(directory)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    expect_intact(reopen_in_child(directory))


def test_stale_index(store):
    directory, _ = store
    saved = open(index_path(directory), "rb").read()
    fs = crashwriter.open_store(directory)           # consumes index.db
    for seq in range(COUNT + 1, COUNT + 301):        # enough to roll into a new block
        fs.store_msg(*crashwriter.expected_message(seq))
    fs.remove_msg(COUNT + 10)
    for mb in fs.blocks:                              # crash: no stop, no new index.db
        mb.close_file()
    os.close(fs._lock_fd)                             # a dying process drops its lock
    del fs
    with open(index_path(directory), "wb") as f:     # the old state comes back
        f.write(saved)
    result = reopen_in_child(directory)
    assert result["last_seq"] == COUNT + 300
    assert result["bad"].keys() == set(REMOVED) | {COUNT + 10}
    assert result["lost"] is None


def test_stale_index_same_blocks(store):
    """New records appended to the write block only: same block list, different tail."""
    directory, _ = store
    saved = open(index_path(directory), "rb").read()
    fs = crashwriter.open_store(directory)
    fs.store_msg(*crashwriter.expected_message(COUNT + 1))
    for mb in fs.blocks:
        mb.close_file()
    os.close(fs._lock_fd)                             # a dying process drops its lock
    del fs
    with open(index_path(directory), "wb") as f:
        f.write(saved)
    result = reopen_in_child(directory)
    assert result["last_seq"] == COUNT + 1 and COUNT + 1 not in result["bad"]


# -- missing block -------------------------------------------------------------------------

@pytest.mark.parametrize("with_index", [True, False])
def test_missing_middle_block(store, with_index):
    directory, ranges = store
    index = sorted(ranges)[1]
    first, last = ranges[index]
    os.unlink(block_path(directory, index))
    if not with_index:
        os.unlink(index_path(directory))
    result = reopen_in_child(directory)
    assert "error" not in result
    gone = set(range(first, last + 1))
    assert set(result["bad"]) - set(REMOVED) == gone - set(REMOVED)
    assert result["last_seq"] == COUNT
    if with_index:
        # index.db says what the block held: those sequences are reported lost
        assert gone - set(REMOVED) <= set(result["lost"] or [])


def test_clean_exception_or_recovery_in_process(store):
    """The same damage as above, opened in this process: only jsstore.errors may escape."""
    directory, ranges = store
    index = sorted(ranges)[1]
    path = block_path(directory, index)
    data, (offset, _length, seq) = middle_record_with_headers(path)
    flip(path, field_offsets(data, offset)["payload"])
    fs = crashwriter.open_store(directory)
    try:
        with pytest.raises(BadMsg):
            fs.load_msg(seq)
        with pytest.raises(MsgNotFound):
            fs.load_msg(REMOVED[0])
    except StoreError:
        raise
    finally:
        fs.stop()


def test_damage_found_after_a_trusted_open_keeps_the_rest_readable(tmp_path):
    """index.db is trusted at open (no block is scanned); a damaged sealed block found later
    leaves its earlier messages readable, gives clean errors, and the next open rebuilds
    and reports the loss."""
    import jsstore
    from jsstore import StoreOptions, StreamConfig
    cfg = StreamConfig(name="T", subjects=["t.>"])
    opts = StoreOptions(block_size=4096, sync_interval=0)
    fs = jsstore.FileStore(tmp_path / "s", cfg, opts)
    for i in range(200):
        fs.store_msg(f"t.{i % 4}", None, b"payload-%03d" % i)
    second = fs.blocks[1]
    first2, last2 = second.first_seq, second.last_seq
    fs.stop()
    path = str(tmp_path / "s" / "msgs" / f"{second.index}.blk")
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)            # the second half of block 2 is gone
    fs = jsstore.FileStore(tmp_path / "s", cfg, opts)
    assert fs.load_msg(first2).msg == b"payload-%03d" % (first2 - 1)   # before the damage
    with pytest.raises((jsstore.errors.MsgNotFound, jsstore.errors.BadMsg)):
        fs.load_msg(last2)                                            # after it
    assert fs.load_msg(last2 + 1).seq == last2 + 1                   # other blocks are fine
    fs.stop()
    fs = jsstore.FileStore(tmp_path / "s", cfg, opts)                 # rebuilds
    st = fs.state()
    assert st.lost is not None and last2 in st.lost.msgs
    assert fs.load_msg(first2).seq == first2
    assert fs.load_msg(200).msg == b"payload-199"
    fs.stop()
