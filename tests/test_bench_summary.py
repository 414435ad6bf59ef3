"""bench/summary.py and bench/suite.py: the one table `make bench` prints of every target."""

from __future__ import annotations

import json
import pathlib
import sys

BENCH = pathlib.Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import suite  # noqa: E402
import summary  # noqa: E402


def test_a_rate_passes_at_its_target_ratio_and_fails_below_it():
    assert summary.row("b", "m", 300.0, "base", 100.0, 3.0)["result"] == "PASS"
    failed = summary.row("b", "m", 299.0, "base", 100.0, 3.0)
    assert failed["result"] == "FAIL" and abs(failed["ratio"] - 2.99) < 1e-9


def test_a_time_or_size_is_judged_the_other_way():
    assert summary.row("b", "rss", 21.0, "n", 14.0, 1.5, unit="MiB",
                       better=summary.LOWER)["result"] == "PASS"
    assert summary.row("b", "rss", 22.0, "n", 14.0, 1.5, unit="MiB",
                       better=summary.LOWER)["result"] == "FAIL"


def test_absolute_targets_missing_figures_and_figures_shown_only():
    assert summary.row("b", "m", 31.0, "absolute", None, 32.0, unit="B",
                       better=summary.LOWER)["result"] == "PASS"
    assert summary.row("b", "m", 33.0, "absolute", None, 32.0, unit="B",
                       better=summary.LOWER)["result"] == "FAIL"
    assert summary.row("b", "m", None, "base", 1.0, 2.0)["result"] == "MISSING"
    assert summary.row("b", "m", 5.0, "base", 1.0, None)["result"] == "info"


def test_the_table_has_a_line_per_row():
    rows = [summary.row("store", "store_msg", 2.5e6, "LMDB", 1e6, 3.0),
            summary.row("server", "rss idle", 20.0, "nats-server", 14.0, 1.5, unit="MiB",
                        better=summary.LOWER)]
    lines = summary.render(rows)
    assert len(lines) == 4
    assert "| store | store_msg | 2.50M msgs/s | LMDB 1.00M msgs/s | 2.50x | >= 3x | FAIL |" \
        == lines[2]
    assert lines[3].endswith("| 1.43x | <= 1.5x | PASS |")


def test_all_collects_rows_and_reports_a_script_that_wrote_none(tmp_path, monkeypatch):
    writes = tmp_path / "writes.py"
    writes.write_text(
        "import json, sys\n"
        "sys.path.insert(0, %r)\n"
        "import summary\n"
        "out = sys.argv[sys.argv.index('--json') + 1]\n"
        "json.dump({'summary': [summary.row('w', 'op', 2.0, 'base', 1.0, 1.5)]},"
        " open(out, 'w'))\n" % str(BENCH))
    silent = tmp_path / "silent.py"
    silent.write_text("import sys\nsys.exit(3)\n")
    monkeypatch.setattr(suite, "HERE", str(tmp_path))
    monkeypatch.setattr(suite, "SCRIPTS", {"writes": ("writes.py", []),
                                               "silent": ("silent.py", [])})
    out = tmp_path / "all.json"
    assert suite.main(["--json", str(out)]) == 1
    result = json.loads(out.read_text())
    assert [r["result"] for r in result["summary"]] == ["PASS"]
    assert len(result["failures"]) == 1 and result["failures"][0].startswith("silent:")
