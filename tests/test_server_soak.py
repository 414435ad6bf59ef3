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

import dataclasses
import os
import pathlib
import random

import pytest

from bothservers import Restartable
from jsstore._core.storage.ackstate import AckState, decode
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


class Sabotaged(Restartable):
    """A server whose store loses what a broken one would, between kill and restart: at
    the second restart the newest block of SOAKB loses the second half of what it holds
    (acked messages gone); at the first restart after that whose predecessor started from
    a positive ack floor, the SOAKA consumer's o.dat is replaced by a new consumer's (the
    floor the checker saw after the restart before goes back to 0).  How far the floor has
    moved depends on timing (a message left unacked holds it for an ack wait or more), so
    the sabotage waits for a floor that can go backwards instead of for a given restart."""

    def __init__(self, *args):
        super().__init__(*args)
        self.restarts = 0
        self.restored = False
        self.floor_before = 0           # the SOAKA ack floor the last restart started from

    def _stream(self, name: str) -> pathlib.Path:
        return next(pathlib.Path(self.store_dir).glob(f"jetstream/*/streams/{name}"))

    def start_again(self) -> None:
        self.restarts += 1
        state = self._stream("SOAKA") / "obs" / "worker" / "o.dat"
        floor = decode(state.read_bytes()).ack_floor.stream_seq
        if self.restarts == 2:
            msgs = self._stream("SOAKB") / "msgs"
            newest = max(msgs.glob("*.blk"), key=lambda p: int(p.stem))
            data = newest.read_bytes().rstrip(b"\0")    # a block being written may
            with open(newest, "r+b") as block:          # be longer than its records
                block.truncate(len(data) // 2)
            (msgs / "index.db").unlink(missing_ok=True)
        elif self.restarts > 2 and not self.restored and self.floor_before > 0:
            state.write_bytes(AckState().encode())
            self.restored = True
        self.floor_before = floor
        super().start_again()


def test_the_soak_finds_a_lost_message_and_a_floor_moving_backwards(tmp_path):
    """The checker itself: a store that loses acked messages and an ack floor fails it."""
    seed = _seed()
    servers = Sabotaged("jsstore", tmp_path / "store")
    try:
        # every delivery acked, so that the floor has moved by the third restart
        report = Soak(servers, seed, dataclasses.replace(SMALL, no_ack_share=0.0)).run(8)
    finally:
        servers.stop()
    kinds = {problem.split(" ", 1)[0] for problem in report.problems}
    assert report.losses > 0 and "LOSS" in kinds, report.describe()
    assert any(p.startswith("LOSS") and "SOAKB" in p for p in report.problems)
    assert servers.restored, "no restart after the second started from a positive floor"
    assert report.floor_regressions > 0 and "FLOOR" in kinds, report.describe()
