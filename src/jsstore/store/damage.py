"""What a recovery found wrong in a stream's files: each damaged or missing file, what is
wrong with it, and what that costs.  The file store records one per file as it rebuilds
its state from the blocks; `jsstore verify` reports the same records without repairing."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Damage:
    """One damaged file: where, what is wrong, and what it costs (`lost_bytes` cut off,
    `lost_seqs` (first, last) ranges of messages gone, `lost_unknown` when some are gone
    whose sequences cannot be known)."""
    path: str
    problem: str
    lost_bytes: int = 0
    lost_seqs: list[tuple[int, int]] = field(default_factory=list)
    lost_unknown: bool = False

    @property
    def loses(self) -> bool:
        return bool(self.lost_bytes or self.lost_seqs or self.lost_unknown)


def seq_ranges(seqs) -> list[tuple[int, int]]:
    """Sorted sequences as (first, last) runs."""
    out: list[tuple[int, int]] = []
    for seq in sorted(set(seqs)):
        if out and out[-1][1] + 1 == seq:
            out[-1] = (out[-1][0], seq)
        else:
            out.append((seq, seq))
    return out
