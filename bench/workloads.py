"""The measured operations, one driver class per store.

A driver wraps one open store and runs a whole workload in one method
(``store_each``, ``store_batches``, ``load_points``, ``load_lasts``,
``pending_counts``), so the loop around the store calls is the same plain Python
loop for every store and only the call inside differs.  The pytest-benchmark suite
and ``report.py`` both time these methods.

Each driver also answers single look-ups in one normalised shape (``message``,
``last_seq``, ``pending``); ``verify`` uses them, outside any timing, to check that a
store holds what was written before its speed is believed.
"""

from __future__ import annotations

import os

from baselines import LMDBBaseline, SQLiteBaseline

STREAM_NAME = "ORDERS"
STREAM_SUBJECTS = ["orders.>"]
BATCH_SIZE = 1000


def split_batches(msgs: list, size: int = BATCH_SIZE) -> list[list]:
    """``msgs`` cut into lists of ``size``: one ``store_batch`` call (one baseline transaction) each."""
    return [msgs[i:i + size] for i in range(0, len(msgs), size)]


def stream_config(storage: str = "file"):
    from jsstore.store.config import StoreConfig

    return StoreConfig(name=STREAM_NAME, subjects=list(STREAM_SUBJECTS), storage=storage)


class JsstoreDriver:
    """Shared by the file and memory store: both implement the StreamStore contract."""

    name = "jsstore"
    subject_queries = True

    def __init__(self, store):
        self.store = store

    def store_each(self, msgs) -> None:
        store_msg = self.store.store_msg
        for subject, hdr, data in msgs:
            store_msg(subject, hdr, data)
        self.store.flush_all_pending()

    def store_batches(self, batches) -> None:
        store_batch = self.store.store_batch
        for batch in batches:
            store_batch(batch)
        self.store.flush_all_pending()

    def load_points(self, seqs) -> None:
        load_msg = self.store.load_msg
        for seq in seqs:
            load_msg(seq)

    def load_lasts(self, subjects) -> None:
        load_last_msg = self.store.load_last_msg
        for subject in subjects:
            load_last_msg(subject)

    def pending_counts(self, queries) -> None:
        num_pending = self.store.num_pending
        for start_seq, subject in queries:
            num_pending(start_seq, subject, False)

    def message(self, seq: int) -> tuple[str, bytes]:
        msg = self.store.load_msg(seq)
        if msg.seq != seq:
            raise AssertionError(f"load_msg({seq}) returned seq {msg.seq}")
        return msg.subject, bytes(msg.msg)

    def last_seq(self, subject: str) -> int:
        return self.store.load_last_msg(subject).seq

    def pending(self, start_seq: int, subject: str) -> int:
        return self.store.num_pending(start_seq, subject, False)[0]

    def close(self) -> None:
        self.store.stop()


class JsstoreFileDriver(JsstoreDriver):
    name = "jsstore file"

    def __init__(self, directory: str, options=None):
        import jsstore
        from jsstore.store.config import StoreOptions

        super().__init__(jsstore.FileStore(os.path.join(directory, STREAM_NAME),
                                           stream_config("file"), options or StoreOptions()))


class JsstoreMemoryDriver(JsstoreDriver):
    name = "jsstore memory"

    def __init__(self, directory: str | None = None):
        import jsstore

        super().__init__(jsstore.MemStore(stream_config("memory")))


class SQLiteDriver:
    name = "sqlite"
    subject_queries = True

    def __init__(self, directory: str):
        self.store = SQLiteBaseline(os.path.join(directory, "msgs.sqlite"))

    def store_each(self, msgs) -> None:
        store_one = self.store.store_one
        for subject, hdr, data in msgs:
            store_one(subject, hdr, data)
        self.store.flush()

    def store_batches(self, batches) -> None:
        store_batch = self.store.store_batch
        for batch in batches:
            store_batch(batch)

    def load_points(self, seqs) -> None:
        load = self.store.load
        for seq in seqs:
            load(seq)

    def load_lasts(self, subjects) -> None:
        load_last = self.store.load_last
        for subject in subjects:
            load_last(subject)

    def pending_counts(self, queries) -> None:
        num_pending = self.store.num_pending
        for start_seq, subject in queries:
            num_pending(start_seq, subject)

    def message(self, seq: int) -> tuple[str, bytes]:
        subject, _ts, _hdr, data = self.store.load(seq)
        return subject, data

    def last_seq(self, subject: str) -> int:
        return self.store.load_last(subject)[0]

    def pending(self, start_seq: int, subject: str) -> int:
        return self.store.num_pending(start_seq, subject)

    def close(self) -> None:
        self.store.close()


class LMDBDriver:
    name = "lmdb"
    subject_queries = False  # no secondary index: the targets compare LMDB on writes and point reads

    def __init__(self, directory: str):
        self.store = LMDBBaseline(os.path.join(directory, "lmdb"))

    def store_each(self, msgs) -> None:
        store_one = self.store.store_one
        for subject, hdr, data in msgs:
            store_one(subject, hdr, data)
        self.store.flush()

    def store_batches(self, batches) -> None:
        store_batch = self.store.store_batch
        for batch in batches:
            store_batch(batch)

    def load_points(self, seqs) -> None:
        self.store.begin_reads()
        load = self.store.load
        for seq in seqs:
            load(seq)
        self.store.end_reads()

    def message(self, seq: int) -> tuple[str, bytes]:
        subject, _ts, _hdr, data = self.store.load(seq)
        return subject, data

    def close(self) -> None:
        self.store.close()


DRIVERS = {
    "jsstore-file": JsstoreFileDriver,
    "jsstore-memory": JsstoreMemoryDriver,
    "sqlite": SQLiteDriver,
    "lmdb": LMDBDriver,
}


def expected_last_seq(subject_index: int, n: int, distinct: int) -> int:
    """Last sequence of ``orders.<subject_index>`` when message ``i`` (seq ``i+1``) has subject ``i % distinct``."""
    if subject_index >= n:
        return 0
    last_index = subject_index + ((n - 1 - subject_index) // distinct) * distinct
    return last_index + 1


def expected_pending(start_seq: int, subject_index: int, n: int, distinct: int) -> int:
    """Messages of ``orders.<subject_index>`` with sequence >= ``start_seq``."""
    def upto(last_index: int) -> int:  # messages of the subject among indexes 0..last_index
        if last_index < subject_index:
            return 0
        return (last_index - subject_index) // distinct + 1

    return upto(n - 1) - upto(start_seq - 2)


def verify(driver, msgs: list, distinct: int, samples: int = 200) -> None:
    """Check that ``driver`` holds ``msgs`` as seqs 1..len(msgs); raise AssertionError if not."""
    import random

    n = len(msgs)
    rng = random.Random(7)
    seqs = {1, n} | {rng.randint(1, n) for _ in range(samples)}
    for seq in sorted(seqs):
        subject, _hdr, data = msgs[seq - 1]
        got_subject, got_data = driver.message(seq)
        if (got_subject, got_data) != (subject, data):
            raise AssertionError(f"{driver.name}: message {seq} differs from what was stored")
    if not driver.subject_queries:
        return
    for _ in range(min(samples, distinct)):
        k = rng.randrange(distinct)
        subject = f"orders.{k}"
        want = expected_last_seq(k, n, distinct)
        if want and driver.last_seq(subject) != want:
            raise AssertionError(f"{driver.name}: last seq of {subject} is not {want}")
        start_seq = rng.randint(1, n)
        want = expected_pending(start_seq, k, n, distinct)
        got = driver.pending(start_seq, subject)
        if got != want:
            raise AssertionError(f"{driver.name}: pending({start_seq}, {subject}) = {got}, want {want}")
