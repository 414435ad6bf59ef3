"""index.db versions 1-3 (older nats-server releases) are read; version 4 is written.

The older layouts are produced here by a separate encoder written from the format notes:
v1 has no per-block ttls/schedules counts and writes a subject's last block only when the
subject has more than one message; v2 adds the ttls count; v3 adds the schedules count.
"""

import os

import pytest

import jsstore
from jsstore import StoreOptions, StreamConfig
from jsstore.store import indexdb as statefile
from jsstore._core.storage.hashing import highway64_digest, meta_hash_key
from jsstore._core.storage.seqcodec import encode as encode_seqset
from jsstore.errors import CorruptFile


def _uv(out, v):
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _sv(out, v):
    _uv(out, (v << 1) if v >= 0 else ((-v << 1) - 1))


def encode_old(name: str, st: dict, version: int) -> bytes:
    out = bytearray([statefile.MAGIC, version])
    base = st["first_ts"]
    for v in (st["msgs"], st["bytes"], st["first_seq"]):
        _uv(out, v)
    _sv(out, base)
    _uv(out, st["last_seq"])
    _sv(out, st["last_ts"])
    _uv(out, len(st["subjects"]))
    for subj, total, fblk, lblk in st["subjects"]:
        _uv(out, len(subj))
        out += subj
        _uv(out, total)
        _uv(out, fblk)
        if total > 1:
            _uv(out, lblk)
    _uv(out, len(st["blocks"]))
    for b in st["blocks"]:
        _uv(out, b["index"])
        _uv(out, b["bytes"])
        _uv(out, b["first_seq"])
        _sv(out, b["first_ts"] - base)
        _uv(out, b["last_seq"])
        _sv(out, b["last_ts"] - base)
        deleted = b["deleted"]
        _uv(out, len(deleted) if deleted else 0)
        if version >= 2:
            _uv(out, 0)
        if version >= 3:
            _uv(out, 0)
        if deleted:
            out += encode_seqset(deleted)
    _uv(out, st["last_index"])
    out += st["lchk"]
    out += highway64_digest(meta_hash_key(name), bytes(out))
    return bytes(out)


@pytest.fixture
def stopped_store(tmp_path):
    cfg = StreamConfig(name="OLD", subjects=["o.>"])
    fs = jsstore.FileStore(tmp_path / "s", cfg, StoreOptions(block_size=2048, sync_interval=0))
    for i in range(300):
        fs.store_msg(f"o.{i % 7}", None, b"m%d" % i)
    fs.store_msg("o.single", None, b"one")
    for seq in (3, 50, 51, 52, 200):
        fs.remove_msg(seq)
    expected = fs.state()
    fs.stop()
    return tmp_path / "s", cfg, expected


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_older_index_versions_are_read(stopped_store, version, monkeypatch):
    directory, cfg, expected = stopped_store
    path = directory / "msgs" / "index.db"
    st = statefile.decode_index("OLD", path.read_bytes())
    if version < 4:
        path.write_bytes(encode_old("OLD", st, version))
    rebuilt = []
    monkeypatch.setattr(jsstore.FileStore, "_rebuild", lambda self, *a, **k: rebuilt.append(1))
    fs = jsstore.FileStore(directory, cfg, StoreOptions(block_size=2048, sync_interval=0))
    assert not rebuilt, "the state file was not accepted"
    got = fs.state()
    assert (got.messages, got.bytes, got.first_seq, got.last_seq, got.deleted, got.num_subjects) == \
        (expected.messages, expected.bytes, expected.first_seq, expected.last_seq, expected.deleted,
         expected.num_subjects)
    assert fs.load_last_msg("o.single").msg == b"one"
    assert fs.subjects_totals(">") == {f"o.{k}": len([i for i in range(300) if i % 7 == k
                                                       and i + 1 not in (3, 50, 51, 52, 200)])
                                       for k in range(7)} | {"o.single": 1}
    fs.stop()
    assert path.read_bytes()[1] == statefile.VERSION  # written back as version 4


def test_unknown_version_and_bad_checksum_are_rejected(stopped_store):
    directory, _cfg, _ = stopped_store
    buf = (directory / "msgs" / "index.db").read_bytes()
    for bad in (bytes([statefile.MAGIC, 5]) + buf[2:], buf[:-1] + bytes([buf[-1] ^ 1]), buf[:20]):
        with pytest.raises(CorruptFile):
            statefile.decode_index("OLD", bad)
