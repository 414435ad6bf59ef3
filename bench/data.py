"""Deterministic inputs for the storage benchmarks.

Every generator is seeded, so two runs (and every store within one run) see exactly
the same subjects, payloads and read orders.  Nothing here touches a store.

The workload of the performance targets: ``N`` messages (one million by default),
128-byte payloads, subjects ``orders.<i % 1000>``.
"""

from __future__ import annotations

import os
import random

DEFAULT_N = 1_000_000
QUICK_N = 20_000
PAYLOAD_SIZE = 128
SUBJECT_PREFIX = "orders"
DISTINCT_SUBJECTS = 1000
SEED = 20240601

# Payloads come from a pool of this many distinct byte strings, picked by message
# index.  A prime pool size keeps the payload sequence out of step with the subject
# cycle (1000), and a pool keeps a million payloads from costing 150 MB of bytes
# objects before the first store call.
PAYLOAD_POOL_SIZE = 997


def bench_n(quick: bool = False) -> int:
    """Message count: ``JSSTORE_BENCH_N`` if set, else the quick or the full size."""
    env = os.environ.get("JSSTORE_BENCH_N")
    if env:
        n = int(env.replace("_", ""))
        if n <= 0:
            raise ValueError(f"JSSTORE_BENCH_N must be positive, got {env!r}")
        return n
    return QUICK_N if quick else DEFAULT_N


def payload_pool(size: int = PAYLOAD_SIZE, count: int = PAYLOAD_POOL_SIZE,
                 seed: int = SEED) -> list[bytes]:
    """``count`` distinct pseudo-random payloads of ``size`` bytes."""
    rng = random.Random(seed)
    return [rng.randbytes(size) for _ in range(count)]


def payloads(n: int, size: int = PAYLOAD_SIZE, seed: int = SEED) -> list[bytes]:
    """The payload of message ``i`` (0-based) is ``payloads(n)[i]``; entries share the pool."""
    pool = payload_pool(size, seed=seed)
    pool_size = len(pool)
    return [pool[i % pool_size] for i in range(n)]


def subject_names(distinct: int = DISTINCT_SUBJECTS, prefix: str = SUBJECT_PREFIX) -> list[str]:
    """The distinct subjects, ``<prefix>.0`` .. ``<prefix>.<distinct-1>``."""
    return [f"{prefix}.{k}" for k in range(distinct)]


def subjects(n: int, distinct: int = DISTINCT_SUBJECTS, prefix: str = SUBJECT_PREFIX) -> list[str]:
    """Subject of message ``i`` is ``<prefix>.<i % distinct>``; equal subjects are one object."""
    names = subject_names(distinct, prefix)
    return [names[i % distinct] for i in range(n)]


def messages(n: int, distinct: int = DISTINCT_SUBJECTS, size: int = PAYLOAD_SIZE,
             seed: int = SEED) -> list[tuple[str, None, bytes]]:
    """``(subject, None, payload)`` tuples, the argument shape of ``store_batch``."""
    subj = subjects(n, distinct)
    data = payloads(n, size, seed)
    return [(subj[i], None, data[i]) for i in range(n)]


def distinct_subject_chunks(n: int, chunk: int = 1000, size: int = PAYLOAD_SIZE,
                            prefix: str = SUBJECT_PREFIX, seed: int = SEED):
    """Yield ``n`` messages with ``n`` distinct subjects, ``chunk`` at a time.

    Used by the memory probe: producing the input in small chunks keeps the
    benchmark's own objects out of the resident-memory figure of the store.
    """
    pool = payload_pool(size, seed=seed)
    pool_size = len(pool)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        yield [(f"{prefix}.{i}", None, pool[i % pool_size]) for i in range(start, stop)]


def random_seqs(count: int, first_seq: int, last_seq: int, seed: int = SEED + 1) -> list[int]:
    """``count`` uniformly random sequences in ``[first_seq, last_seq]`` (with repeats)."""
    if last_seq < first_seq:
        raise ValueError("empty sequence range")
    rng = random.Random(seed)
    return [rng.randint(first_seq, last_seq) for _ in range(count)]


def random_subject_queries(count: int, distinct: int = DISTINCT_SUBJECTS,
                           seed: int = SEED + 2) -> list[str]:
    """``count`` subjects drawn at random (with repeats) from the ``distinct`` subjects."""
    names = subject_names(distinct)
    rng = random.Random(seed)
    return [names[rng.randrange(distinct)] for _ in range(count)]


def random_pending_queries(count: int, last_seq: int, distinct: int = DISTINCT_SUBJECTS,
                           seed: int = SEED + 3) -> list[tuple[int, str]]:
    """``count`` ``(start sequence, subject)`` pairs for filtered pending counts."""
    names = subject_names(distinct)
    rng = random.Random(seed)
    return [(rng.randint(1, last_seq), names[rng.randrange(distinct)]) for _ in range(count)]
