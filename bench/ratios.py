"""Ratios to a same-run baseline, for pytest-benchmark runs of bench/test_bench_*.py.

Each benchmark names what it measures (its contender) and the contender of its group it is
compared with (its baseline: SQLite, LMDB or nats-server).  The JSON a run writes then
carries, per benchmark, `ratio` = the baseline's time / its own (above 1: faster than the
baseline), both taken as the fastest round: on a machine shared with other work, the
fastest of a few rounds is the one least disturbed, where a median still moves with the
load.  bench/compare.py compares two runs by these ratios: the times of two runs differ
by more than a regression would, their ratios much less."""

from __future__ import annotations


def record_contender(benchmark, name: str, baseline: str) -> None:
    """Name what this benchmark measures and which contender of its group it is compared
    with; the JSON of the run then carries its ratio to that baseline (add_ratios)."""
    benchmark.extra_info["contender"] = name
    benchmark.extra_info["baseline"] = baseline


def add_ratios(benchmarks: list[dict]) -> None:
    """Set extra_info["ratio"] on every benchmark of a run's JSON whose group has its
    baseline measured."""
    fastest = {}
    for bench in benchmarks:
        info = bench.get("extra_info") or {}
        if "contender" in info:
            fastest[(bench["group"], info["contender"])] = bench["stats"]["min"]
    for bench in benchmarks:
        info = bench.get("extra_info") or {}
        base = fastest.get((bench["group"], info.get("baseline")))
        if base is not None and bench["stats"]["min"] > 0:
            info["ratio"] = base / bench["stats"]["min"]
