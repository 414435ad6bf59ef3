"""The stores jsstore is measured against: SQLite and LMDB, set up as the targets say.

Both classes offer the same small surface as the jsstore calls they stand beside:

* ``store_one(subject, hdr, data) -> (seq, ts)`` — one call per message;
* ``store_batch(msgs) -> (first_seq, last_seq)`` — ``msgs`` is ``[(subject, hdr, data), ...]``;
* ``flush()`` — commit whatever ``store_one`` still buffers;
* ``load(seq) -> (subject, ts, hdr, data)`` — point read (``None`` when absent);
* SQLite only: ``load_last(subject)`` and ``num_pending(start_seq, subject)``, both
  answered from the ``(subj, seq)`` index.

Sequences start at 1 and timestamps are Unix nanoseconds taken per message, as in
jsstore.  Durability is matched to jsstore's default (every write handed to the OS,
no fsync per commit): SQLite's WAL with ``synchronous=NORMAL`` and LMDB opened with
``sync=False`` both survive a process crash but not a power cut.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import time

import lmdb

ROWS_PER_TRANSACTION = 1000

# LMDB maps its file up to this size; the file itself only grows as pages are used.
DEFAULT_LMDB_MAP_SIZE = 64 << 30

_LMDB_KEY = struct.Struct(">Q")  # 8-byte big-endian sequence: keys sort in sequence order
# LMDB value: ts i64 | subject length u16 | header length u32 | subject | header | data
_LMDB_HEAD = struct.Struct("<qHI")


def _chunks(items, size: int = ROWS_PER_TRANSACTION):
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class SQLiteBaseline:
    """SQLite (stdlib), WAL, ``synchronous=NORMAL``, 1000 rows a transaction via ``executemany``.

    Table ``msgs(seq INTEGER PRIMARY KEY, subj, ts, hdr, data)`` with an index on
    ``(subj, seq)`` that exists while writing, so its upkeep is part of the write cost
    (as jsstore keeps its per-subject state up to date on every store).
    """

    def __init__(self, path: str):
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS msgs ("
            " seq INTEGER PRIMARY KEY, subj TEXT NOT NULL, ts INTEGER NOT NULL,"
            " hdr BLOB, data BLOB NOT NULL)"
        )
        self.conn.execute("CREATE INDEX IF NOT EXISTS msgs_subj_seq ON msgs (subj, seq)")
        self.last_seq = self.conn.execute("SELECT coalesce(max(seq), 0) FROM msgs").fetchone()[0]
        self._pending_rows: list[tuple] = []
        self._read_cursor = self.conn.cursor()

    def _write_rows(self, rows: list[tuple]) -> None:
        self.conn.execute("BEGIN")
        self.conn.executemany(
            "INSERT INTO msgs (seq, subj, ts, hdr, data) VALUES (?, ?, ?, ?, ?)", rows
        )
        self.conn.execute("COMMIT")

    def store_one(self, subject: str, hdr: bytes | None, data: bytes) -> tuple[int, int]:
        # jsstore is called once per message here, but SQLite is not: "one call per
        # message" for this baseline still buffers rows and writes them with the same
        # executemany of 1000 rows per transaction as store_batch.  A transaction per
        # row would measure SQLite's commit cost, not its storage engine.
        self.last_seq += 1
        ts = time.time_ns()
        self._pending_rows.append((self.last_seq, subject, ts, hdr, data))
        if len(self._pending_rows) == ROWS_PER_TRANSACTION:
            self._write_rows(self._pending_rows)
            self._pending_rows = []
        return self.last_seq, ts

    def flush(self) -> None:
        if self._pending_rows:
            self._write_rows(self._pending_rows)
            self._pending_rows = []

    def store_batch(self, msgs) -> tuple[int, int]:
        self.flush()
        first_seq = self.last_seq + 1
        for chunk in _chunks(msgs):
            rows = []
            for subject, hdr, data in chunk:
                self.last_seq += 1
                rows.append((self.last_seq, subject, time.time_ns(), hdr, data))
            self._write_rows(rows)
        return first_seq, self.last_seq

    def load(self, seq: int):
        cur = self._read_cursor
        cur.execute("SELECT subj, ts, hdr, data FROM msgs WHERE seq = ?", (seq,))
        return cur.fetchone()

    def load_last(self, subject: str):
        """Last message on ``subject`` as ``(seq, ts, hdr, data)``; uses the (subj, seq) index."""
        cur = self._read_cursor
        cur.execute(
            "SELECT seq, ts, hdr, data FROM msgs WHERE subj = ? ORDER BY seq DESC LIMIT 1",
            (subject,),
        )
        return cur.fetchone()

    def num_pending(self, start_seq: int, subject: str) -> int:
        """Messages on ``subject`` at or after ``start_seq``; a range count on the index."""
        cur = self._read_cursor
        cur.execute("SELECT count(*) FROM msgs WHERE subj = ? AND seq >= ?", (subject, start_seq))
        return cur.fetchone()[0]

    def uses_index(self) -> bool:
        """True when SQLite plans both per-subject queries on the (subj, seq) index."""
        plans = []
        for sql, args in (
            ("SELECT seq, ts, hdr, data FROM msgs WHERE subj = ? ORDER BY seq DESC LIMIT 1", ("x",)),
            ("SELECT count(*) FROM msgs WHERE subj = ? AND seq >= ?", ("x", 1)),
        ):
            rows = self.conn.execute("EXPLAIN QUERY PLAN " + sql, args).fetchall()
            plans.append(" ".join(str(row[-1]) for row in rows))
        return all("msgs_subj_seq" in plan for plan in plans)

    def close(self) -> None:
        self.flush()
        self._read_cursor.close()
        self.conn.close()


class LMDBBaseline:
    """LMDB (py-lmdb): key = sequence as 8 bytes big-endian, value = (subject, ts, hdr, data).

    Writes commit every 1000 puts.  Point reads run ``txn.get`` inside one read
    transaction opened by ``begin_reads()``, and decode the value into the same
    ``(subject, ts, hdr, data)`` fields a jsstore load returns.
    """

    def __init__(self, path: str, map_size: int = DEFAULT_LMDB_MAP_SIZE):
        os.makedirs(path, exist_ok=True)
        self.path = path
        self.env = lmdb.open(path, map_size=map_size, sync=False, metasync=False,
                             max_dbs=0, readahead=True)
        with self.env.begin() as txn:
            with txn.cursor() as cursor:
                self.last_seq = _LMDB_KEY.unpack(cursor.key())[0] if cursor.last() else 0
        self._write_txn = None
        self._puts_in_txn = 0
        self._read_txn = None

    @staticmethod
    def encode(subject: str, ts: int, hdr: bytes | None, data: bytes) -> bytes:
        subj = subject.encode()
        hdr = hdr or b""
        return _LMDB_HEAD.pack(ts, len(subj), len(hdr)) + subj + hdr + data

    @staticmethod
    def decode(value: bytes):
        ts, subject_len, hdr_len = _LMDB_HEAD.unpack_from(value)
        pos = _LMDB_HEAD.size
        subject = value[pos:pos + subject_len].decode()
        pos += subject_len
        hdr = value[pos:pos + hdr_len] if hdr_len else None
        return subject, ts, hdr, value[pos + hdr_len:]

    def store_one(self, subject: str, hdr: bytes | None, data: bytes) -> tuple[int, int]:
        if self._write_txn is None:
            self._write_txn = self.env.begin(write=True)
        self.last_seq += 1
        ts = time.time_ns()
        self._write_txn.put(_LMDB_KEY.pack(self.last_seq), self.encode(subject, ts, hdr, data),
                            append=True)
        self._puts_in_txn += 1
        if self._puts_in_txn == ROWS_PER_TRANSACTION:
            self.flush()
        return self.last_seq, ts

    def flush(self) -> None:
        if self._write_txn is not None:
            self._write_txn.commit()
            self._write_txn = None
            self._puts_in_txn = 0

    def store_batch(self, msgs) -> tuple[int, int]:
        self.flush()
        first_seq = self.last_seq + 1
        key = _LMDB_KEY.pack
        encode = self.encode
        for chunk in _chunks(msgs):
            items = []
            for subject, hdr, data in chunk:
                self.last_seq += 1
                items.append((key(self.last_seq), encode(subject, time.time_ns(), hdr, data)))
            with self.env.begin(write=True) as txn:
                # putmulti with append=True: the fastest way py-lmdb offers to add
                # keys in order, so the baseline is as strong as it can be.
                txn.cursor().putmulti(items, append=True)
        return first_seq, self.last_seq

    def begin_reads(self) -> None:
        self.flush()
        self.end_reads()
        self._read_txn = self.env.begin(buffers=False)

    def end_reads(self) -> None:
        if self._read_txn is not None:
            self._read_txn.abort()
            self._read_txn = None

    def load(self, seq: int):
        if self._read_txn is None:
            self.begin_reads()
        value = self._read_txn.get(_LMDB_KEY.pack(seq))
        return None if value is None else self.decode(value)

    def close(self) -> None:
        self.end_reads()
        self.flush()
        self.env.close()
