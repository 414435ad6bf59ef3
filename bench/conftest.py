"""pytest set-up for the benchmark suite (run by hand or in CI: ``pytest bench``).

The project's pytest options disable pytest-benchmark for the unit suite; a run
that asks for this directory wants the timings, so benchmarks are switched back on
here unless ``--bench-smoke`` asks for one untimed pass of each benchmark.
"""

import pytest
import ratios


def pytest_addoption(parser):
    group = parser.getgroup("jsstore bench")
    group.addoption("--quick", action="store_true", default=False,
                    help="small message count (JSSTORE_BENCH_N overrides)")
    group.addoption("--bench-smoke", action="store_true", default=False,
                    help="run every benchmark body once, without timing")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if hasattr(config.option, "benchmark_enable") and not config.getoption("--bench-smoke", False):
        config.option.benchmark_enable = True


def pytest_benchmark_update_json(config, benchmarks, output_json):
    """Each benchmark's speed relative to its group's baseline measured in the same run
    (`ratio`, bench/ratios.py).  Machines here are noisy: a run compared with an earlier
    one compares these ratios, not the times."""
    ratios.add_ratios(output_json["benchmarks"])
