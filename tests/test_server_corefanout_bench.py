"""The workloads of bench/corefanout.py (core NATS, no JetStream), small, on nats-server and
on jsstore serve: every fan-out subscriber gets every message, a queue group's members get
each message once between them, every request is answered once; and the bench's frame
counter, which does not look at each frame, counts right with PINGs between the frames."""

from __future__ import annotations

import os
import random
import sys

import pytest

from jsstoreserver import start_jsstore_server
from natsserver import nats_server_binary, start_nats_server

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

import corefanout  # noqa: E402

KINDS = ("nats-server", "jsstore")


def test_the_frame_counter_counts_frames_around_pings_in_any_reads():
    length = corefanout.delivery_length(corefanout.SUBJECT, 1)
    frame = b"MSG core.fan 1 128\r\n" + corefanout.PAYLOAD + b"\r\n"
    assert len(frame) == length
    view = bytearray(1 << 16)
    for seed in range(200):
        rnd = random.Random(seed)
        n = rnd.randint(0, 2_000)
        parts, pings = [], 0
        for _ in range(n):
            if rnd.random() < 0.003:
                parts.append(b"PING\r\n")
                pings += 1
            parts.append(frame)
        if rnd.random() < 0.3:          # one at the very end, after the last frame
            parts.append(b"PING\r\n")
            pings += 1
        stream = b"".join(parts)
        counter = corefanout.FrameCounter(length)
        answers = b""
        at = 0
        while at < len(stream):
            size = min(rnd.choice([1, 3, 5, 149, 150, 151, 4_096, 65_536]), len(stream) - at)
            view[:size] = stream[at:at + size]
            answers += counter.feed(view, size)
            at += size
        assert (counter.frames, answers, counter.carry) == (n, b"PONG\r\n" * pings, b""), seed


def test_the_frame_counter_reports_an_error_line():
    length = corefanout.delivery_length(corefanout.SUBJECT, 1)
    view = bytearray(b"-ERR 'Slow Consumer'\r\n")
    with pytest.raises(RuntimeError, match="Slow Consumer"):
        corefanout.FrameCounter(length).feed(view, len(view))


@pytest.mark.natsserver
@pytest.mark.skipif(nats_server_binary() is None, reason="no nats-server binary")
@pytest.mark.parametrize("kind", KINDS)
def test_core_workloads_deliver_every_message_once(tmp_path, kind):
    server = (start_jsstore_server(tmp_path) if kind == "jsstore"
              else start_nats_server(tmp_path))
    try:
        for case, n in (("fanout-1", 3_000), ("fanout-4", 2_000), ("fanout-16", 500)):
            subscribers = corefanout.CASES[case][1]
            result = corefanout.measure(server.port, case, n, server.pid)
            assert result["per member"] == [n] * subscribers, case
            assert result["delivered"] == n * subscribers
        queue = corefanout.measure(server.port, "queue-4", 4_000)
        assert sum(queue["per member"]) == 4_000 and len(queue["per member"]) == 4
        assert min(queue["per member"]) > 0, queue["per member"]
        answered = corefanout.measure(server.port, "request-reply", 1_000)
        assert sum(answered["per member"]) == 1_000
        assert 0 < answered["p50 us"] <= answered["p99 us"]
    finally:
        server.stop()
