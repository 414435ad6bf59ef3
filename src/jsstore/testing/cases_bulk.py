"""The contract's cases for the bulk removals: purge, purge_ex, compact, truncate."""

from __future__ import annotations

import pytest

from jsstore import errors
from jsstore.testing.cases_messages import SUBJECTS, fill
from jsstore.testing.harness import StoreHarness


class BulkCases(StoreHarness):
    """Bulk removals with nats-server's numbering rules, each across a reopen."""

    def test_purge(self):
        store = self.create()
        fill(store, SUBJECTS)
        assert store.purge() == 8
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.bytes, st.first_seq, st.last_seq, st.num_subjects) == (0, 0, 9, 8, 0)
        assert store.store_msg("a", None, b"x")[0] == 9
        store = self.reopen()
        assert store.state().first_seq == 9
        assert store.purge() == 1
        assert store.purge() == 0

    def test_purge_ex_subject(self):
        store = self.create()
        fill(store, SUBJECTS)
        assert store.purge_ex("b.c", 0, 0) == 2
        store = self.reopen()
        assert store.state().messages == 6
        assert "b.c" not in store.subjects_totals(">")
        assert store.purge_ex("e.>", 0, 0) == 2
        assert store.state().deleted == [2, 4, 5, 7]

    def test_purge_ex_seq(self):
        store = self.create()
        fill(store, SUBJECTS)
        # below seq 6 only: "a" at 1 removed, 6 kept
        assert store.purge_ex("a", 6, 0) == 1
        assert store.purge_ex("b.*", 4, 0) == 2
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq, st.num_deleted, st.deleted) == (5, 4, 0, None)
        assert store.purge_ex("e.f.*", 5, 0) == 1
        assert store.purge_ex("b.d", 1, 0) == 1      # seq 1 = no bound: every b.d
        st = store.state()
        assert (st.messages, st.first_seq, st.deleted) == (3, 5, [8])

    def test_purge_ex_keep(self):
        store = self.create()
        fill(store, ["k"] * 5 + ["j"] * 3)
        assert store.purge_ex("k", 0, 2) == 3
        assert store.purge_ex("j", 0, 5) == 0
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq) == (5, 4)
        assert [store.load_next_msg("k", 1)[1]] == [4]

    def test_purge_ex_keep_wildcard_counts_across_subjects(self):
        # nats-server: keep applies to the filtered total, newest messages survive
        store = self.create()
        fill(store, ["b.c", "b.d", "b.c", "b.d", "a"])
        assert store.purge_ex("b.*", 0, 1) == 3
        store = self.reopen()
        assert store.subjects_totals(">") == {"b.d": 1, "a": 1}
        assert store.state().first_seq == 4

    def test_purge_ex_all_keep(self):
        # whole stream with keep: compacts to last_seq - keep + 1
        store = self.create()
        fill(store, ["a", "b.c", "a", "b.d", "a"])
        assert store.purge_ex("", 0, 2) == 3
        assert store.purge_ex(">", 0, 5) == 0
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq, st.last_seq) == (2, 4, 5)

    def test_purge_ex_all_seq_is_compact(self):
        store = self.create()
        fill(store, SUBJECTS)
        assert store.purge_ex(">", 4, 0) == 3
        assert store.purge_ex("", 0, 0) == 5
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq, st.last_seq) == (0, 9, 8)

    def test_compact(self):
        store = self.create()
        fill(store, SUBJECTS * 4)
        store.remove_msg(12)
        assert store.compact(10) == 9
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq, st.last_seq) == (22, 10, 32)
        assert st.deleted == [12]
        assert store.compact(5) == 0
        assert store.compact(12) == 2
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq) == (20, 13)
        assert store.load_msg(0).seq == 13
        assert sum(store.subjects_totals(">").values()) == 20

    def test_compact_zero_is_purge(self):
        store = self.create()
        fill(store, SUBJECTS)
        assert store.compact(0) == 8
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq, st.last_seq) == (0, 9, 8)

    def test_compact_beyond_last(self):
        store = self.create()
        fill(store, SUBJECTS)
        assert store.compact(20) == 8
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.bytes, st.first_seq, st.last_seq) == (0, 0, 20, 19)
        assert store.store_msg("a", None, b"x")[0] == 20

    def test_truncate(self):
        store = self.create()
        fill(store, SUBJECTS * 4)
        store.remove_msg(5)
        store.truncate(10)
        store = self.reopen()
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

    def test_truncate_to_deleted_tail(self):
        store = self.create()
        fill(store, SUBJECTS)
        store.remove_msg(4)
        store.remove_msg(5)
        store.truncate(5)
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq, st.last_seq) == (3, 1, 5)
        assert st.deleted == [4, 5]
        assert store.store_msg("z", None, b"x")[0] == 6
