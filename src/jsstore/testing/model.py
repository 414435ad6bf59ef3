"""A plain-Python model of a stream store, the oracle of the kit's model-based test
(``jsstore.testing.machine``).

It keeps every live message in a dict (seq -> (subject, hdr, msg)) plus the stream's
first and last sequence, and applies nats-server's rules: sequences never go back, the
first sequence of an empty stream is last_seq + 1, limits remove the oldest messages
(max_msgs, max_msgs_per_subject), purge_ex counts `keep` over the whole filter.
Nothing here is fast; everything here is easy to read.
"""

from __future__ import annotations

from jsstore import errors
from jsstore.store.contract import SimpleState


def subject_matches(filter: str, subject: str) -> bool:
    """NATS subject matching: "*" is one token, ">" the rest (one or more tokens)."""
    if filter in ("", ">"):
        return True
    ftoks = filter.split(".")
    stoks = subject.split(".")
    for i, ft in enumerate(ftoks):
        if ft == ">":
            return len(stoks) > i
        if i >= len(stoks):
            return False
        if ft != "*" and ft != stoks[i]:
            return False
    return len(ftoks) == len(stoks)


def filter_matches(filters, subject: str) -> bool:
    if isinstance(filters, str):
        return subject_matches(filters, subject)
    return any(subject_matches(f, subject) for f in filters) if filters else True


class StoreModel:
    """The stream a store should hold after the same operations (max_msgs and
    max_msgs_per_subject as its only limits)."""

    def __init__(self, max_msgs: int = -1, max_msgs_per_subject: int = -1):
        self.msgs: dict[int, tuple[str, bytes | None, bytes]] = {}
        self.first_seq = 0      # nats-server: 0 until anything happens, then last_seq + 1
        self.last_seq = 0
        self.max_msgs = max_msgs
        self.max_per_subject = max_msgs_per_subject

    # -- helpers -------------------------------------------------------------------
    def _fix_first(self) -> None:
        # an empty stream continues after its last sequence; at last_seq 0 it reports 0
        self.first_seq = min(self.msgs) if self.msgs else (self.last_seq + 1 if self.last_seq else 0)

    def _remove(self, seq: int) -> bool:
        if seq not in self.msgs:
            return False
        del self.msgs[seq]
        self._fix_first()
        return True

    def _matching(self, filters, start: int = 0, end: int | None = None) -> list[int]:
        end = self.last_seq if end is None else end
        return sorted(s for s, (subj, _, _) in self.msgs.items()
                      if start <= s <= end and filter_matches(filters, subj))

    # -- writing -------------------------------------------------------------------
    def store(self, subject: str, hdr: bytes | None, msg: bytes) -> int:
        self.last_seq += 1
        seq = self.last_seq
        if not self.msgs:
            self.first_seq = seq
        self.msgs[seq] = (subject, hdr if hdr else None, msg)
        if self.max_per_subject > 0:
            same = self._matching(subject)
            for old in same[: max(0, len(same) - self.max_per_subject)]:
                self._remove(old)
        if self.max_msgs > 0:
            while len(self.msgs) > self.max_msgs:
                self._remove(self.first_seq)
        return seq

    def skip(self, num: int = 1) -> None:
        self.last_seq += num
        if not self.msgs:
            self.first_seq = self.last_seq + 1

    # -- removing ------------------------------------------------------------------
    def remove(self, seq: int) -> bool:
        return self._remove(seq)

    def purge(self) -> int:
        count = len(self.msgs)
        self.msgs.clear()
        # a stream that never held a sequence stays at 0 (nothing to continue after)
        self.first_seq = self.last_seq + 1 if self.last_seq else 0
        return count

    def compact(self, seq: int) -> int:
        if seq == 0:
            return self.purge()
        if seq > self.last_seq:
            count = self.purge()
            self.last_seq = max(self.last_seq, seq - 1)
            self._fix_first()
            return count
        below = [s for s in self.msgs if s < seq]
        for s in below:
            del self.msgs[s]
        self._fix_first()
        return len(below)

    def purge_ex(self, subject: str, seq: int, keep: int) -> int:
        if subject in ("", ">"):
            if keep == 0 and seq == 0:
                return self.purge()
            if seq > 1:
                return self.compact(seq)
            if 0 < keep < len(self.msgs):
                return self.compact(self.last_seq - keep + 1)
            return 0
        matching = self._matching(subject)
        if not matching:
            return 0
        to_remove = len(matching)
        if keep > 0:
            if keep >= to_remove:
                return 0
            to_remove -= keep
        last = seq - 1 if seq > 1 else matching[-1]
        victims = [s for s in matching if s <= last][:to_remove]
        for s in victims:
            self._remove(s)
        return len(victims)

    def truncate(self, seq: int) -> None:
        if seq >= self.last_seq:
            return
        for s in [s for s in self.msgs if s > seq]:
            del self.msgs[s]
        self.last_seq = seq
        self._fix_first()

    # -- reading -------------------------------------------------------------------
    def load(self, seq: int):
        if seq == 0:
            seq = self.first_seq if self.msgs else self.last_seq + 1
        if seq > self.last_seq:
            raise errors.StoreEOF()
        if seq not in self.msgs:
            raise errors.MsgNotFound()
        return (seq,) + self.msgs[seq]

    def load_next(self, filters, start: int):
        found = self._matching(filters, start)
        if not found:
            raise errors.StoreEOF()
        return (found[0],) + self.msgs[found[0]]

    def load_last(self, subject: str):
        found = self._matching(subject)
        if not found:
            raise errors.MsgNotFound()
        return (found[-1],) + self.msgs[found[-1]]

    def filtered_state(self, sseq: int, subject: str) -> SimpleState:
        found = self._matching(subject, sseq)
        return SimpleState(len(found), found[0], found[-1]) if found else SimpleState(0, 0, 0)

    def subjects_state(self, filters) -> dict[str, SimpleState]:
        out: dict[str, SimpleState] = {}
        for seq in self._matching(filters):
            subj = self.msgs[seq][0]
            ss = out.setdefault(subj, SimpleState(0, seq, seq))
            ss.msgs += 1
            ss.last = seq
        return out

    def num_pending(self, sseq: int, filters, last_per_subject: bool) -> tuple[int, int]:
        if not last_per_subject:
            return len(self._matching(filters, sseq)), self.last_seq
        lasts = {ss.last for ss in self.subjects_state(filters).values()}
        return sum(1 for s in lasts if s >= sseq), self.last_seq

    def multi_last_seqs(self, filters, max_seq: int) -> list[int]:
        bound = self.last_seq if max_seq == 0 else min(max_seq, self.last_seq)
        lasts: dict[str, int] = {}
        for seq in self._matching(filters, 0, bound):
            lasts[self.msgs[seq][0]] = seq
        return sorted(lasts.values())

    # -- state ---------------------------------------------------------------------
    def deleted(self) -> list[int]:
        if not self.msgs:
            return []
        return [s for s in range(self.first_seq, self.last_seq + 1) if s not in self.msgs]

    def num_subjects(self) -> int:
        return len({subj for subj, _, _ in self.msgs.values()})

    def bytes(self, message_size) -> int:
        """The live messages' size, each counted by message_size(subject, hdr, msg)."""
        return sum(message_size(*m) for m in self.msgs.values())
