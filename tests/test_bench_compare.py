"""bench/compare.py, the regression check of `make bench-compare`: runs compared by each
benchmark's ratio to its same-run baseline (bench/ratios.py adds the ratios)."""

from __future__ import annotations

import json
import pathlib
import sys

BENCH = pathlib.Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import compare  # noqa: E402
import ratios  # noqa: E402


def _run(times: dict[str, float], baseline: str = "sqlite") -> dict:
    """A run's JSON as pytest-benchmark writes it, ratios added as the bench hook adds them."""
    benchmarks = [{"fullname": f"bench/test_x.py::test_op[{name}]", "group": "op",
                   "stats": {"min": time, "median": time * 1.1},
                   "extra_info": {"contender": name, "baseline": baseline}}
                  for name, time in times.items()]
    ratios.add_ratios(benchmarks)
    return {"machine_info": {}, "benchmarks": benchmarks}


def _write(tmp_path, name: str, run: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(run))
    return str(path)


def test_ratios_are_the_baselines_fastest_round_over_ones_own():
    run = _run({"jsstore": 0.5, "sqlite": 2.0, "lmdb": 4.0})
    got = {b["extra_info"]["contender"]: b["extra_info"]["ratio"] for b in run["benchmarks"]}
    assert got == {"jsstore": 4.0, "sqlite": 1.0, "lmdb": 0.5}


def test_a_slower_machine_is_no_regression(tmp_path, capsys):
    """Everything twice as slow (another machine, a busy one): the ratios stay."""
    saved = _write(tmp_path, "saved.json", _run({"jsstore": 0.5, "sqlite": 2.0}))
    run = _write(tmp_path, "run.json", _run({"jsstore": 1.0, "sqlite": 4.0}))
    assert compare.main([saved, run]) == 0
    assert "no regression" in capsys.readouterr().out


def test_jsstore_slower_against_the_same_baseline_is_a_regression(tmp_path, capsys):
    saved = _write(tmp_path, "saved.json", _run({"jsstore": 0.5, "sqlite": 2.0}))
    run = _write(tmp_path, "run.json", _run({"jsstore": 0.8, "sqlite": 2.0}))   # 0.625x
    assert compare.main([saved, run]) == 1
    assert "REGRESSION" in capsys.readouterr().out
    # within the threshold: 0.55 against 0.5 is 0.91x
    run = _write(tmp_path, "run2.json", _run({"jsstore": 0.55, "sqlite": 2.0}))
    assert compare.main([saved, run]) == 0
    assert compare.main([saved, run, "--threshold", "0.05"]) == 1


def test_runs_that_cannot_be_compared_exit_2(tmp_path):
    saved = _write(tmp_path, "saved.json", _run({"jsstore": 0.5, "sqlite": 2.0}))
    assert compare.main([saved, str(tmp_path / "missing.json")]) == 2
    other = _write(tmp_path, "other.json", _run({"other": 1.0}, baseline="none"))
    assert compare.main([saved, other]) == 2
