"""Core NATS deliveries, the core's way (jsstore._core.delivery.plans: plans compiled by the
account, messages rendered into each connection's buffer by the parser's pass), against
nats-server: random programs of SUB / UNSUB / PUB / HPUB / PING over three connections
(pedantic, verbose, without echo),
each connection's operations pipelined in one write, run on both servers; every connection
must receive the same frames in the same order (the members of a queue group as a group:
which member gets a message is random on both).  A stream captures ``cap.*``: those
publishes take Python's way, between the core's."""

from __future__ import annotations

import json
import random

import pytest

from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server
from rawsession import Session

SUBJECTS = ("a", "a.b", "a.c", "b.x.y", "_INBOX.k.1", "_INBOX.k.2", "cap.one", "cap.two",
            "a..b", "$JS.EVENT.x", "a.*", "_INBOX.k.>")
FILTERS = ("a", "a.b", "a.*", "a.>", "*.b", ">", "b.x.*", "_INBOX.k.*", "_INBOX.k.1",
           "cap.*", "cap.one")
QUEUES = (None, None, None, "q1", "q2")


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    require_nats_server()
    base = tmp_path_factory.mktemp("core")
    with jsstore_server(base / "jsstore") as ours, nats_server(base / "nats") as theirs:
        yield {"jsstore": ours.port, "nats-server": theirs.port}


def _program(seed: int) -> list[tuple[int, bytes]]:
    """Batches of operations, each (connection, frames written at once)."""
    rng = random.Random(seed)
    sids = {0: [], 1: [], 2: []}
    batches = []
    for step in range(rng.randint(4, 12)):
        conn = rng.randrange(3)
        frames = []
        for _ in range(rng.randint(1, 8)):
            roll = rng.random()
            if roll < 0.3:
                sid = f"{'q' if (queue := rng.choice(QUEUES)) else 's'}{seed}x{step}x{len(frames)}"
                subject = rng.choice(FILTERS)
                frames.append(f"SUB {subject} {queue} {sid}\r\n" if queue
                              else f"SUB {subject} {sid}\r\n")
                sids[conn].append(sid)
            elif roll < 0.4 and sids[conn]:
                sid = rng.choice(sids[conn])
                # (a queue member's limit would make later deliveries hang on which
                # member the random pick took: no limits for them)
                limit = "" if sid.startswith("q") else rng.choice(["", "1", "2", "5"])
                frames.append(f"UNSUB {sid} {limit}\r\n")
            elif roll < 0.45:
                frames.append("PING\r\n")
            else:
                subject = rng.choice(SUBJECTS)
                reply = rng.choice([None, None, "_INBOX.k.1", "_INBOX.k.9", "r.x"])
                if subject.startswith("cap."):
                    # (nats-server answers a stored publish from the stream's own
                    # goroutine, after what the client sent next: a race to compare)
                    reply = None
                payload = f"m{step}.{len(frames)}"
                head = f"{subject} {reply} " if reply else f"{subject} "
                if rng.random() < 0.25:
                    hdr = "NATS/1.0\r\nK: v\r\n\r\n"
                    frames.append(f"HPUB {head}{len(hdr)} {len(hdr) + len(payload)}\r\n"
                                  f"{hdr}{payload}\r\n")
                else:
                    frames.append(f"PUB {head}{len(payload)}\r\n{payload}\r\n")
        batches.append((conn, "".join(frames).encode()))
    return batches


def _run(port: int, seed: int, batches) -> tuple[list, dict]:
    """Per connection its frames (queue members' left out), and the queue groups'
    deliveries counted by (group's sid prefix, subject, payload)."""
    # one pedantic (an invalid publish subject draws -ERR), one verbose (+OK after each
    # operation), one without echo
    sessions = [Session(port, pedantic=True), Session(port, verbose=True),
                Session(port, echo=False)]
    try:
        for s in sessions:
            s.exchange()
        # the stream that takes cap.* on both
        api = sessions[0]
        _, answer = api.request("$JS.API.STREAM.CREATE.CAP", json.dumps(
            {"name": "CAP", "subjects": ["cap.*"], "storage": "memory"}).encode())
        assert b'"error"' not in answer or b"already in use" in answer, answer
        api.request("$JS.API.STREAM.PURGE.CAP")
        got = [[] for _ in sessions]
        for conn, frames in batches:
            got[conn] += _exchange(sessions[conn], frames)
        for i, s in enumerate(sessions):
            got[i] += s.exchange()
        queued = {}
        plain = []
        for frames in got:
            mine = []
            for frame in frames:
                if frame[0] == "MSG" and frame[5].startswith("q"):
                    key = (frame[1], frame[4])
                    queued[key] = queued.get(key, 0) + 1
                elif frame[0] == "MSG" and frame[3].startswith(b"NATS/1.0 503"):
                    # (no-responders goes to the requester's first subscription that
                    # takes the reply: first in nats-server's sublist cache, whose order
                    # is its history's)
                    mine.append(frame[:5] + ("?",))
                else:
                    mine.append(frame)
            plain.append(_normal(mine))
        return plain, queued
    finally:
        for s in sessions:
            s.sock.close()


def _exchange(session: Session, frames: bytes) -> list:
    """Send `frames` and a PING; every frame until the PONG to that PING (the batch's own
    PINGs answered on the way)."""
    session.send(frames + b"PING\r\n")
    pongs = frames.count(b"PING\r\n") + 1
    out = []
    while pongs:
        frame = session.frame()
        assert frame is not None, "no PONG came"
        if frame == ("PONG",):
            pongs -= 1
        elif frame != ("PING",) and not frame[0].startswith("INFO "):
            out.append(frame)
    return out


def _normal(frames: list) -> list:
    """Frames with the deliveries of one message to several subscriptions of one
    connection in sid order (the order nats-server writes them in is its sublist's), and
    an -ERR repeated at once written once (nats-server 2.15 answers an invalid publish
    subject in a pipelined read with one -ERR or, at random, two)."""
    out, run = [], []
    for frame in frames + [None]:
        if run and (frame is None or frame[0] != "MSG" or frame[1:5] != run[0][1:5]):
            out += sorted(run, key=lambda f: f[5])
            run = []
        if frame is not None and frame[0] == "MSG":
            run.append(frame)
        elif frame is not None and not (frame[0].startswith("-ERR") and out
                                        and out[-1] == frame):
            out.append(frame)
    return out


@pytest.mark.parametrize("seed", range(60))
def test_core_deliveries_match_nats_server(servers, seed):
    batches = _program(seed)
    ours = _run(servers["jsstore"], seed, batches)
    theirs = _run(servers["nats-server"], seed, batches)
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
