"""The server soak, ten cycles (bench/soak.py runs a hundred): `jsstore serve` SIGKILLed at
random moments while nats-py publishes with PubAcks awaited and durable pull consumers
fetch and ack, started again each time on the same port and store directory.  After every
restart nothing acknowledged is missing or changed, no Msg-Id is stored twice, no ack
floor moves backwards or covers a message the consumer never got, and at the end the
consumers have been given every stored message (tests/soak.py has the schedule and the
checks).  The same soak runs a few cycles against nats-server: a checker that flagged it
would be checking something nats-server does not promise.

The seed is random per run and printed; JSSTORE_SOAK_SEED replays one."""

from __future__ import annotations

import os
import random

import pytest

from bothservers import Restartable
from natsserver import require_nats_server

pytest.importorskip("nats")

from soak import Settings, Soak  # noqa: E402

pytestmark = pytest.mark.natsserver

# small volumes: a few hundred messages a cycle, every stored message read back each time
SMALL = Settings(publishers=3, in_flight=3, pace=0.004, kill_after=(0.2, 1.0),
                 full_check_every=1)


def _seed() -> int:
    seed = os.environ.get("JSSTORE_SOAK_SEED")
    return int(seed) if seed else random.randrange(1 << 32)


@pytest.mark.parametrize("kind,cycles", [("jsstore", 10), ("nats-server", 3)])
def test_nothing_acknowledged_is_lost_across_sigkills(kind, cycles, tmp_path):
    if kind == "nats-server":
        require_nats_server()
    seed = _seed()
    print(f"soak seed {seed} ({kind}; JSSTORE_SOAK_SEED={seed} replays it)")
    servers = Restartable(kind, tmp_path / "store")
    try:
        report = Soak(servers, seed, SMALL).run(cycles)
    finally:
        servers.stop()
    print(report.line())
    assert report.problems == [], report.describe()
    assert report.cycles == cycles
    # the kills came while there was traffic: messages were acked, delivered and checked
    assert report.acked > cycles * 20 and report.checked >= report.acked
    assert report.consumer_acks > 0 and report.ack_syncs > 0
    assert report.losses == 0 and report.floor_regressions == 0
