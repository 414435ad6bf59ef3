"""The contract's cases for the queries, the limits, batches and the store's lifecycle."""

from __future__ import annotations

import time

import pytest

from jsstore import errors
from jsstore.store.contract import SimpleState, StreamStore
from jsstore.testing.cases_messages import HDR, SUBJECTS, fill
from jsstore.testing.harness import StoreHarness


class QueryCases(StoreHarness):
    """Queries (by time, subject, filter), limits, batches, utilization and stop."""

    # -- queries -------------------------------------------------------------------
    def test_get_seq_from_time(self):
        store = self.create()
        stamps = [store.store_msg("t", None, b"x")[1] for _ in range(12)]
        store = self.reopen()
        assert store.get_seq_from_time(0) == 1
        assert store.get_seq_from_time(stamps[0]) == 1
        assert store.get_seq_from_time(stamps[5]) == 6
        assert store.get_seq_from_time(stamps[5] + 1) == 7
        assert store.get_seq_from_time(stamps[-1] + 1) == 13
        store.remove_msg(6)
        assert store.get_seq_from_time(stamps[5]) == 7

    def test_filtered_state(self):
        store = self.create()
        fill(store, SUBJECTS)
        store = self.reopen()
        assert store.filtered_state(1, "b.c") == SimpleState(2, 2, 5)
        assert store.filtered_state(3, "b.c") == SimpleState(1, 5, 5)
        assert store.filtered_state(6, "b.c") == SimpleState(0, 0, 0)
        assert store.filtered_state(1, "b.*") == SimpleState(4, 2, 8)
        assert store.filtered_state(1, ">") == SimpleState(8, 1, 8)
        assert store.filtered_state(4, "") == SimpleState(5, 4, 8)
        assert store.filtered_state(1, "nope") == SimpleState(0, 0, 0)
        store.remove_msg(8)
        assert store.filtered_state(1, "b.d") == SimpleState(1, 3, 3)

    def test_subjects_state_and_totals(self):
        store = self.create()
        fill(store, SUBJECTS)
        store.remove_msg(2)
        store = self.reopen()
        assert store.subjects_totals(">") == {"a": 2, "b.c": 1, "b.d": 2, "e.f.g": 1, "e.f.h": 1}
        assert store.subjects_totals("b.*") == {"b.c": 1, "b.d": 2}
        assert store.subjects_totals("q") == {}
        ss = store.subjects_state("b.>")
        assert ss == {"b.c": SimpleState(1, 5, 5), "b.d": SimpleState(2, 3, 8)}
        assert store.subjects_state("a") == {"a": SimpleState(2, 1, 6)}
        assert set(store.subjects_state(">")) == {"a", "b.c", "b.d", "e.f.g", "e.f.h"}

    def test_num_pending(self):
        store = self.create()
        fill(store, SUBJECTS)
        store = self.reopen()
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

    def test_multi_last_seqs(self):
        store = self.create()
        fill(store, SUBJECTS)
        store = self.reopen()
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

    # -- limits --------------------------------------------------------------------
    def test_max_msgs_discard_old(self):
        store = self.create(max_msgs=5)
        fill(store, [f"m.{i}" for i in range(12)])
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq, st.last_seq, st.num_subjects) == (5, 8, 12, 5)

    def test_max_bytes_discard_old(self):
        store = self.create(max_bytes=1000)
        fill(store, ["b"] * 50, b"x" * 50)
        store = self.reopen()
        st = store.state()
        per = self.message_size("b", None, b"x" * 50)
        assert st.messages == 1000 // per
        assert st.bytes == st.messages * per
        assert st.last_seq == 50

    def test_max_msgs_per_subject(self):
        store = self.create(max_msgs_per_subject=2)
        fill(store, ["p", "q", "p", "p", "q", "p", "q"])
        store = self.reopen()
        assert store.subjects_totals(">") == {"p": 2, "q": 2}
        st = store.state()
        assert (st.messages, st.first_seq, st.deleted) == (4, 4, None)
        assert store.multi_last_seqs([">"], 0, 0) == [6, 7]
        assert [store.load_next_msg("p", 1)[1], store.load_next_msg("q", 1)[1]] == [4, 5]

    def test_discard_new_errors(self):
        store = self.create(max_msgs=3, discard="new")
        fill(store, ["a", "b", "c"])
        with pytest.raises(errors.MaxMsgsExceeded):
            store.store_msg("d", None, b"x")
        assert store.state().messages == 3
        store = self.create(max_bytes=200, discard="new")
        fill(store, ["a", "a"], b"x" * 40)
        with pytest.raises(errors.MaxBytesExceeded):
            store.store_msg("a", None, b"x" * 100)
        assert store.state().messages == 2
        store = self.create(max_msgs_per_subject=1, discard="new", discard_new_per_subject=True)
        fill(store, ["a", "b"])
        with pytest.raises(errors.MaxMsgsPerSubjectExceeded):
            store.store_msg("a", None, b"x")
        store.store_msg("c", None, b"x")
        assert store.state().messages == 3

    def test_max_msg_size(self):
        store = self.create(max_msg_size=10)
        store.store_msg("a", None, b"x" * 10)
        with pytest.raises(errors.MsgTooLarge):
            store.store_msg("a", None, b"x" * 11)
        with pytest.raises(errors.MsgTooLarge):
            store.store_msg("a", b"NATS/1.0\r\n\r\n", b"x" * 5)
        assert store.state().messages == 1

    def test_update_config_applies_limits(self):
        store = self.create()
        fill(store, ["u"] * 10)
        cfg = self.config
        cfg.max_msgs = 4
        store.update_config(cfg)
        store = self.reopen()
        st = store.state()
        assert (st.messages, st.first_seq) == (4, 7)

    # -- batch, utilization, lifecycle ---------------------------------------------
    def test_store_batch(self):
        store = self.create()
        fill(store, ["pre"])
        first, last = store.store_batch([("a", None, b"1"), ("b.c", HDR, b"2"), ("a", None, b"3")])
        assert (first, last) == (2, 4)
        store = self.reopen()
        assert [store.load_msg(s).msg for s in (2, 3, 4)] == [b"1", b"2", b"3"]
        assert store.load_msg(3).hdr == HDR
        assert store.subjects_totals(">") == {"pre": 1, "a": 2, "b.c": 1}

    def test_store_batch_discard_new_stops_midway(self):
        store = self.create(max_msgs=2, discard="new")
        with pytest.raises(errors.MaxMsgsExceeded):
            store.store_batch([("a", None, b"1"), ("a", None, b"2"), ("a", None, b"3")])
        store = self.reopen()
        assert store.state().messages == 2
        assert store.load_msg(2).msg == b"2"

    def test_store_raw_msg(self):
        store = self.create()
        store.store_raw_msg("r", None, b"x", 1, 1234)
        with pytest.raises(errors.SequenceMismatch):
            store.store_raw_msg("r", None, b"x", 5, 1235)
        store = self.reopen()
        assert store.load_msg(1).ts == 1234

    def test_utilization(self):
        store = self.create()
        fill(store, ["u"] * 10, b"y" * 20)
        total, used = store.utilization()
        assert used == store.state().bytes
        assert total >= used
        store.remove_msg(3)
        total2, used2 = store.utilization()
        assert used2 == store.state().bytes < used
        assert total2 >= used2

    def test_satisfies_the_protocol(self):
        assert isinstance(self.create(), StreamStore)

    def test_type(self):
        store = self.create()
        assert store.type() == self.storage

    def test_closed_store_errors(self):
        store = self.create()
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

    # -- what the stream layer reads directly, and the expiry it drives ------------
    def _check_counters(self, store):
        st = store.state()
        assert (store.first_seq, store.last_seq, store.msgs, store.bytes) == \
            (st.first_seq, st.last_seq, st.messages, st.bytes)
        assert store.first_ts == (store.load_msg(store.first_seq).ts if store.msgs else 0)

    def test_counters_follow_the_state(self):
        store = self.create()
        self._check_counters(store)
        fill(store, SUBJECTS)
        store.remove_msg(1)
        store.remove_msg(5)
        self._check_counters(store)
        store = self.reopen()
        self._check_counters(store)
        store.purge_ex("b.*", 0, 0)
        self._check_counters(store)
        store.purge()
        self._check_counters(store)
        assert (store.first_seq, store.last_seq, store.first_ts) == (9, 8, 0)

    def test_remove_msg_via_limits(self):
        store = self.create()
        fill(store, ["v"] * 3)
        assert store.remove_msg_via_limits(1) is True
        assert store.remove_msg_via_limits(1) is False
        store = self.reopen()
        assert store.state().messages == 2
        assert store.load_msg(0).seq == 2

    def test_expire_msgs_by_max_age(self):
        store = self.create()
        for seq, ts in enumerate((1000, 2000, 3000), 1):   # long ago
            store.store_raw_msg("old", None, b"x", seq, ts)
        now = time.time_ns()
        store.store_raw_msg("new", None, b"y", 4, now)
        assert store.expire_msgs() == 0                      # no max_age
        store.max_age = 60 * 1_000_000_000                  # as the stream layer sets it
        assert store.expire_msgs() == 3
        assert (store.msgs, store.first_seq, store.first_ts) == (1, 4, now)
        assert store.expire_msgs() == 0

    def test_ttl_schedule(self):
        store = self.create(allow_msg_ttl=True)
        assert len(store.ttls) == 0
        fill(store, ["t"])
        seq, ts = store.store_msg("t", None, b"x", 5)
        assert len(store.ttls) == 1
        assert store.next_ttl_expiry == ts + 5_000_000_000
        assert store.pop_due_ttls(ts + 4_999_999_999) == []
        assert store.pop_due_ttls(ts + 5_000_000_000) == [seq]
        assert len(store.ttls) == 0
        assert store.load_msg(seq).msg == b"x"                 # the caller removes it
