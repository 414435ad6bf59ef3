"""The kit's model-based test: a Hypothesis state machine applies random operation sequences
to the store under test and to the plain-Python ``StoreModel`` together; every result (or
error class) must agree, and after every step the store's state() must be the model's.

``ModelCases.test_store_model`` runs it (``model_examples`` sequences of up to
``model_steps`` operations).  A persistent store (``reopens``) is also stopped and reopened
between steps; a store whose harness defines ``abandon(store)`` (leave it as a killed process
would, no clean stop) is also reopened after such a crash.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from jsstore import errors
from jsstore.testing.harness import StoreHarness
from jsstore.testing.model import StoreModel

SUBJECTS = ["a", "b.c", "b.d", "e.f.g"]
FILTERS = ["", ">", "a", "b.c", "b.*", "b.>", "e.>", "*.f.*", "e.f.g", "x.y", "*"]
MULTI_FILTERS = [["a", "e.>"], ["b.c", "b.d"], ["*.f.*", "a"]]
HEADERS = [None, b"NATS/1.0\r\nK: v\r\n\r\n"]
LIMITS = [(-1, -1), (12, -1), (-1, 3), (20, 4)]     # (max_msgs, max_msgs_per_subject)

subjects = st.sampled_from(SUBJECTS)
payloads = st.binary(max_size=40)
headers = st.sampled_from(HEADERS)
filters = st.sampled_from(FILTERS)
any_filters = st.one_of(filters, st.sampled_from(MULTI_FILTERS))
message = st.tuples(subjects, headers, payloads)


def _msg_tuple(sm):
    return (sm.seq, sm.subject, sm.hdr, sm.msg)


class StoreMachine(RuleBasedStateMachine):
    """One store of `harness` against the model."""

    def __init__(self, harness: StoreHarness):
        super().__init__()
        self.harness = harness
        harness._machines = getattr(harness, "_machines", 0) + 1
        self.directory = os.path.join(harness.root, f"model-{harness._machines}")
        self.store = None
        self.model = None

    @initialize(limits=st.sampled_from(LIMITS))
    def open_store(self, limits):
        max_msgs, max_per_subject = limits
        self.config = self.harness.make_config(name="M", max_msgs=max_msgs,
                                               max_msgs_per_subject=max_per_subject)
        self.store = self.harness.open_store(self.directory, self.config)
        self.model = StoreModel(max_msgs, max_per_subject)

    def teardown(self):
        if self.store is not None:
            try:
                self.store.stop()
            except errors.StoreError:
                pass

    def both(self, call):
        """Run call on the store and on the model; results (or error classes) must match.
        Returns the model's result."""
        try:
            expect = call(self.model, True)
        except errors.StoreError as exc:
            expect = type(exc)
        try:
            got = call(self.store, False)
        except errors.StoreError as exc:
            got = type(exc)
        assert got == expect, (got, expect)
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
                s.skip_msgs(s.state().last_seq + 1, num)
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

    @precondition(lambda self: self.harness.reopens)
    @rule()
    def reopen(self):
        self.store.stop()
        self.store = self.harness.open_store(self.directory, self.config)

    @precondition(lambda self: self.model is not None and self.harness.reopens
                  and hasattr(self.harness, "abandon") and self.model.max_msgs < 0
                  and self.model.max_per_subject < 0)
    @rule()
    def crash_reopen(self):
        """The process dies (every record already handed to the OS): the reopened store
        recovers from what it wrote. Only without limits: nats-server writes no tombstone
        for a removal by limits, so a rebuild may bring such a message back."""
        self.harness.abandon(self.store)
        self.store = self.harness.open_store(self.directory, self.config)

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
        model, store = self.model, self.store
        state = store.state()
        got = (state.messages, state.bytes, state.first_seq, state.last_seq,
               state.deleted or [], state.num_deleted, state.num_subjects)
        deleted = model.deleted()
        expect = (len(model.msgs), model.bytes(self.harness.message_size), model.first_seq,
                  model.last_seq, deleted, len(deleted), model.num_subjects())
        assert got == expect, (got, expect)
        fast = store.fast_state()
        assert (fast.messages, fast.first_seq, fast.last_seq, fast.num_deleted) == \
            (len(model.msgs), model.first_seq, model.last_seq, len(deleted))


class ModelCases(StoreHarness):
    """The model-based test of the store under test."""

    model_examples = 80     # operation sequences Hypothesis tries
    model_steps = 50        # operations in each, at most

    def test_store_model(self):
        run_state_machine_as_test(
            lambda: StoreMachine(self),
            settings=settings(max_examples=self.model_examples,
                              stateful_step_count=self.model_steps, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow,
                                                     HealthCheck.filter_too_much]))
