"""Compare a pytest-benchmark run with a saved one by each benchmark's ratio to its
same-run baseline (bench/ratios.py), and fail on a regression.

    python bench/compare.py SAVED RUN [--threshold 0.25]

SAVED and RUN are pytest-benchmark JSON files, or folders of them (every *.json in each).

A benchmark regressed when its ratio in RUN fell below (1 - threshold) x its ratio in
SAVED: 0.25 by default, because one run's ratio can move by 10-15 % here without any change
(a shared two-core machine), while a real regression in a hot path moves it by more.  The
baselines themselves (ratio 1 by definition) are listed for their times only.  Exit status
1 on a regression, 2 when the files cannot be compared (missing, no ratios in common)."""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

DEFAULT_THRESHOLD = 0.25


def load(path: str) -> dict[str, dict]:
    """Every benchmark of a run's JSON file, or of every JSON file in a folder, by name."""
    paths = sorted(glob.glob(os.path.join(path, "*.json"))) if os.path.isdir(path) else [path]
    if not paths:
        raise OSError(f"no JSON files in {path}")
    out = {}
    for one in paths:
        with open(one) as f:
            run = json.load(f)
        out.update((bench["fullname"], bench) for bench in run["benchmarks"])
    return out


def compare(saved: dict[str, dict], run: dict[str, dict], threshold: float):
    """(rows, regressions): one row per benchmark in both runs that has a ratio."""
    rows, regressions = [], []
    for name in sorted(set(saved) & set(run)):
        before = (saved[name].get("extra_info") or {}).get("ratio")
        after = (run[name].get("extra_info") or {}).get("ratio")
        info = run[name].get("extra_info") or {}
        if before is None or after is None or info.get("contender") == info.get("baseline"):
            continue
        change = after / before
        regressed = change < 1 - threshold
        rows.append((name, before, after, change, regressed))
        if regressed:
            regressions.append(name)
    return rows, regressions


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("saved")
    parser.add_argument("run")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    args = parser.parse_args(argv)
    try:
        saved, run = load(args.saved), load(args.run)
    except (OSError, ValueError, KeyError) as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    rows, regressions = compare(saved, run, args.threshold)
    if not rows:
        print("compare: no benchmark with a ratio in both runs", file=sys.stderr)
        return 2
    print(f"| benchmark | ratio saved | ratio now | change |")
    print(f"|---|---|---|---|")
    for name, before, after, change, regressed in rows:
        mark = " **REGRESSION**" if regressed else ""
        print(f"| {name} | {before:.2f} | {after:.2f} | {change:.2f}x{mark} |")
    if regressions:
        print(f"\n{len(regressions)} regression(s) beyond {args.threshold:.0%}: "
              + ", ".join(regressions), file=sys.stderr)
        return 1
    print(f"\nno regression beyond {args.threshold:.0%} in {len(rows)} ratios")
    return 0


if __name__ == "__main__":
    sys.exit(main())
