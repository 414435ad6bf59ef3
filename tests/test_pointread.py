"""Point reads of unloaded blocks (jsstore._core.storage.pointread) answer exactly as a loaded
block: a file store with a one-byte cache budget (every sealed block evicted after use, so
reads go through the marks) against the same store with every block cached, across stores,
removals, erasures, purges, compaction, drops of the caches and reopens, plain and
s2-compressed."""
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import jsstore
from jsstore import StoreOptions, StreamConfig
from jsstore.errors import MsgNotFound, StoreEOF

SUBJECTS = [f"t.{i}" for i in range(6)] + ["t.long." + "x" * 300]
PAYLOADS = st.binary(min_size=0, max_size=200) | st.sampled_from([b"", b"p" * 5000])


def answer(fn, *args):
    try:
        m = fn(*args)
    except (MsgNotFound, StoreEOF) as exc:
        return type(exc).__name__
    if isinstance(m, tuple):
        return m
    return (m.seq, m.subject, m.hdr, bytes(m.msg), m.ts)


def open_pair(base, compression, reopen=False):
    cfg = StreamConfig(name="P", subjects=["t.>"], compression=compression)
    tiny = jsstore.FileStore(base / "tiny", cfg, StoreOptions(block_size=4096, sync_interval=0,
                                                              cache_budget=1))
    full = jsstore.FileStore(base / "full", cfg, StoreOptions(block_size=4096, sync_interval=0))
    return tiny, full


class PointReadMachine(RuleBasedStateMachine):
    base = None
    compression = "none"

    def __init__(self):
        super().__init__()
        self.n = getattr(PointReadMachine, "_n", 0) + 1
        PointReadMachine._n = self.n
        self.dir = self.base / f"run{self.n}"
        self.tiny, self.full = open_pair(self.dir, self.compression)

    def both(self, name, *args):
        a = answer(getattr(self.tiny, name), *args)
        b = answer(getattr(self.full, name), *args)
        assert a == b, (name, args)
        return a

    @rule(subject=st.sampled_from(SUBJECTS), payload=PAYLOADS, hdr=st.booleans(),
          times=st.integers(1, 40))
    def store(self, subject, payload, hdr, times):
        h = b"NATS/1.0\r\nK: v\r\n\r\n" if hdr else None
        for i in range(times):
            seq, ts = self.tiny.store_msg(subject, h, payload + bytes([i % 256]))
            self.full.store_raw_msg(subject, h, payload + bytes([i % 256]), seq, ts)

    def pick(self, frac):
        st_ = self.full.state()
        return st_.first_seq + int(frac * max(0, st_.last_seq - st_.first_seq))

    @rule(frac=st.floats(0, 1))
    def remove(self, frac):
        seq = self.pick(frac)
        assert self.tiny.remove_msg(seq) == self.full.remove_msg(seq)

    @rule(frac=st.floats(0, 1))
    def erase(self, frac):
        seq = self.pick(frac)
        assert self.tiny.erase_msg(seq) == self.full.erase_msg(seq)

    @rule(subject=st.sampled_from(SUBJECTS), keep=st.integers(0, 3))
    def purge_subject(self, subject, keep):
        assert self.tiny.purge_ex(subject, 0, keep) == self.full.purge_ex(subject, 0, keep)

    @rule(frac=st.floats(0, 0.5))
    def compact(self, frac):
        seq = self.pick(frac)
        assert self.tiny.compact(seq) == self.full.compact(seq)

    @rule()
    def drop_caches(self):
        self.tiny.drop_caches()

    @rule()
    def reopen(self):
        self.tiny.stop()
        self.full.stop()
        self.tiny, self.full = open_pair(self.dir, self.compression)

    @invariant()
    def same_answers(self):
        state = self.full.state()
        assert self.tiny.state() == state
        for subject in SUBJECTS:
            self.both("load_last_msg", subject)
            self.both("num_pending", 1, subject)
            self.both("num_pending", state.first_seq + 3, subject, True)
        step = max(1, (state.last_seq - state.first_seq) // 25)
        for seq in range(max(1, state.first_seq - 1), state.last_seq + 2, step):
            self.both("load_msg", seq)
            self.both("load_last_msg", "t.*")

    def teardown(self):
        self.tiny.stop()
        self.full.stop()


@pytest.mark.parametrize("compression", ["none", "s2"])
def test_point_reads_match_a_cached_block(tmp_path, compression):
    PointReadMachine.base = tmp_path
    PointReadMachine.compression = compression
    PointReadMachine.TestCase.settings = settings(
        max_examples=60, stateful_step_count=25, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    PointReadMachine.TestCase().runTest()


def test_a_point_read_leaves_the_block_unloaded(tmp_path):
    """load_msg and load_last_msg of a sealed, evicted block read one record: the block's
    cache stays unloaded; the answers are the stored messages."""
    cfg = StreamConfig(name="P", subjects=["t.>"])
    fs = jsstore.FileStore(tmp_path / "s", cfg, StoreOptions(block_size=4096, sync_interval=0))
    for i in range(2000):
        fs.store_msg(f"t.{i}", None, b"m%d" % i)
    fs.drop_caches()
    fs.load_msg(1)            # loads block 1 once; dropping it again leaves its marks
    fs.drop_caches()
    first = fs.blocks[0]
    for seq in range(first.first_seq, first.last_seq + 1):
        m = fs.load_msg(seq)
        assert (m.seq, m.subject, bytes(m.msg)) == (seq, f"t.{seq - 1}", b"m%d" % (seq - 1))
        last = fs.load_last_msg(f"t.{seq - 1}")
        assert last.seq == seq
    assert not first.is_loaded
    fs.remove_msg(first.first_seq + 1)
    fs.drop_caches()
    with pytest.raises(MsgNotFound):
        fs.load_msg(first.first_seq + 1)
    with pytest.raises(MsgNotFound):
        fs.load_last_msg(f"t.{first.first_seq}")
    fs.stop()


def test_a_stale_last_hint_is_not_taken_for_the_answer(tmp_path):
    """After the last message of a subject is removed, the subject's last-sequence hint
    points at the sequence below it, another subject's message: the point read of an
    unloaded block must not answer with it."""
    cfg = StreamConfig(name="P", subjects=["t.>"])
    fs = jsstore.FileStore(tmp_path / "s", cfg, StoreOptions(block_size=4096, sync_interval=0,
                                                             cache_budget=1))
    for i in range(600):
        fs.store_msg("t.a" if i % 2 else "t.b", None, b"m%d" % i)
    first = fs.blocks[0]
    top_a = max(s for s in range(first.first_seq, first.last_seq + 1) if s % 2 == 0)
    fs.load_msg(1)
    fs.drop_caches()                       # block 1 keeps its marks
    for i in range(600, 1200):             # t.c only from here: t.a's last stays in block 1
        fs.store_msg("t.c", None, b"m%d" % i)
    for seq in range(top_a + 2, fs.state().last_seq + 1, 2):
        if fs.load_msg(seq).subject == "t.a":
            fs.remove_msg(seq)
    fs.remove_msg(top_a)
    fs.drop_caches()
    m = fs.load_last_msg("t.a")
    assert (m.seq, m.subject) == (top_a - 2, "t.a")
    assert fs.num_pending(top_a - 1, "t.a", True)[0] == 0
    fs.stop()
