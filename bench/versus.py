"""This tree against an earlier commit, side by side in one run: the hot-path benchmarks.

    python bench/versus.py BASE [--rounds R] [--quick] [--only publish,consumers,server]

BASE (a commit, tag or branch) is exported with ``git archive`` into a temporary
directory and its Cython core built there; then each round runs every benchmark script
once from each tree, alternating which tree goes first, and every figure is reported as
its median over the rounds with the ratio this tree / BASE. The scripts measure what they
always do (``publish.py``: js.publish rates; ``consumers.py``: fetch(100)+ack and the
per-ack costs; ``server.py``: jsstore serve through nats-py and the raw PUB ceiling, with
nats-server beside it); only jsstore's figures are compared here.

A refactoring passes when no figure of the hot paths drops by more than 5 %.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SCRIPTS = {
    "publish": ["--n", "200000", "--reps", "1"],
    "consumers": ["--n", "200000", "--reps", "1"],
    "server": ["--n", "30000", "--reps", "1"],
}
QUICK = {
    "publish": ["--quick", "--reps", "1"],
    "consumers": ["--quick", "--reps", "1"],
    "server": ["--quick"],
}


def export_base(revision: str, into: str) -> str:
    """The tree of `revision` in `into`, its extensions built; returns its root."""
    archive = os.path.join(into, "base.tar")
    subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", "-o", archive, revision],
                   check=True)
    base = os.path.join(into, "base")
    with tarfile.open(archive) as tar:
        tar.extractall(base, filter="data")
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace", "-j", "2"],
                   cwd=base, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return base


def figures(result: dict, script: str) -> dict[str, float]:
    """jsstore's figures of one run of a benchmark script (its --json output)."""
    if script == "server":
        return dict(result["median"]["jsstore"])
    out = {name: rate for name, rate in result["median"].items() if name != "sqlite"}
    for pending, costs in result.get("per_op_ns", {}).items():
        for kind, ns in costs.items():
            out[f"{kind} ns at {int(pending):,} pending"] = ns
    return out


def run_script(tree: str, script: str, args: list[str], scratch: str) -> dict[str, float]:
    out = os.path.join(scratch, f"{script}.json")
    subprocess.run([sys.executable, os.path.join(tree, "bench", f"{script}.py"), *args,
                    "--json", out], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return figures(json.load(f), script)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default=",".join(SCRIPTS))
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    chosen = [name for name in args.only.split(",") if name]
    settings = QUICK if args.quick else SCRIPTS
    with tempfile.TemporaryDirectory(prefix="jsstore-versus-") as scratch:
        trees = {"base": export_base(args.base, scratch), "this": ROOT}
        results: dict[str, dict[str, dict[str, list[float]]]] = {
            script: {"base": {}, "this": {}} for script in chosen}
        for round_no in range(args.rounds):
            order = ["base", "this"] if round_no % 2 == 0 else ["this", "base"]
            for script in chosen:
                for which in order:
                    got = run_script(trees[which], script, settings[script], scratch)
                    for key, value in got.items():
                        results[script][which].setdefault(key, []).append(value)
                    print(f"round {round_no + 1} {script} {which}: " + ", ".join(
                        f"{k} {v:,.0f}" for k, v in got.items()), file=sys.stderr)
    print(f"\nmedians of {args.rounds} rounds; ratio = this tree / {args.base} "
          "(for ns figures, lower is better: ratio = base / this)\n")
    print("| benchmark | figure | base | this | ratio |")
    print("|---|---|---|---|---|")
    summary = {}
    for script in chosen:
        for key, base_values in results[script]["base"].items():
            this_values = results[script]["this"].get(key)
            if not this_values:
                continue
            base_median, this_median = statistics.median(base_values), statistics.median(this_values)
            lower_is_better = key.endswith("pending") and " ns " in key
            ratio = (base_median / this_median) if lower_is_better else (this_median / base_median)
            summary[f"{script}: {key}"] = {"base": base_median, "this": this_median, "ratio": ratio}
            print(f"| {script} | {key} | {base_median:,.1f} | {this_median:,.1f} | {ratio:.3f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"base": args.base, "rounds": args.rounds, "figures": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
