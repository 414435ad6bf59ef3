"""Group commit, the background sync and snapshots."""

import os
import threading

import pytest

import jsstore
from jsstore import StoreOptions, StreamConfig
from jsstore.store.snapshot import restore_snapshot


def _cfg(**kw):
    return StreamConfig(name="D", subjects=["d.>"], **kw)


def test_sync_always_group_commit_shares_fsyncs(tmp_path, monkeypatch):
    fs = jsstore.FileStore(tmp_path / "s", _cfg(), StoreOptions(sync="always", sync_interval=0))
    slow_fsync = os.fsync
    gate = threading.Event()

    def fsync(fd):
        gate.wait(0.002)  # a slow disk: writers pile up behind the running fsync
        slow_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    writers, per_writer = 8, 50

    def work(n):
        for i in range(per_writer):
            fs.store_msg(f"d.{n}", None, b"x" * 32)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = writers * per_writer
    assert fs.state().messages == total
    assert 0 < fs.fsyncs < total  # fewer fsyncs than writes: they were shared
    fs.stop()
    fs = jsstore.FileStore(tmp_path / "s", _cfg())
    assert fs.state().messages == total
    fs.stop()


def test_sync_always_single_writer_is_durable(tmp_path):
    fs = jsstore.FileStore(tmp_path / "s", _cfg(), StoreOptions(sync="always", sync_interval=0))
    for i in range(5):
        fs.store_msg("d.a", None, b"%d" % i)
    assert fs.fsyncs == 5
    fs.store_batch([("d.b", None, b"x")] * 10)
    assert fs.fsyncs == 6  # one fsync for the whole batch
    fs.stop()


def test_interval_sync_thread_stops(tmp_path):
    fs = jsstore.FileStore(tmp_path / "s", _cfg(), StoreOptions(sync_interval=0.01))
    fs.store_msg("d.a", None, b"x")
    fs.stop()
    assert not fs._syncer.is_alive()


@pytest.mark.parametrize("compression", ["none", "s2"])
def test_snapshot_restore_round_trip(tmp_path, compression):
    cfg = _cfg(compression=compression)
    fs = jsstore.FileStore(tmp_path / "a", cfg, StoreOptions(block_size=4096))
    for i in range(300):
        fs.store_msg(f"d.{i % 7}", b"NATS/1.0\r\nK: v\r\n\r\n" if i % 3 == 0 else None, b"p%d" % i)
    for seq in (5, 77, 150):
        fs.remove_msg(seq)
    cs = fs.consumer_store("C1", 0, {"durable_name": "C1", "ack_policy": "explicit"})
    cs.update_delivered(1, 1, 1, 1_000_000_000)
    before = fs.state()
    chunks = list(fs.snapshot())
    assert chunks and all(isinstance(c, bytes) for c in chunks)
    fs.stop()
    restore_snapshot(chunks, str(tmp_path / "b"))
    assert os.path.exists(tmp_path / "b" / "obs" / "C1" / "o.dat")
    fs2 = jsstore.FileStore(tmp_path / "b", cfg)
    after = fs2.state()
    assert (after.messages, after.first_seq, after.last_seq, after.deleted) == \
        (before.messages, before.first_seq, before.last_seq, before.deleted)
    for seq in range(1, 301):
        if seq in (5, 77, 150):
            with pytest.raises(jsstore.errors.MsgNotFound):
                fs2.load_msg(seq)
        else:
            assert fs2.load_msg(seq).msg == b"p%d" % (seq - 1)
    fs2.stop()


def test_restore_rejects_escaping_paths(tmp_path):
    import io
    import tarfile
    from jsstore._core.storage.compress import s2_encode_stream
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("../evil")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(ValueError):
        restore_snapshot([s2_encode_stream(buf.getvalue())], str(tmp_path / "r"))
    assert not (tmp_path / "evil").exists()


def test_mapped_write_block_crash_leaves_no_lost_data(tmp_path):
    """A killed process leaves the write block's reserved zero tail; recovery cuts it off
    without reporting lost data and appends go on from the last record."""
    import subprocess
    import sys
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    code = (
        "import os, jsstore\n"
        "from jsstore import StreamConfig, StoreOptions\n"
        f"fs = jsstore.FileStore({str(tmp_path / 's')!r}, StreamConfig(name='D', subjects=['d.>']),"
        " StoreOptions(sync_interval=0))\n"
        "assert fs.lmb.is_mapped\n"
        "for i in range(100): fs.store_msg('d.x', None, b'%d' % i)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=src))
    assert proc.returncode == -9
    blk = tmp_path / "s" / "msgs" / "1.blk"
    assert blk.stat().st_size > 100 * 60  # the reserved space is still there
    fs = jsstore.FileStore(tmp_path / "s", _cfg())
    st = fs.state()
    assert (st.messages, st.last_seq, st.lost) == (100, 100, None)
    assert fs.lost_bytes == 0
    assert fs.load_msg(100).msg == b"99"
    assert fs.store_msg("d.x", None, b"next")[0] == 101
    fs.stop()
    assert blk.stat().st_size == fs.lmb.raw_bytes  # cut back to its records on a clean stop
