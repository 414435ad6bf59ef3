"""`make bench`: every benchmark, one after another, then one table of every target.

    python bench/suite.py [--quick] [--only NAME ...] [--json FILE]

Each script in SCRIPTS runs in its own process with ``--json`` (and ``--quick`` when given),
prints its own tables as it goes, and hands back its summary rows (bench/summary.py); the
table at the end holds every row: jsstore's figure, the baseline measured beside it in the
same run, the ratio and the target. A script that fails is reported as such and the others
still run. The exit status is 0 unless a script failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import summary  # noqa: E402

# name: (script, extra arguments of a full run) in the order they run
SCRIPTS = {
    "store": ("report.py", []),
    "largemsgs": ("largemsgs.py", []),
    "steady": ("steady.py", []),
    "publish": ("publish.py", []),
    "consumers": ("consumers.py", []),
    "server": ("server.py", []),
    "startup": ("startup.py", []),
    "fixture_startup": ("fixture_startup.py", []),
    "pubceiling": ("pubceiling.py", []),
    "consumeceiling": ("consumeceiling.py", []),
    "fanout": ("fanout.py", []),
    "corefanout": ("corefanout.py", []),
    "scaling": ("scaling.py", []),
    "growth": ("growth.py", ["--plot", os.path.join(HERE, "growth.png")]),
}


def run_script(name: str, quick: bool, out_dir: str) -> tuple[list[dict], str | None]:
    script, extra = SCRIPTS[name]
    result = os.path.join(out_dir, f"{name}.json")
    command = [sys.executable, os.path.join(HERE, script), "--json", result]
    command += ["--quick"] if quick else extra
    print(f"\n=== {name}: {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command)
    print(f"=== {name}: {time.monotonic() - started:.0f} s, exit status {done.returncode}",
          flush=True)
    try:
        with open(result) as f:
            rows = json.load(f).get("summary")
    except (OSError, ValueError) as e:
        return [], f"{script} wrote no results ({e.__class__.__name__})"
    if rows is None:
        return [], f"{script} wrote no summary rows"
    return rows, None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every script's small sizes")
    parser.add_argument("--only", nargs="+", choices=list(SCRIPTS), help="run only these")
    parser.add_argument("--json", help="also write every summary row to this file")
    args = parser.parse_args(argv)
    rows: list[dict] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="jsstore-bench-all-") as out_dir:
        for name in args.only or SCRIPTS:
            got, error = run_script(name, args.quick, out_dir)
            rows += got
            if error:
                failures.append(f"{name}: {error}")
    print("\n# jsstore against its baselines, every target\n")
    print("\n".join(summary.render(rows)))
    for failure in failures:
        print(f"\nFAILED {failure}")
    counts = {k: sum(r["result"] == k for r in rows) for k in ("PASS", "FAIL", "MISSING")}
    print(f"\n{counts['PASS']} met, {counts['FAIL']} not met, {counts['MISSING']} missing")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": rows, "failures": failures}, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
