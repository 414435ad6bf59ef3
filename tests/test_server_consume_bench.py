"""The workloads of bench/consumeceiling.py and bench/fanout.py, small, on nats-server and
on jsstore serve: afterwards every consumer's numbers (delivered, ack floor, pending,
waiting for an ack, redelivered) are the same on both."""

from __future__ import annotations

import os
import sys

import pytest

from jsstoreserver import start_jsstore_server
from natsserver import nats_server_binary, start_nats_server

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

import consumeceiling  # noqa: E402
import fanout  # noqa: E402
import rawframes  # noqa: E402

pytestmark = pytest.mark.skipif(nats_server_binary() is None, reason="no nats-server binary")

KINDS = ("nats-server", "jsstore")


def _start(kind: str, directory):
    return (start_jsstore_server(directory) if kind == "jsstore"
            else start_nats_server(directory))


def _numbers(port: int, stream: str, names: list[str]) -> dict:
    api = rawframes.connect(port)
    rawframes.subscribe_replies(api)
    numbers = {}
    for name in names:
        info = rawframes.request(api, f"$JS.API.CONSUMER.INFO.{stream}.{name}", b"")
        numbers[name] = (info["delivered"]["consumer_seq"], info["delivered"]["stream_seq"],
                         info["ack_floor"]["consumer_seq"], info["ack_floor"]["stream_seq"],
                         info["num_ack_pending"], info["num_pending"],
                         info["num_redelivered"])
    api.close()
    return numbers


def _run(tmp_path, workload) -> dict:
    found = {}
    for kind in KINDS:
        server = _start(kind, tmp_path / kind)
        try:
            found[kind] = workload(server.port)
        finally:
            server.stop()
    return found


def test_consume_ceiling_workload_leaves_the_same_consumer(tmp_path):
    def workload(port):
        figures = consumeceiling.measure(port, 1_000, 100)
        assert figures["ack_floor"] == 1_000 and figures["num_ack_pending"] == 0
        return _numbers(port, "C", ["C"])
    found = _run(tmp_path, workload)
    assert found["jsstore"] == found["nats-server"]
    assert found["jsstore"]["C"] == (1_000, 1_000, 1_000, 1_000, 0, 0, 0)


def test_fanout_workload_leaves_the_same_consumers(tmp_path):
    pulls, pushes, n = 25, 3, 500

    def workload(port):
        figures = fanout.measure(port, n, pulls, pushes, batch=4)
        assert figures["consumers settled"] == pulls + pushes
        return _numbers(port, "FAN", [f"H{k}" for k in range(pushes)]
                        + [f"P{i}" for i in range(pulls)])
    found = _run(tmp_path, workload)
    assert found["jsstore"] == found["nats-server"]
    assert found["jsstore"]["H0"] == (n, n, n, n, 0, 0, 0)
    assert found["jsstore"]["P3"] == (n // pulls, n - pulls + 4, n // pulls, n - pulls + 4,
                                      0, 0, 0)
