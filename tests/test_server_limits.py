"""The limits nats-server puts on clients, compared with `jsstore serve` on the same
configuration file: max_connections, max_subscriptions, an account's limits {}
(connections, subscriptions, payload), max_control_line, max_payload, the keepalive PINGs
(ping_interval, ping_max) and the authorization timeout.  What is compared: the frames
each client gets (``-ERR`` texts, PINGs, INFO's max_payload) and whether its connection
is closed."""

from __future__ import annotations

import json
import time

import pytest
from rawsession import Session, on_both

pytestmark = pytest.mark.natsserver


def _same(found: tuple):
    """nats-server's outcome, once jsstore's is the same (found: on_both's pair)."""
    ours, theirs = found
    assert ours == theirs
    return theirs


def _admitted(port: int) -> Session:
    """A connection the server keeps (the readiness probe of the fixture may still count
    against max_connections for a moment after it closed)."""
    deadline = time.monotonic() + 5
    while True:
        session = Session(port)
        if session.is_open() or time.monotonic() > deadline:
            return session
        session.close()
        time.sleep(0.05)


def test_max_connections(tmp_path):
    def scenario(port):
        first, second = _admitted(port), _admitted(port)
        assert first.is_open() and second.is_open()
        third = Session(port, connect=False)
        out = third.until_closed()
        second.close()
        assert first.is_open()
        return out

    assert _same(on_both(tmp_path, "max_connections: 2\n", scenario)) == [
        ("-ERR 'maximum connections exceeded'",)]


def test_max_subscriptions_per_connection(tmp_path):
    def scenario(port):
        one, two = Session(port), Session(port)
        out = [one.exchange(b"SUB a 1\r\nSUB b 2\r\nSUB c 3\r\n"),
               two.exchange(b"SUB a 1\r\nSUB b 2\r\n"),          # its own count
               one.exchange(b"UNSUB 1\r\nSUB d 4\r\nSUB e 5\r\n"),
               one.is_open()]
        return out

    assert _same(on_both(tmp_path, "max_subscriptions: 2\n", scenario)) == [
        [("-ERR 'maximum subscriptions exceeded'",)], [],
        [("-ERR 'maximum subscriptions exceeded'",)], True]


ACCOUNT_LIMITS = """
max_payload: 2000
accounts {
  A: {users: [{user: a1, password: p}, {user: a2, password: p}],
      limits: {max_connections: 1, max_subscriptions: 1, max_payload: 100}}
  B: {users: [{user: b, password: p}]}
}
"""


def test_account_limits(tmp_path):
    def scenario(port):
        a1 = Session(port, "a1", protocol=1)
        a1.send(b"PING\r\n")
        update = [a1.frame(), a1.frame()]               # the PONG, the INFO update
        info = update[1][0] if update[1] else ""
        max_payload = json.loads(info[5:])["max_payload"] if info else None
        a2 = Session(port, "a2")
        refused = a2.until_closed()
        b = Session(port, "b")
        out = {"max_payload": max_payload, "second": refused,
               "subs": a1.exchange(b"SUB x 1\r\nSUB y 2\r\n"),
               "b subs": b.exchange(b"SUB x 1\r\nSUB y 2\r\n"),
               "b payload": b.exchange(b"PUB x 150\r\n" + b"x" * 150 + b"\r\n"),
               "a1 payload": a1.exchange(b"PUB x 150\r\n" + b"x" * 150 + b"\r\n")}
        out["a1 after"] = a1.until_closed()
        return out

    found = _same(on_both(tmp_path, ACCOUNT_LIMITS, scenario))
    assert found["max_payload"] == 100
    assert found["second"] == [("-ERR 'maximum account active connections exceeded'",)]
    assert found["subs"] == [("-ERR 'maximum subscriptions exceeded'",)]
    assert found["b subs"] == [] and [f[:2] for f in found["b payload"]] == [("MSG", "x")]
    assert found["a1 payload"] == [("-ERR 'Maximum Payload Violation'",), ("closed",)]


def test_max_control_line_and_max_payload(tmp_path):
    def scenario(port):
        s = Session(port)
        return [s.info["max_payload"], s.exchange(b"SUB " + b"v" * 600 + b" 1\r\n")]

    assert _same(on_both(tmp_path, "max_control_line: 512\nmax_payload: 2000\n",
                       scenario)) == [2000, [("-ERR 'maximum control line exceeded'",),
                                             ("closed",)]]


def test_stale_connection_after_ping_max_unanswered_pings(tmp_path):
    def scenario(port):
        silent, answering = Session(port), Session(port)
        out, pongs, deadline = [], 0, time.monotonic() + 20
        while (not silent.eof or pongs < 4) and time.monotonic() < deadline:
            # (the one that answers is still in after four PINGs)
            frame = silent.frame(0.01) if not silent.eof else None
            if frame is not None:
                out.append(frame)
            if answering.frame(0.01) == ("PING",):
                answering.send(b"PONG\r\n")
                pongs += 1
        return out, answering.is_open()

    found = _same(on_both(tmp_path, 'ping_interval: "100ms"\nping_max: 2\n', scenario))
    assert found == ([("PING",), ("PING",), ("-ERR 'Stale Connection'",)], True)


def test_authentication_timeout(tmp_path):
    def scenario(port):
        silent = Session(port, connect=False)
        late = Session(port, connect=False)
        return silent.until_closed(), late.until_closed()

    conf = "authorization {\n  timeout: 0.5\n  users = [{user: u, password: p}]\n}\n"
    assert _same(on_both(tmp_path, conf, scenario)) == (
        [("-ERR 'Authentication Timeout'",)], [("-ERR 'Authentication Timeout'",)])


def test_no_authentication_timeout_without_authentication(tmp_path):
    def scenario(port):
        silent = Session(port, connect=False)
        return silent.until_closed(timeout=1.5)

    assert _same(on_both(tmp_path, "authorization {\n  timeout: 0.3\n}\n", scenario)) == [
        ("open",)]


def test_account_limits_of_zero(tmp_path):
    """An account's limit of 0 allows nothing: no subscription, no payload.  (nats-server
    also tells such a client on the side, once it has connected, that it holds all the
    subscriptions it may, and closes it 20 ms later: what it sent with its CONNECT is
    handled first, as here, though on nats-server the two race.)"""
    def scenario(port):
        s = Session(port, connect=False)
        s.send(b'CONNECT {"verbose":false,"user":"z","pass":"p"}\r\n'
               b"SUB x 1\r\nPUB y 1\r\nx\r\n")      # (one read: no race with the close)
        # (the distinct errors: nats-server's own "on the side" -ERR races its read loop)
        return sorted(set(s.until_closed()))

    conf = ("accounts {\n  Z: {users: [{user: z, password: p}],\n"
            "      limits: {max_subscriptions: 0, max_payload: 0}}\n}\n")
    assert _same(on_both(tmp_path, conf, scenario)) == [
        ("-ERR 'Maximum Payload Violation'",), ("-ERR 'maximum subscriptions exceeded'",)]
