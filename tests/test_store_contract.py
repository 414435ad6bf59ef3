"""The stream store contract, run against every store permutation (see conftest.py).

Each test fills a store, calls `store_factory.reopen()` (a real stop + open in the
"-reopen" permutations) and checks the result, so the same body covers the in-memory
state, the index.db path and the compressed / tiny-block layouts.
"""

from __future__ import annotations

import os

import pytest

from jsstore import errors
from jsstore.store.contract import SimpleState

HDR = b"NATS/1.0\r\nX-Key: v\r\n\r\n"


def fill(store, subjects, payload=b"hello"):
    """Store one message per subject in order; returns the sequences."""
    return [store.store_msg(s, None, payload)[0] for s in subjects]


# -- store / load ----------------------------------------------------------------------

def test_store_and_load(store_factory):
    store = store_factory.create()
    seq, ts = store.store_msg("foo", None, b"one")
    assert seq == 1 and ts > 0
    seq2, ts2 = store.store_msg("bar", HDR, b"two")
    assert seq2 == 2 and ts2 > ts
    store = store_factory.reopen()
    sm = store.load_msg(1)
    assert (sm.subject, sm.hdr, sm.msg, sm.seq, sm.ts) == ("foo", None, b"one", 1, ts)
    sm = store.load_msg(2)
    assert (sm.subject, sm.hdr, sm.msg, sm.seq, sm.ts) == ("bar", HDR, b"two", 2, ts2)
    assert store.load_msg(0).seq == 1          # 0 = the first message
    assert store.subject_for_seq(2) == "bar"
    with pytest.raises(errors.StoreEOF):
        store.load_msg(3)
    store.remove_msg(1)
    with pytest.raises(errors.MsgNotFound):
        store.load_msg(1)
    assert store.load_msg(0).seq == 2


def test_empty_payload_and_many_blocks(store_factory):
    store = store_factory.create()
    store.store_msg("e", None, b"")
    big = bytes(range(256)) * 8
    for i in range(40):
        store.store_msg(f"s.{i % 3}", HDR if i % 2 else None, big + bytes([i]))
    store = store_factory.reopen()
    assert store.load_msg(1).msg == b""
    for i in range(40):
        sm = store.load_msg(i + 2)
        assert sm.msg == big + bytes([i])
        assert sm.hdr == (HDR if i % 2 else None)
        assert sm.subject == f"s.{i % 3}"
    st = store.state()
    assert (st.messages, st.first_seq, st.last_seq, st.num_subjects) == (41, 1, 41, 4)


def test_byte_accounting(store_factory):
    store = store_factory.create()
    store.store_msg("ab", None, b"12345")
    store.store_msg("ab", HDR, b"12345")
    store = store_factory.reopen()
    if store_factory.is_file:
        expect = (22 + 2 + 5 + 8) + (22 + 2 + 5 + 8 + 4 + len(HDR))
    else:
        expect = (2 + 5 + 16) + (2 + len(HDR) + 5 + 16)
    assert store.state().bytes == expect
    assert store.fast_state().bytes == expect


# -- filtered loads --------------------------------------------------------------------

SUBJECTS = ["a", "b.c", "b.d", "e.f.g", "b.c", "a", "e.f.h", "b.d"]


def test_load_next_prev_last(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS)
    store = store_factory.reopen()
    sm, seq = store.load_next_msg("b.c", 1)
    assert (sm.subject, seq) == ("b.c", 2)
    assert store.load_next_msg("b.c", 3)[1] == 5
    with pytest.raises(errors.StoreEOF):
        store.load_next_msg("b.c", 6)
    assert store.load_next_msg("b.*", 3)[1] == 3
    assert store.load_next_msg("e.>", 1)[1] == 4
    assert store.load_next_msg(">", 4)[1] == 4
    assert store.load_next_msg("", 8)[1] == 8
    assert store.load_next_msg(["a", "e.f.*"], 2)[1] == 4
    assert store.load_next_msg(["a", "e.f.*"], 5)[1] == 6
    with pytest.raises(errors.StoreEOF):
        store.load_next_msg("nope", 1)
    with pytest.raises(errors.StoreEOF):
        store.load_next_msg(">", 9)
    assert store.load_prev_msg("a", 8).seq == 6
    assert store.load_prev_msg("a", 5).seq == 1
    assert store.load_prev_msg("b.*", 4).seq == 3
    assert store.load_prev_msg(["e.f.g", "b.d"], 8).seq == 8
    assert store.load_prev_msg(["e.f.g", "b.c"], 4).seq == 4
    with pytest.raises(errors.StoreEOF):
        store.load_prev_msg("e.f.h", 6)
    assert store.load_last_msg("b.c").seq == 5
    assert store.load_last_msg("e.*.*").seq == 7
    assert store.load_last_msg(">").seq == 8
    assert store.load_last_msg("").seq == 8
    with pytest.raises(errors.MsgNotFound):
        store.load_last_msg("zzz")
    store.remove_msg(5)
    assert store.load_last_msg("b.c").seq == 2
    with pytest.raises(errors.StoreEOF):
        store.load_next_msg("b.c", 3)


# -- removals --------------------------------------------------------------------------

def test_remove_and_state(store_factory):
    store = store_factory.create()
    fill(store, ["x"] * 10)
    assert store.remove_msg(3) is True
    assert store.remove_msg(3) is False
    assert store.remove_msg(99) is False
    assert store.remove_msg(7) is True
    assert store.remove_msg(1) is True
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq, st.last_seq) == (7, 2, 10)
    assert st.deleted == [3, 7] and st.num_deleted == 2
    fst = store.fast_state()
    assert fst.num_deleted == 2 and fst.messages == 7
    # removing the last message keeps last_seq
    assert store.remove_msg(10)
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.last_seq) == (6, 10)
    assert st.deleted == [3, 7, 10]        # last_seq stays, so 10 counts as deleted
    assert st.num_deleted == 3
    assert store.store_msg("x", None, b"n")[0] == 11


def test_remove_everything_keeps_numbering(store_factory):
    store = store_factory.create()
    fill(store, ["x"] * 5)
    for seq in range(1, 6):
        assert store.remove_msg(seq)
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.bytes, st.first_seq, st.last_seq, st.num_deleted) == (0, 0, 6, 5, 0)
    assert store.store_msg("x", None, b"n")[0] == 6


def test_erase_scrubs_payload(store_factory):
    store = store_factory.create(compression="none")
    secret = b"TOP-SECRET-PAYLOAD-0123456789"
    fill(store, ["x"], b"before")
    store.store_msg("x", None, secret)
    fill(store, ["x"], b"after")
    assert store.erase_msg(2) is True
    assert store.erase_msg(2) is False
    with pytest.raises(errors.MsgNotFound):
        store.load_msg(2)
    store.flush_all_pending()
    if store_factory.is_file:
        msgs_dir = os.path.join(store_factory.path, "msgs")
        for name in os.listdir(msgs_dir):
            if name.endswith(".blk"):
                with open(os.path.join(msgs_dir, name), "rb") as f:
                    assert secret not in f.read()
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.deleted) == (2, [2])
    assert store.load_msg(3).msg == b"after"


def test_skip_msgs(store_factory):
    store = store_factory.create()
    fill(store, ["x"])
    assert store.skip_msg() == 2
    assert store.skip_msg(3) == 3
    store.skip_msgs(4, 10)
    with pytest.raises(errors.SequenceMismatch):
        store.skip_msgs(100, 2)
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq, st.last_seq) == (1, 1, 13)
    assert st.deleted == list(range(2, 14))
    assert store.store_msg("x", None, b"n")[0] == 14
    with pytest.raises(errors.MsgNotFound):
        store.load_msg(5)


def test_skip_on_empty_store(store_factory):
    store = store_factory.create()
    store.skip_msgs(1, 5)
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq, st.last_seq, st.num_deleted) == (0, 6, 5, 0)
    assert store.store_msg("x", None, b"n")[0] == 6
    assert store.state().first_seq == 6


# -- bulk removals ---------------------------------------------------------------------

def test_purge(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS)
    assert store.purge() == 8
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.bytes, st.first_seq, st.last_seq, st.num_subjects) == (0, 0, 9, 8, 0)
    assert store.store_msg("a", None, b"x")[0] == 9
    store = store_factory.reopen()
    assert store.state().first_seq == 9
    assert store.purge() == 1
    assert store.purge() == 0


def test_purge_ex_subject(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS)
    assert store.purge_ex("b.c", 0, 0) == 2
    store = store_factory.reopen()
    assert store.state().messages == 6
    assert "b.c" not in store.subjects_totals(">")
    assert store.purge_ex("e.>", 0, 0) == 2
    assert store.state().deleted == [2, 4, 5, 7]


def test_purge_ex_seq(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS)
    # below seq 6 only: "a" at 1 removed, 6 kept
    assert store.purge_ex("a", 6, 0) == 1
    assert store.purge_ex("b.*", 4, 0) == 2
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq, st.num_deleted, st.deleted) == (5, 4, 0, None)
    assert store.purge_ex("e.f.*", 5, 0) == 1
    assert store.purge_ex("b.d", 1, 0) == 1      # seq 1 = no bound: every b.d
    st = store.state()
    assert (st.messages, st.first_seq, st.deleted) == (3, 5, [8])


def test_purge_ex_keep(store_factory):
    store = store_factory.create()
    fill(store, ["k"] * 5 + ["j"] * 3)
    assert store.purge_ex("k", 0, 2) == 3
    assert store.purge_ex("j", 0, 5) == 0
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq) == (5, 4)
    assert [store.load_next_msg("k", 1)[1]] == [4]


def test_purge_ex_keep_wildcard_counts_across_subjects(store_factory):
    # nats-server: keep applies to the filtered total, newest messages survive
    store = store_factory.create()
    fill(store, ["b.c", "b.d", "b.c", "b.d", "a"])
    assert store.purge_ex("b.*", 0, 1) == 3
    store = store_factory.reopen()
    assert store.subjects_totals(">") == {"b.d": 1, "a": 1}
    assert store.state().first_seq == 4


def test_purge_ex_all_keep(store_factory):
    # whole stream with keep: compacts to last_seq - keep + 1
    store = store_factory.create()
    fill(store, ["a", "b.c", "a", "b.d", "a"])
    assert store.purge_ex("", 0, 2) == 3
    assert store.purge_ex(">", 0, 5) == 0
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq, st.last_seq) == (2, 4, 5)


def test_purge_ex_all_seq_is_compact(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS)
    assert store.purge_ex(">", 4, 0) == 3
    assert store.purge_ex("", 0, 0) == 5
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq, st.last_seq) == (0, 9, 8)


def test_compact(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS * 4)
    store.remove_msg(12)
    assert store.compact(10) == 9
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq, st.last_seq) == (22, 10, 32)
    assert st.deleted == [12]
    assert store.compact(5) == 0
    assert store.compact(12) == 2
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq) == (20, 13)
    assert store.load_msg(0).seq == 13
    assert sum(store.subjects_totals(">").values()) == 20


def test_compact_zero_is_purge(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS)
    assert store.compact(0) == 8
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq, st.last_seq) == (0, 9, 8)


def test_compact_beyond_last(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS)
    assert store.compact(20) == 8
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.bytes, st.first_seq, st.last_seq) == (0, 0, 20, 19)
    assert store.store_msg("a", None, b"x")[0] == 20


def test_truncate(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS * 4)
    store.remove_msg(5)
    store.truncate(10)
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq, st.last_seq) == (9, 1, 10)
    assert st.deleted == [5]
    assert store.load_msg(10).subject == SUBJECTS[1]
    with pytest.raises(errors.StoreEOF):
        store.load_msg(11)
    assert store.store_msg("z", None, b"x")[0] == 11
    assert store.load_last_msg("b.c").seq == 10
    store.truncate(11)      # no-op at last_seq
    assert store.state().messages == 10


def test_truncate_to_deleted_tail(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS)
    store.remove_msg(4)
    store.remove_msg(5)
    store.truncate(5)
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq, st.last_seq) == (3, 1, 5)
    assert st.deleted == [4, 5]
    assert store.store_msg("z", None, b"x")[0] == 6


# -- queries ---------------------------------------------------------------------------

def test_get_seq_from_time(store_factory):
    store = store_factory.create()
    stamps = [store.store_msg("t", None, b"x")[1] for _ in range(12)]
    store = store_factory.reopen()
    assert store.get_seq_from_time(0) == 1
    assert store.get_seq_from_time(stamps[0]) == 1
    assert store.get_seq_from_time(stamps[5]) == 6
    assert store.get_seq_from_time(stamps[5] + 1) == 7
    assert store.get_seq_from_time(stamps[-1] + 1) == 13
    store.remove_msg(6)
    assert store.get_seq_from_time(stamps[5]) == 7


def test_filtered_state(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS)
    store = store_factory.reopen()
    assert store.filtered_state(1, "b.c") == SimpleState(2, 2, 5)
    assert store.filtered_state(3, "b.c") == SimpleState(1, 5, 5)
    assert store.filtered_state(6, "b.c") == SimpleState(0, 0, 0)
    assert store.filtered_state(1, "b.*") == SimpleState(4, 2, 8)
    assert store.filtered_state(1, ">") == SimpleState(8, 1, 8)
    assert store.filtered_state(4, "") == SimpleState(5, 4, 8)
    assert store.filtered_state(1, "nope") == SimpleState(0, 0, 0)
    store.remove_msg(8)
    assert store.filtered_state(1, "b.d") == SimpleState(1, 3, 3)


def test_subjects_state_and_totals(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS)
    store.remove_msg(2)
    store = store_factory.reopen()
    assert store.subjects_totals(">") == {"a": 2, "b.c": 1, "b.d": 2, "e.f.g": 1, "e.f.h": 1}
    assert store.subjects_totals("b.*") == {"b.c": 1, "b.d": 2}
    assert store.subjects_totals("q") == {}
    ss = store.subjects_state("b.>")
    assert ss == {"b.c": SimpleState(1, 5, 5), "b.d": SimpleState(2, 3, 8)}
    assert store.subjects_state("a") == {"a": SimpleState(2, 1, 6)}
    assert set(store.subjects_state(">")) == {"a", "b.c", "b.d", "e.f.g", "e.f.h"}


def test_num_pending(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS)
    store = store_factory.reopen()
    assert store.num_pending(1, ">") == (8, 8)
    assert store.num_pending(4, "") == (5, 8)
    assert store.num_pending(1, "b.*") == (4, 8)
    assert store.num_pending(4, "b.*") == (2, 8)
    assert store.num_pending(1, ["a", "e.>"]) == (4, 8)
    assert store.num_pending(9, ">") == (0, 8)
    assert store.num_pending(1, "zzz") == (0, 8)
    # last per subject: subjects whose last message is >= sseq
    assert store.num_pending(1, ">", True) == (5, 8)
    assert store.num_pending(6, ">", True) == (3, 8)
    assert store.num_pending(1, "b.*", True) == (2, 8)
    store.remove_msg(3)
    assert store.num_pending(1, "b.d") == (1, 8)


def test_multi_last_seqs(store_factory):
    store = store_factory.create()
    fill(store, SUBJECTS)
    store = store_factory.reopen()
    assert store.multi_last_seqs([">"], 0, 0) == [4, 5, 6, 7, 8]
    assert store.multi_last_seqs(["b.*"], 0, 0) == [5, 8]
    assert store.multi_last_seqs(["b.*"], 4, 0) == [2, 3]
    assert store.multi_last_seqs(["a", "e.f.h"], 6, 0) == [6]
    assert store.multi_last_seqs(["zz"], 0, 0) == []
    with pytest.raises(errors.TooManyResults):
        store.multi_last_seqs([">"], 0, 3)
    assert store.multi_last_seqs([">"], 0, 5) == [4, 5, 6, 7, 8]
    assert store.all_last_seqs() == [4, 5, 6, 7, 8]
    store.remove_msg(8)
    assert store.all_last_seqs() == [3, 4, 5, 6, 7]


# -- limits ----------------------------------------------------------------------------

def test_max_msgs_discard_old(store_factory):
    store = store_factory.create(max_msgs=5)
    fill(store, [f"m.{i}" for i in range(12)])
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq, st.last_seq, st.num_subjects) == (5, 8, 12, 5)


def test_max_bytes_discard_old(store_factory):
    store = store_factory.create(max_bytes=1000)
    fill(store, ["b"] * 50, b"x" * 50)
    store = store_factory.reopen()
    st = store.state()
    per = (22 + 1 + 50 + 8) if store_factory.is_file else (1 + 50 + 16)
    assert st.messages == 1000 // per
    assert st.bytes == st.messages * per
    assert st.last_seq == 50


def test_max_msgs_per_subject(store_factory):
    store = store_factory.create(max_msgs_per_subject=2)
    fill(store, ["p", "q", "p", "p", "q", "p", "q"])
    store = store_factory.reopen()
    assert store.subjects_totals(">") == {"p": 2, "q": 2}
    st = store.state()
    assert (st.messages, st.first_seq, st.deleted) == (4, 4, None)
    assert store.multi_last_seqs([">"], 0, 0) == [6, 7]
    assert [store.load_next_msg("p", 1)[1], store.load_next_msg("q", 1)[1]] == [4, 5]


def test_discard_new_errors(store_factory):
    store = store_factory.create(max_msgs=3, discard="new")
    fill(store, ["a", "b", "c"])
    with pytest.raises(errors.MaxMsgsExceeded):
        store.store_msg("d", None, b"x")
    assert store.state().messages == 3
    store = store_factory.create(max_bytes=200, discard="new")
    fill(store, ["a", "a"], b"x" * 40)
    with pytest.raises(errors.MaxBytesExceeded):
        store.store_msg("a", None, b"x" * 100)
    assert store.state().messages == 2
    store = store_factory.create(max_msgs_per_subject=1, discard="new", discard_new_per_subject=True)
    fill(store, ["a", "b"])
    with pytest.raises(errors.MaxMsgsPerSubjectExceeded):
        store.store_msg("a", None, b"x")
    store.store_msg("c", None, b"x")
    assert store.state().messages == 3


def test_max_msg_size(store_factory):
    store = store_factory.create(max_msg_size=10)
    store.store_msg("a", None, b"x" * 10)
    with pytest.raises(errors.MsgTooLarge):
        store.store_msg("a", None, b"x" * 11)
    with pytest.raises(errors.MsgTooLarge):
        store.store_msg("a", b"NATS/1.0\r\n\r\n", b"x" * 5)
    assert store.state().messages == 1


def test_update_config_applies_limits(store_factory):
    store = store_factory.create()
    fill(store, ["u"] * 10)
    cfg = store_factory.config
    cfg.max_msgs = 4
    store.update_config(cfg)
    store = store_factory.reopen()
    st = store.state()
    assert (st.messages, st.first_seq) == (4, 7)


# -- batch, utilization, lifecycle -----------------------------------------------------

def test_store_batch(store_factory):
    store = store_factory.create()
    fill(store, ["pre"])
    first, last = store.store_batch([("a", None, b"1"), ("b.c", HDR, b"2"), ("a", None, b"3")])
    assert (first, last) == (2, 4)
    store = store_factory.reopen()
    assert [store.load_msg(s).msg for s in (2, 3, 4)] == [b"1", b"2", b"3"]
    assert store.load_msg(3).hdr == HDR
    assert store.subjects_totals(">") == {"pre": 1, "a": 2, "b.c": 1}


def test_store_batch_discard_new_stops_midway(store_factory):
    store = store_factory.create(max_msgs=2, discard="new")
    with pytest.raises(errors.MaxMsgsExceeded):
        store.store_batch([("a", None, b"1"), ("a", None, b"2"), ("a", None, b"3")])
    store = store_factory.reopen()
    assert store.state().messages == 2
    assert store.load_msg(2).msg == b"2"


def test_store_raw_msg(store_factory):
    store = store_factory.create()
    store.store_raw_msg("r", None, b"x", 1, 1234)
    with pytest.raises(errors.SequenceMismatch):
        store.store_raw_msg("r", None, b"x", 5, 1235)
    store = store_factory.reopen()
    assert store.load_msg(1).ts == 1234


def test_utilization(store_factory):
    store = store_factory.create()
    fill(store, ["u"] * 10, b"y" * 20)
    total, used = store.utilization()
    assert used == store.state().bytes
    assert total >= used
    store.remove_msg(3)
    total2, used2 = store.utilization()
    assert used2 == store.state().bytes < used
    assert total2 >= used2


def test_type(store_factory):
    store = store_factory.create()
    assert store.type() == ("file" if store_factory.is_file else "memory")


def test_closed_store_errors(store_factory):
    store = store_factory.create()
    fill(store, ["c"] * 3)
    store.stop()
    with pytest.raises(errors.StoreClosed):
        store.store_msg("c", None, b"x")
    with pytest.raises(errors.StoreClosed):
        store.load_msg(1)
    with pytest.raises(errors.StoreClosed):
        store.load_next_msg(">", 1)
    with pytest.raises(errors.StoreClosed):
        store.remove_msg(1)
    with pytest.raises(errors.StoreClosed):
        store.purge()
    with pytest.raises(errors.StoreClosed):
        store.filtered_state(1, ">")
    with pytest.raises(errors.StoreClosed):
        store.skip_msg()
    with pytest.raises(errors.StoreClosed):
        store.store_batch([("c", None, b"x")])


def break_write_fd(store):
    """Make every write to the write block fail (EBADF), like a closed descriptor. The
    number is replaced by a read-only descriptor instead of being closed, so that a later
    close by the store cannot hit a reused number. A block written through a file mapping
    is first switched back to write(2), the path a block takes when no space could be
    reserved for its mapping."""
    store.lmb.unmap()
    read_only = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(read_only, store.lmb.file_fd)
    finally:
        os.close(read_only)


def test_sticky_write_error(file_factory):
    store = file_factory.create()
    fill(store, ["w"] * 3)
    break_write_fd(store)
    with pytest.raises(errors.WriteError):
        store.store_msg("w", None, b"lost")
    with pytest.raises(errors.WriteError):
        store.store_msg("w", None, b"lost again")
    with pytest.raises(errors.WriteError):
        store.store_batch([("w", None, b"lost too")])
    with pytest.raises(errors.WriteError):
        store.remove_msg(1)
    st = store.state()
    assert (st.messages, st.last_seq) == (3, 3)
    assert store.load_msg(3).msg == b"hello"
    # the process goes away (no clean stop) and the stream is opened again
    store.closed = True
    broken = store
    store = file_factory.force_reopen()
    st = store.state()
    assert (st.messages, st.last_seq) == (3, 3)
    assert store.store_msg("w", None, b"ok")[0] == 4
    assert store.load_msg(4).msg == b"ok"
    store = file_factory.force_reopen()
    assert store.state().messages == 4
    for mb in broken.blocks:
        mb.close_file()


def test_stop_after_write_error(file_factory):
    store = file_factory.create()
    fill(store, ["w"] * 3)
    break_write_fd(store)
    with pytest.raises(errors.WriteError):
        store.store_msg("w", None, b"lost")
    try:
        store.stop()
    finally:
        store.closed = True
    store = file_factory.force_reopen()
    assert store.state().messages == 3
