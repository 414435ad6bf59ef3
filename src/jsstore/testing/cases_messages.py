"""The contract's cases for storing, loading and removing single messages."""

from __future__ import annotations

import os

import pytest

from jsstore import errors
from jsstore.testing.harness import StoreHarness

HDR = b"NATS/1.0\r\nX-Key: v\r\n\r\n"
SUBJECTS = ["a", "b.c", "b.d", "e.f.g", "b.c", "a", "e.f.h", "b.d"]


def fill(store, subjects, payload=b"hello"):
    """Store one message per subject in order; returns the sequences."""
    return [store.store_msg(s, None, payload)[0] for s in subjects]


class MessageCases(StoreHarness):
    """store_msg / load_* / remove_msg / erase_msg / skip_msg(s), each across a reopen."""

    # -- store / load --------------------------------------------------------------
    def test_store_and_load(self):
        store = self.create()
        seq, ts = store.store_msg("foo", None, b"one")
        assert seq == 1 and ts > 0
        seq2, ts2 = store.store_msg("bar", HDR, b"two")
        assert seq2 == 2 and ts2 > ts
        store = self.reopen()
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

    def test_empty_payload_and_many_blocks(self):
        store = self.create()
        store.store_msg("e", None, b"")
        big = bytes(range(256)) * 8
        for i in range(40):
            store.store_msg(f"s.{i % 3}", HDR if i % 2 else None, big + bytes([i]))
        store = self.reopen()
        assert store.load_msg(1).msg == b""
        for i in range(40):
            sm = store.load_msg(i + 2)
            assert sm.msg == big + bytes([i])
            assert sm.hdr == (HDR if i % 2 else None)
            assert sm.subject == f"s.{i % 3}"
        st = store.state()
        assert (st.messages, st.first_seq, st.last_seq, st.num_subjects) == (41, 1, 41, 4)

    def test_byte_accounting(self):
        store = self.create()
        store.store_msg("ab", None, b"12345")
        store.store_msg("ab", HDR, b"12345")
        store = self.reopen()
        expect = self.message_size("ab", None, b"12345") + self.message_size("ab", HDR, b"12345")
        assert store.state().bytes == expect
        assert store.fast_state().bytes == expect

    # -- filtered loads ------------------------------------------------------------
    def test_load_next_prev_last(self):
        store = self.create()
        fill(store, SUBJECTS)
        store = self.reopen()
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

    # -- removals ------------------------------------------------------------------
    def test_remove_and_state(self):
        store = self.create()
        fill(store, ["x"] * 10)
        assert store.remove_msg(3) is True
        assert store.remove_msg(3) is False
        assert store.remove_msg(99) is False
        assert store.remove_msg(7) is True
        assert store.remove_msg(1) is True
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq, st.last_seq) == (7, 2, 10)
        assert st.deleted == [3, 7] and st.num_deleted == 2
        fst = store.fast_state()
        assert fst.num_deleted == 2 and fst.messages == 7
        # removing the last message keeps last_seq
        assert store.remove_msg(10)
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.last_seq) == (6, 10)
        assert st.deleted == [3, 7, 10]        # last_seq stays, so 10 counts as deleted
        assert st.num_deleted == 3
        assert store.store_msg("x", None, b"n")[0] == 11

    def test_remove_everything_keeps_numbering(self):
        store = self.create()
        fill(store, ["x"] * 5)
        for seq in range(1, 6):
            assert store.remove_msg(seq)
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.bytes, st.first_seq, st.last_seq, st.num_deleted) == (0, 0, 6, 5, 0)
        assert store.store_msg("x", None, b"n")[0] == 6

    def test_erase_scrubs_payload(self):
        store = self.create(compression="none")
        secret = b"TOP-SECRET-PAYLOAD-0123456789"
        fill(store, ["x"], b"before")
        store.store_msg("x", None, secret)
        fill(store, ["x"], b"after")
        assert store.erase_msg(2) is True
        assert store.erase_msg(2) is False
        with pytest.raises(errors.MsgNotFound):
            store.load_msg(2)
        store.flush_all_pending()
        if self.erases_on_disk:
            for folder, _, names in os.walk(self.path):
                for name in names:
                    with open(os.path.join(folder, name), "rb") as f:
                        assert secret not in f.read(), name
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.deleted) == (2, [2])
        assert store.load_msg(3).msg == b"after"

    def test_skip_msgs(self):
        store = self.create()
        fill(store, ["x"])
        assert store.skip_msg() == 2
        assert store.skip_msg(3) == 3
        store.skip_msgs(4, 10)
        with pytest.raises(errors.SequenceMismatch):
            store.skip_msgs(100, 2)
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq, st.last_seq) == (1, 1, 13)
        assert st.deleted == list(range(2, 14))
        assert store.store_msg("x", None, b"n")[0] == 14
        with pytest.raises(errors.MsgNotFound):
            store.load_msg(5)

    def test_skip_on_empty_store(self):
        store = self.create()
        store.skip_msgs(1, 5)
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq, st.last_seq, st.num_deleted) == (0, 6, 5, 0)
        assert store.store_msg("x", None, b"n")[0] == 6
        assert store.state().first_seq == 6
