"""Model-based tests: random operation sequences applied to a FileStore (tiny blocks, so
blocks roll over, seal and get rewritten), a MemStore and the plain-Python StoreModel
together; after every step the stores' state() must agree with the model.
"""

from __future__ import annotations

import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import jsstore
from jsstore import StoreOptions, StreamConfig
from jsstore import errors
from storemodel import StoreModel

SUBJECTS = ["a", "b.c", "b.d", "e.f.g"]
FILTERS = ["", ">", "a", "b.c", "b.*", "b.>", "e.>", "*.f.*", "e.f.g", "x.y", "*"]
MULTI_FILTERS = [["a", "e.>"], ["b.c", "b.d"], ["*.f.*", "a"]]
HEADERS = [None, b"NATS/1.0\r\nK: v\r\n\r\n"]
TINY_BLOCK = 512

subjects = st.sampled_from(SUBJECTS)
payloads = st.binary(max_size=40)
headers = st.sampled_from(HEADERS)
filters = st.sampled_from(FILTERS)
any_filters = st.one_of(filters, st.sampled_from(MULTI_FILTERS))
message = st.tuples(subjects, headers, payloads)


class StoreMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="jsstore-model-")
        self.file = None
        self.mem = None
        self.model = None

    @initialize(limits=st.sampled_from([(-1, -1), (12, -1), (-1, 3), (20, 4)]))
    def open_stores(self, limits):
        max_msgs, max_per_subject = limits
        common = dict(name="M", subjects=[">"], max_msgs=max_msgs,
                      max_msgs_per_subject=max_per_subject)
        self.file_config = StreamConfig(storage="file", **common)
        self.file = self._open_file()
        self.mem = jsstore.MemStore(StreamConfig(storage="memory", **common))
        self.model = StoreModel(max_msgs, max_per_subject)

    def _open_file(self):
        return jsstore.FileStore(self.directory, self.file_config,
                                 StoreOptions(block_size=TINY_BLOCK, sync_interval=0))

    def teardown(self):
        if self.file is not None and not self.file.closed:
            self.file.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def stores(self):
        return (self.file, self.mem)

    def both(self, call):
        """Run call on each store and on the model; results (or error classes) must match.
        Returns the model's result."""
        try:
            expect = call(self.model, True)
        except errors.StoreError as exc:
            expect = type(exc)
        for store in self.stores():
            try:
                got = call(store, False)
            except errors.StoreError as exc:
                got = type(exc)
            assert got == expect, (store.type(), got, expect)
        return expect

    # -- writes ----------------------------------------------------------------------
    @rule(msg=message)
    def store_msg(self, msg):
        self.both(lambda s, m: s.store(*msg) if m else s.store_msg(*msg)[0])

    @rule(batch=st.lists(message, min_size=1, max_size=6))
    def store_batch(self, batch):
        def call(s, is_model):
            if is_model:
                seqs = [s.store(*m) for m in batch]
                return seqs[0], seqs[-1]
            return tuple(s.store_batch(batch))
        self.both(call)

    @rule(num=st.integers(1, 5))
    def skip(self, num):
        def call(s, is_model):
            if is_model:
                s.skip(num)
            elif num == 1:
                s.skip_msg()
            else:
                s.skip_msgs(s.last_seq + 1, num)
            return None
        self.both(call)

    # -- removals --------------------------------------------------------------------
    def _seq(self, data):
        return data.draw(st.integers(0, self.model.last_seq + 2))

    @rule(data=st.data(), secure=st.booleans())
    def remove(self, data, secure):
        seq = self._seq(data)
        self.both(lambda s, m: s.remove(seq) if m else
                  (s.erase_msg(seq) if secure else s.remove_msg(seq)))

    @rule()
    def purge(self):
        self.both(lambda s, m: s.purge())

    @rule(data=st.data(), subject=filters, keep=st.integers(0, 4), with_seq=st.booleans())
    def purge_ex(self, data, subject, keep, with_seq):
        seq = self._seq(data) if with_seq else 0
        if seq > 1:
            keep = 0        # nats-server refuses both together
        self.both(lambda s, m: s.purge_ex(subject, seq, keep))

    @rule(data=st.data())
    def compact(self, data):
        seq = data.draw(st.integers(0, self.model.last_seq + 3))
        self.both(lambda s, m: s.compact(seq))

    @precondition(lambda self: self.model is not None and self.model.last_seq > 0)
    @rule(data=st.data())
    def truncate(self, data):
        seq = data.draw(st.integers(max(0, self.model.first_seq - 1), self.model.last_seq))
        self.both(lambda s, m: s.truncate(seq))

    @rule()
    def reopen(self):
        self.file.stop()
        self.file = self._open_file()

    @precondition(lambda self: self.model is not None and self.model.max_msgs < 0
                  and self.model.max_per_subject < 0)
    @rule()
    def crash_reopen(self):
        """The process dies (every record already handed to the OS, no index.db): the
        reopened store rebuilds from the block files alone. Only without limits: removals
        by limits write no tombstone, so a rebuild can bring back a message that limits
        removed when later removals brought the count back under the limit."""
        self.file.closed = True
        for mb in self.file.blocks:
            mb.close_file()
        self.file = self._open_file()

    # -- reads -----------------------------------------------------------------------
    @rule(data=st.data())
    def load_msg(self, data):
        seq = self._seq(data)
        self.both(lambda s, m: s.load(seq) if m else _msg_tuple(s.load_msg(seq)))

    @rule(data=st.data(), flt=any_filters)
    def load_next_msg(self, data, flt):
        start = self._seq(data)
        self.both(lambda s, m: s.load_next(flt, start) if m else
                  _msg_tuple(s.load_next_msg(flt, start)[0]))

    @rule(flt=filters)
    def load_last_msg(self, flt):
        self.both(lambda s, m: s.load_last(flt) if m else _msg_tuple(s.load_last_msg(flt)))

    @rule(data=st.data(), flt=filters)
    def filtered_state(self, data, flt):
        sseq = self._seq(data)
        self.both(lambda s, m: s.filtered_state(sseq, flt))

    @rule(data=st.data(), flt=any_filters, last_per_subject=st.booleans())
    def num_pending(self, data, flt, last_per_subject):
        sseq = self._seq(data)
        self.both(lambda s, m: tuple(s.num_pending(sseq, flt, last_per_subject)))

    @rule(flt=filters)
    def subjects_state(self, flt):
        self.both(lambda s, m: s.subjects_state(flt))

    @rule(data=st.data(), flt=st.one_of(filters.map(lambda f: [f]), st.sampled_from(MULTI_FILTERS)))
    def multi_last_seqs(self, data, flt):
        max_seq = self._seq(data)
        self.both(lambda s, m: s.multi_last_seqs(flt, max_seq) if m else
                  s.multi_last_seqs(flt, max_seq, 0))

    # -- the state after every step --------------------------------------------------
    @invariant()
    def same_state(self):
        if self.model is None:
            return
        model = self.model
        for store, nbytes in ((self.file, model.file_bytes()), (self.mem, model.memory_bytes())):
            state = store.state()
            got = (state.messages, state.bytes, state.first_seq, state.last_seq,
                   state.deleted or [], state.num_deleted, state.num_subjects)
            deleted = model.deleted()
            first = model.first_seq
            expect = (len(model.msgs), nbytes, first, model.last_seq,
                      deleted, len(deleted), model.num_subjects())
            assert got == expect, (store.type(), got, expect)
            fast = store.fast_state()
            assert (fast.messages, fast.first_seq, fast.last_seq, fast.num_deleted) == \
                (len(model.msgs), first, model.last_seq, len(deleted))


def _msg_tuple(sm):
    return (sm.seq, sm.subject, sm.hdr, sm.msg)


_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                     HealthCheck.filter_too_much])


def test_store_model():
    StoreMachine.TestCase.settings = settings(max_examples=80, stateful_step_count=50, **_COMMON)
    StoreMachine.TestCase().runTest()


@pytest.mark.slow
def test_store_model_slow():
    StoreMachine.TestCase.settings = settings(max_examples=400, stateful_step_count=80, **_COMMON)
    StoreMachine.TestCase().runTest()
