"""SqliteStore: a jsstore stream store (``jsstore.store.contract.StreamStore``) whose messages
live in one SQLite database, ``<stream dir>/messages.sqlite3``.

    msgs(seq INTEGER PRIMARY KEY, subject, hdr, msg, ts, ttl)   one row per live message
    stream(key PRIMARY KEY, value)                              last_seq and last_ts

Everything about messages is SQL here: numbering, limits, removals and every query (the
read side is ``SqliteQueries``).  It does not build on ``jsstore.store.base.StoreBase``:
that is jsstore's block engine (the Cython ``BlockStore`` with its in-memory block cache),
not a set of primitives another storage could supply.  What it reuses of jsstore: the error
classes and state values of the contract, ``StoreConfig`` (``store_config_of``), the
per-message TTL schedule (``jsstore.store.ttl.TTLSchedule``, rebuilt from the ``ttl`` column
on open), and for consumers jsstore's ``FileConsumerStore``: consumer state is kept in
nats-server's ``obs/<consumer>/o.dat`` files beside the database, not in SQLite, which is
how the JetStream finds durable consumers again after a restart.  A snapshot is taken by
copying the messages into a temporary ``FileStore`` (jsstore's snapshot format).

Durability: every change is one SQLite transaction.  With ``StoreOptions(sync="always")``
SQLite syncs each one (``synchronous=FULL``); otherwise it hands them to the OS without
syncing (``synchronous=OFF``): a process crash loses nothing, a power loss may.  Erased
messages are overwritten on disk (``secure_delete``).  Byte accounting is nats-server's file
store's, so limits in bytes mean what they mean for FileStore.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
import time

from jsstore import errors
from jsstore.store.config import StoreConfig, StoreOptions, store_config_of
from jsstore.store.consumerstore import FileConsumerStore, MemConsumerStore
from jsstore.store.contract import FILE_STORAGE
from jsstore.store.filestore import FileStore
from jsstore.store.ttl import TTLSchedule

from .queries import SqliteQueries, StoredMsg, matches

DATABASE = "messages.sqlite3"
SECOND = 1_000_000_000
SCHEMA = """
CREATE TABLE IF NOT EXISTS msgs (seq INTEGER PRIMARY KEY, subject TEXT NOT NULL, hdr BLOB,
                                 msg BLOB NOT NULL, ts INTEGER NOT NULL, ttl INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS msgs_by_subject ON msgs (subject, seq);
CREATE TABLE IF NOT EXISTS stream (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


def msg_size(subject: str, hdr: bytes | None, msg: bytes) -> int:
    """nats-server's file store size of a message (what max_bytes counts)."""
    return 22 + len(subject.encode()) + len(msg) + 8 + (4 + len(hdr) if hdr else 0)


class SqliteStore(SqliteQueries):
    defer_ttl_expiry = False

    def __init__(self, directory: str, config: StoreConfig, options: StoreOptions | None = None):
        self.config = store_config_of(config)
        self.name = self.config.name
        self.directory = os.fspath(directory)
        self.options = options or StoreOptions()
        os.makedirs(self.directory, exist_ok=True)
        self.db = sqlite3.connect(os.path.join(self.directory, DATABASE),
                                  isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA secure_delete = ON")
        self.db.execute("PRAGMA synchronous = " + ("FULL" if self.options.sync == "always" else "OFF"))
        self.db.executescript(SCHEMA)
        self.db.create_function("matches", 2, matches, deterministic=True)
        self.closed = False
        self._consumers = {}
        self.max_age = self.config.max_age if self.config.max_age > 0 else 0
        self._load()
        if self.last_seq == 0 and self.config.first_seq > 1:
            with self._tx():
                self._set_last(self.config.first_seq - 1, 0)
            self._first_changed()

    def _load(self) -> None:
        """The stream's counters and TTL schedule from the database."""
        saved = dict(self.db.execute("SELECT key, value FROM stream"))
        self.last_seq = saved.get("last_seq", 0)
        self.last_ts = saved.get("last_ts", 0)
        self._recount()
        self.ttls = TTLSchedule()
        for seq, ts, ttl in self.db.execute("SELECT seq, ts, ttl FROM msgs WHERE ttl > 0"):
            self.ttls.add(seq, ts + ttl * SECOND)
        self.next_ttl_expiry = self.ttls.next_expiry()

    @contextlib.contextmanager
    def _tx(self):
        """One transaction; on an error it is rolled back and the counters reloaded."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            self._load()
            raise
        self.db.execute("COMMIT")

    # -- bookkeeping --------------------------------------------------------------------
    def _check(self) -> None:
        if self.closed:
            raise errors.StoreClosed()

    def _set_last(self, seq: int, ts: int) -> None:
        self.last_seq, self.last_ts = seq, ts
        self.db.executemany("INSERT OR REPLACE INTO stream VALUES (?, ?)",
                            [("last_seq", seq), ("last_ts", ts)])

    def _recount(self) -> None:
        """msgs, bytes, first_seq and first_ts from the table (after a bulk change)."""
        count, size = self.db.execute(
            "SELECT count(*), coalesce(sum(22 + length(CAST(subject AS BLOB)) + length(msg) + 8"
            " + CASE WHEN hdr IS NULL THEN 0 ELSE 4 + length(hdr) END), 0) FROM msgs").fetchone()
        self.msgs, self.bytes = count, size
        self._first_changed()

    def _first_changed(self) -> None:
        row = self.db.execute("SELECT seq, ts FROM msgs ORDER BY seq LIMIT 1").fetchone()
        if row:
            self.first_seq, self.first_ts = row
        else:   # an empty stream continues after its last sequence (0: never used)
            self.first_seq, self.first_ts = (self.last_seq + 1 if self.last_seq else 0), 0

    def _subject_count(self, subject: str) -> int:
        return self.db.execute("SELECT count(*) FROM msgs WHERE subject = ?", (subject,)).fetchone()[0]

    # -- writing ------------------------------------------------------------------------
    def store_msg(self, subject, hdr, msg, ttl: int = 0):
        self._check()
        ts = max(time.time_ns(), self.last_ts + 1)
        with self._tx():
            self._store(subject, hdr, msg, self.last_seq + 1, ts, ttl, True)
        return self.last_seq, ts

    def store_raw_msg(self, subject, hdr, msg, seq, ts, ttl: int = 0,
                      discard_new_check: bool = False) -> None:
        self._check()
        if seq != self.last_seq + 1:
            raise errors.SequenceMismatch()
        with self._tx():
            self._store(subject, hdr, msg, seq, ts, ttl, discard_new_check)

    def store_batch(self, msgs):
        self._check()
        first = self.last_seq + 1
        refused = None
        with self._tx():       # (what was stored before a refusal stays, as in FileStore)
            for subject, hdr, msg in msgs:
                try:
                    self._store(subject, hdr, msg, self.last_seq + 1,
                                max(time.time_ns(), self.last_ts + 1), 0, True)
                except (errors.MaxMsgsExceeded, errors.MaxBytesExceeded,
                        errors.MaxMsgsPerSubjectExceeded, errors.MsgTooLarge) as exc:
                    refused = exc
                    break
        if refused is not None:
            raise refused
        return first, self.last_seq

    def _store(self, subject, hdr, msg, seq, ts, ttl, discard_new_check) -> None:
        hdr = bytes(hdr) if hdr else None
        msg = bytes(msg)
        cfg = self.config
        if cfg.max_msg_size > 0 and len(hdr or b"") + len(msg) > cfg.max_msg_size:
            raise errors.MsgTooLarge()
        size = msg_size(subject, hdr, msg)
        if discard_new_check and cfg.discard == "new":
            if cfg.max_msgs > 0 and self.msgs >= cfg.max_msgs:
                raise errors.MaxMsgsExceeded()
            if cfg.max_bytes > 0 and self.bytes + size > cfg.max_bytes:
                raise errors.MaxBytesExceeded()
            if (cfg.discard_new_per_subject and cfg.max_msgs_per_subject > 0
                    and self._subject_count(subject) >= cfg.max_msgs_per_subject):
                raise errors.MaxMsgsPerSubjectExceeded()
        self.db.execute("INSERT INTO msgs VALUES (?, ?, ?, ?, ?, ?)",
                        (seq, subject, hdr, msg, ts, max(ttl, 0)))
        self._set_last(seq, ts)
        self.msgs += 1
        self.bytes += size
        if self.msgs == 1:
            self.first_seq, self.first_ts = seq, ts
        if ttl > 0:
            self.ttls.add(seq, ts + ttl * SECOND)
            self.next_ttl_expiry = self.ttls.next_expiry()
        self._enforce_limits(subject, ts)
        if ts >= self.next_ttl_expiry and not self.defer_ttl_expiry:
            self._expire_ttls(ts)

    def _enforce_limits(self, subject: str | None, now: int) -> None:
        """Discard-old limits: per subject, then count, bytes and age, oldest first."""
        cfg = self.config
        if subject is not None and cfg.max_msgs_per_subject > 0:
            extra = self._subject_count(subject) - cfg.max_msgs_per_subject
            if extra > 0:
                for (seq,) in self.db.execute("SELECT seq FROM msgs WHERE subject = ? ORDER BY seq"
                                              " LIMIT ?", (subject, extra)).fetchall():
                    self._remove(seq)
        if subject is None and cfg.max_msgs_per_subject > 0:
            for (subj,) in self.db.execute("SELECT DISTINCT subject FROM msgs").fetchall():
                self._enforce_limits(subj, now)
        while cfg.max_msgs > 0 and self.msgs > cfg.max_msgs:
            self._remove(self.first_seq)
        while cfg.max_bytes > 0 and self.bytes > cfg.max_bytes:
            self._remove(self.first_seq)
        self._expire_age(now)

    def _expire_age(self, now: int) -> None:
        while self.max_age > 0 and self.msgs and self.first_ts <= now - self.max_age:
            self._remove(self.first_seq)

    def skip_msg(self, seq: int = 0) -> int:
        self.skip_msgs(seq or self.last_seq + 1, 1)
        return self.last_seq

    def skip_msgs(self, seq: int, num: int) -> None:
        self._check()
        if num == 0:
            return
        if seq != self.last_seq + 1:
            raise errors.SequenceMismatch()
        with self._tx():
            self._set_last(seq + num - 1, self.last_ts or time.time_ns())
        if self.msgs == 0:
            self.first_seq, self.first_ts = self.last_seq + 1, 0

    def flush_all_pending(self) -> None:
        """Nothing is pending: every change is a committed transaction."""

    # -- removing -----------------------------------------------------------------------
    def _remove(self, seq: int) -> bool:
        row = self.db.execute("SELECT subject, hdr, msg FROM msgs WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            return False
        self.db.execute("DELETE FROM msgs WHERE seq = ?", (seq,))
        self.msgs -= 1
        self.bytes -= msg_size(*row)
        if seq == self.first_seq:
            self._first_changed()
        return True

    def remove_msg(self, seq: int) -> bool:
        self._check()
        with self._tx():
            return self._remove(seq)

    erase_msg = remove_msg      # secure_delete overwrites the freed space
    remove_msg_via_limits = remove_msg

    def _bulk(self, where: str, args: tuple = (), keep_ttl=lambda seq: False) -> int:
        removed = self.db.execute("DELETE FROM msgs" + where, args).rowcount
        self._recount()
        self.ttls.keep(keep_ttl)
        self.next_ttl_expiry = self.ttls.next_expiry()
        return removed

    def purge(self) -> int:
        self._check()
        with self._tx():
            return self._bulk("")

    def compact(self, seq: int) -> int:
        self._check()
        if seq == 0:
            return self.purge()
        with self._tx():
            if seq > self.last_seq + 1:
                self._set_last(seq - 1, self.last_ts)
            return self._bulk(" WHERE seq < ?", (seq,), lambda s: s >= seq)

    def purge_ex(self, subject: str, seq: int = 0, keep: int = 0) -> int:
        self._check()
        if not subject or subject == ">":
            if keep == 0 and seq == 0:
                return self.purge()
            if seq > 1:
                return self.compact(seq)
            if 0 < keep < self.msgs:
                return self.compact(self.last_seq - keep + 1)
            return 0
        found = [s for (s,) in self.db.execute(
            "SELECT seq FROM msgs WHERE matches(subject, ?) ORDER BY seq", (subject,))]
        if keep >= len(found) > 0 or not found:
            return 0
        to_remove = len(found) - keep if keep > 0 else len(found)
        last = seq - 1 if seq > 1 else found[-1]
        victims = [s for s in found if s <= last][:to_remove]
        with self._tx():
            for s in victims:
                self._remove(s)
        return len(victims)

    def truncate(self, seq: int) -> None:
        self._check()
        if seq >= self.last_seq:
            return
        with self._tx():
            self.db.execute("DELETE FROM msgs WHERE seq > ?", (seq,))
            row = self.db.execute("SELECT ts FROM msgs ORDER BY seq DESC LIMIT 1").fetchone()
            self._set_last(seq, row[0] if row else 0)
            self._recount()
        self.ttls.keep(lambda s: s <= seq)
        self.next_ttl_expiry = self.ttls.next_expiry()

    # -- expiry -------------------------------------------------------------------------
    def _expire_ttls(self, now: int) -> int:
        removed = sum(self._remove(seq) for seq in self.ttls.pop_due(now))
        self.next_ttl_expiry = self.ttls.next_expiry()
        return removed

    def expire_msgs(self) -> int:
        self._check()
        now = time.time_ns()
        before = self.msgs
        with self._tx():
            self._expire_age(now)
            if not self.defer_ttl_expiry:
                self._expire_ttls(now)
        return before - self.msgs

    def pop_due_ttls(self, now: int) -> list[int]:
        due = self.ttls.pop_due(now)
        self.next_ttl_expiry = self.ttls.next_expiry()
        return due

    # -- lifecycle ----------------------------------------------------------------------
    def type(self) -> str:
        return FILE_STORAGE

    def update_config(self, config) -> None:
        self._check()
        self.config = store_config_of(config)
        self.max_age = self.config.max_age if self.config.max_age > 0 else 0
        with self._tx():
            self._enforce_limits(None, time.time_ns())

    def utilization(self) -> tuple[int, int]:
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        size = self.db.execute("PRAGMA page_size").fetchone()[0]
        return max(pages * size, self.bytes), self.bytes

    def consumer_store(self, name: str, created: int, config: dict):
        self._check()
        if config.get("mem_storage"):
            cs = MemConsumerStore(name, created, config)
        else:
            cs = FileConsumerStore(self.directory, self.name, name, created, config,
                                   sync=self.options.sync == "always")
        self._consumers[name] = cs
        return cs

    def snapshot(self, include_consumers: bool = True):
        """jsstore's snapshot format, from a temporary FileStore holding a copy of the
        messages (no consumers)."""
        self._check()
        staging = tempfile.mkdtemp(prefix="sqlite-store-snapshot-")
        try:
            copy = FileStore(os.path.join(staging, self.name), self.config,
                             StoreOptions(sync_interval=0))
            try:
                for sm in self.db.execute("SELECT subject, hdr, msg, seq, ts FROM msgs ORDER BY seq"):
                    if sm[3] > copy.last_seq + 1:
                        copy.skip_msgs(copy.last_seq + 1, sm[3] - copy.last_seq - 1)
                    copy.store_raw_msg(sm[0], sm[1], sm[2], sm[3], sm[4])
                if copy.last_seq < self.last_seq:
                    copy.skip_msgs(copy.last_seq + 1, self.last_seq - copy.last_seq)
                yield from copy.snapshot(False)
            finally:
                copy.stop()
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def stop(self) -> None:
        if self.closed:
            return
        self.closed = True
        for cs in self._consumers.values():
            cs.stop()
        self.db.close()

    def delete(self) -> None:
        self.stop()
        for suffix in ("", "-journal"):
            try:
                os.unlink(os.path.join(self.directory, DATABASE + suffix))
            except FileNotFoundError:
                pass


__all__ = ["SqliteStore", "StoredMsg", "msg_size"]
