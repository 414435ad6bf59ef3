"""The read side of SqliteStore: loads and state queries as SQL over the ``msgs`` table.

Subject filters use NATS matching (``*`` one token, ``>`` the rest; ``""`` and ``">"`` all),
registered with SQLite as the function ``matches(subject, filter)``; a filter argument may
be a list of filters (any of them).
"""

from __future__ import annotations

from dataclasses import dataclass

from jsstore import errors
from jsstore.state import SimpleState, StreamState

COLUMNS = "subject, hdr, msg, seq, ts"


@dataclass(slots=True)
class StoredMsg:
    subject: str
    hdr: bytes | None
    msg: bytes
    seq: int
    ts: int


def matches(subject: str, filter: str) -> bool:
    """NATS subject matching of one stored subject against one filter."""
    if filter in ("", ">"):
        return True
    ftoks, stoks = filter.split("."), subject.split(".")
    for i, ft in enumerate(ftoks):
        if ft == ">":
            return len(stoks) > i
        if i >= len(stoks) or (ft != "*" and ft != stoks[i]):
            return False
    return len(ftoks) == len(stoks)


def _where(filter) -> tuple[str, tuple]:
    """An SQL condition on `subject` for a filter or a list of filters, and its arguments."""
    filters = [filter] if isinstance(filter, str) else list(filter)
    if not filters or any(f in ("", ">") for f in filters):
        return "1", ()
    return "(" + " OR ".join("matches(subject, ?)" for _ in filters) + ")", tuple(filters)


class SqliteQueries:
    """Loads and queries; the store keeps `db`, `closed`, `first_seq`, `last_seq`, `msgs`,
    `bytes`, `first_ts` and `last_ts` (SqliteStore)."""

    def _one(self, sql: str, args: tuple):
        self._check()
        row = self.db.execute(sql, args).fetchone()
        return StoredMsg(*row) if row else None

    def load_msg(self, seq: int):
        self._check()
        if seq == 0:
            seq = self.first_seq if self.msgs else self.last_seq + 1
        if seq > self.last_seq:
            raise errors.StoreEOF()
        found = self._one(f"SELECT {COLUMNS} FROM msgs WHERE seq = ?", (seq,))
        if found is None:
            raise errors.MsgNotFound()
        return found

    def load_next_msg(self, filter, start: int):
        cond, args = _where(filter)
        found = self._one(f"SELECT {COLUMNS} FROM msgs WHERE seq >= ? AND {cond} ORDER BY seq"
                          " LIMIT 1", (start, *args))
        if found is None:
            raise errors.StoreEOF()
        return found, found.seq

    def load_prev_msg(self, filter, start: int):
        cond, args = _where(filter)
        found = self._one(f"SELECT {COLUMNS} FROM msgs WHERE seq <= ? AND {cond} ORDER BY seq"
                          " DESC LIMIT 1", (start, *args))
        if found is None:
            raise errors.StoreEOF()
        return found

    def load_last_msg(self, subject: str):
        cond, args = _where(subject)
        found = self._one(f"SELECT {COLUMNS} FROM msgs WHERE {cond} ORDER BY seq DESC LIMIT 1",
                          args)
        if found is None:
            raise errors.MsgNotFound()
        return found

    def subject_for_seq(self, seq: int) -> str:
        return self.load_msg(seq).subject

    def get_seq_from_time(self, ts: int) -> int:
        self._check()
        row = self.db.execute("SELECT seq FROM msgs WHERE ts >= ? ORDER BY seq LIMIT 1",
                              (ts,)).fetchone()
        return row[0] if row else self.last_seq + 1

    # -- state --------------------------------------------------------------------------
    def _deleted(self) -> list[int]:
        if not self.msgs:
            return []
        present = {s for (s,) in self.db.execute("SELECT seq FROM msgs")}
        return [s for s in range(self.first_seq, self.last_seq + 1) if s not in present]

    def state(self) -> StreamState:
        self._check()
        deleted = self._deleted()
        subjects = self.db.execute("SELECT count(DISTINCT subject) FROM msgs").fetchone()[0]
        return StreamState(messages=self.msgs, bytes=self.bytes, first_seq=self.first_seq,
                           first_ts=self.first_ts, last_seq=self.last_seq,
                           last_ts=self.last_ts, num_subjects=subjects,
                           num_deleted=len(deleted), deleted=deleted or None)

    def fast_state(self) -> StreamState:
        state = self.state()
        state.deleted = None
        return state

    def filtered_state(self, sseq: int, subject: str) -> SimpleState:
        self._check()
        cond, args = _where(subject)
        count, first, last = self.db.execute(
            f"SELECT count(*), min(seq), max(seq) FROM msgs WHERE seq >= ? AND {cond}",
            (sseq, *args)).fetchone()
        return SimpleState(count, first, last) if count else SimpleState(0, 0, 0)

    def subjects_state(self, filter: str) -> dict[str, SimpleState]:
        self._check()
        cond, args = _where(filter)
        return {subject: SimpleState(count, first, last) for subject, count, first, last in
                self.db.execute(f"SELECT subject, count(*), min(seq), max(seq) FROM msgs"
                                f" WHERE {cond} GROUP BY subject ORDER BY min(seq)", args)}

    def subjects_totals(self, filter: str) -> dict[str, int]:
        return {subject: ss.msgs for subject, ss in self.subjects_state(filter).items()}

    def num_pending(self, sseq: int, filter, last_per_subject: bool = False) -> tuple[int, int]:
        self._check()
        cond, args = _where(filter)
        if last_per_subject:
            sql = f"SELECT count(*) FROM (SELECT max(seq) AS last FROM msgs WHERE {cond}" \
                  " GROUP BY subject) WHERE last >= ?"
            return self.db.execute(sql, (*args, sseq)).fetchone()[0], self.last_seq
        sql = f"SELECT count(*) FROM msgs WHERE seq >= ? AND {cond}"
        return self.db.execute(sql, (sseq, *args)).fetchone()[0], self.last_seq

    def multi_last_seqs(self, filters, max_seq: int, max_allowed: int) -> list[int]:
        self._check()
        cond, args = _where(filters)
        bound = self.last_seq if max_seq == 0 else min(max_seq, self.last_seq)
        found = sorted(s for (s,) in self.db.execute(
            f"SELECT max(seq) FROM msgs WHERE seq <= ? AND {cond} GROUP BY subject",
            (bound, *args)))
        if max_allowed > 0 and len(found) > max_allowed:
            raise errors.TooManyResults()
        return found

    def all_last_seqs(self) -> list[int]:
        return self.multi_last_seqs([">"], 0, 0)
