"""Where nats-server's subject rules for wildcards-inside-wildcards show on the wire, run
against `jsstore serve` and nats-server alike: subscribe permissions (a subscription's own
wildcards looked up among the rules as written: "foo" is not allowed by "foo.>"), the
deny filter a wildcard subscription loads when a denied filter lies inside it (the subset
rule), and which consumers a filtered purge moves (those whose filters lie inside the
purged subject, by the same rule)."""

from __future__ import annotations

import json
import socket
import time

import pytest

from bothservers import run, server  # noqa: F401  (the fixture)
from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

nats = pytest.importorskip("nats")
from nats.js import api  # noqa: E402

pytestmark = pytest.mark.natsserver

# (allowed, denied, subscription, whether nats-server lets it through): nats-server's
# canSubscribe matches the subscription's tokens, "*" and ">" included, against the
# rules, so a subscription is let through when its own text matches a rule
SUBSCRIBE_CASES = [
    (["foo.>"], [], "foo", False),
    (["foo.>"], [], "foo.*", True),
    (["foo.>"], [], "foo.>", True),
    (["foo.*"], [], "foo.>", True),
    (["*"], [], ">", True),
    (["foo.*"], [], "foo.bar", True),
    (["foo.bar"], [], "foo.*", False),
    (["*.bar"], [], "foo.*", False),
    (["foo.*"], [], "*.bar", False),
    (["*.*"], [], "foo.*", True),
    ([">"], ["foo.bar"], "foo.*", True),
    ([">"], ["foo.*"], "foo.>", False),
    ([">"], ["foo.>"], "foo.*", False),
    ([">"], ["foo.>"], "foo", True),
    ([">"], ["foo.*"], "foo.bar", False),
    ([">"], ["foo.*"], "*.bar", True),
    ([">"], ["foo"], "*", True),
    ([">"], [">"], "foo", False),
]


def _start(kind: str, tmp_path, conf):
    if kind == "nats-server":
        require_nats_server()
        return nats_server(tmp_path / "store", ["-c", str(conf)])
    return jsstore_server(tmp_path / "store", ["-c", str(conf)])


def _users_conf(tmp_path, permissions: list[dict]):
    """A configuration with user u<i> (password p) holding permissions[i]."""
    users = "\n".join(f"    {{user: u{i}, password: p, permissions: {json.dumps(perm)}}}"
                      for i, perm in enumerate(permissions))
    conf = tmp_path / "server.conf"
    conf.write_text("authorization {\n  users = [\n" + users + "\n  ]\n}\n")
    return conf


def _connect(port: int, user: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(0.2)
    sock.recv(65536)
    sock.sendall(b'CONNECT {"verbose":false,"user":"%s","pass":"p"}\r\n' % user.encode())
    return sock


def _until_pong(sock: socket.socket, frames: bytes = b"") -> bytes:
    """Send `frames` and a PING; what the server sends up to its PONG."""
    sock.sendall(frames + b"PING\r\n")
    out = b""
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and not out.endswith(b"PONG\r\n"):
        try:
            chunk = sock.recv(65536)
        except OSError:
            continue
        if not chunk:
            break
        out += chunk
    return out


@pytest.mark.parametrize("kind", ["jsstore", "nats-server"])
def test_subscribe_permissions_as_nats_server(tmp_path, kind):
    conf = _users_conf(tmp_path, [{"subscribe": {"allow": allow, "deny": deny}}
                                  for allow, deny, _sub, _ok in SUBSCRIBE_CASES])
    answers = []
    with _start(kind, tmp_path, conf) as srv:
        for i, (_allow, _deny, subject, _ok) in enumerate(SUBSCRIBE_CASES):
            sock = _connect(srv.port, f"u{i}")
            answers.append(_until_pong(sock, b"SUB %s 1\r\n" % subject.encode()))
            sock.close()
    # the bug this pins down: allowed only "foo.>", a subscription to "foo" is refused
    assert answers[0] == b"-ERR 'Permissions Violation for Subscription to \"foo\"'\r\nPONG\r\n"
    for (allow, deny, subject, ok), answer in zip(SUBSCRIBE_CASES, answers):
        expected = b"PONG\r\n" if ok else (
            b"-ERR 'Permissions Violation for Subscription to \"%s\"'\r\nPONG\r\n"
            % subject.encode())
        assert answer == expected, (allow, deny, subject)


@pytest.mark.parametrize("kind", ["jsstore", "nats-server"])
def test_deny_filter_of_wildcard_subscriptions(tmp_path, kind):
    """A wildcard subscription that a deny rule overlaps makes the server check every
    message for that client against the deny rules: u0's "foo.*" never gets foo.bar
    (denied as it is) nor foo.baz ("*.baz" overlaps "foo.*" without lying inside it);
    u1's "foo.>" gets a.b.c's neighbours but not foo.x.c ("*.*.c" overlaps "foo.>"); u2's
    "q.*" overlaps nothing denied and gets everything."""
    readers = [("u0", ["foo.bar", "*.baz"], "foo.*"), ("u1", ["*.*.c"], "foo.>"),
               ("u2", ["x.y"], "q.*")]
    conf = _users_conf(tmp_path, [{"subscribe": {"allow": [">"], "deny": deny}}
                                  for _user, deny, _sub in readers] + [{}])
    with _start(kind, tmp_path, conf) as srv:
        socks = [_connect(srv.port, user) for user, _deny, _sub in readers]
        for sock, (_user, _deny, subject) in zip(socks, readers):
            assert _until_pong(sock, b"SUB %s 1\r\n" % subject.encode()) == b"PONG\r\n"
        writer = _connect(srv.port, f"u{len(readers)}")
        _until_pong(writer, b"".join(b"PUB %s 1\r\nx\r\n" % subject for subject in [
            b"foo.bar", b"foo.baz", b"foo.qux", b"foo.x.c", b"foo.x.d", b"q.r"]))
        time.sleep(0.2)
        got = [_until_pong(sock) for sock in socks]
        for sock in socks + [writer]:
            sock.close()
    assert got == [b"MSG foo.qux 1 1\r\nx\r\nPONG\r\n",
                   b"MSG foo.bar 1 1\r\nx\r\nMSG foo.baz 1 1\r\nx\r\nMSG foo.qux 1 1\r\nx\r\n"
                   b"MSG foo.x.d 1 1\r\nx\r\nPONG\r\n",
                   b"MSG q.r 1 1\r\nx\r\nPONG\r\n"]


def _consumer_state(info) -> tuple:
    return (info.delivered.consumer_seq, info.delivered.stream_seq,
            info.ack_floor.consumer_seq, info.ack_floor.stream_seq,
            info.num_pending, info.num_ack_pending)


CONSUMERS = [("ON_FOO", "foo"), ("UNDER_FOO", "foo.>"), ("ALL", None), ("FOO_A", "foo.a"),
             ("STAR", "foo.*")]

# nats-server's consumer states after the purge: (delivered consumer and stream sequence,
# ack floor consumer and stream sequence, num_pending, num_ack_pending).  ON_FOO is never
# moved: "foo" does not lie inside "foo.>" nor inside "foo.*", and is not wider either.
PURGES = [
    ({"subject": "foo.>"}, {
        "ON_FOO": (2, 3, 1, 1, 2, 1), "UNDER_FOO": (2, 7, 2, 7, 0, 0),
        "ALL": (2, 2, 1, 1, 3, 1), "FOO_A": (1, 7, 1, 7, 0, 0), "STAR": (2, 7, 2, 7, 0, 0)}),
    ({"subject": "foo.>", "keep": 1}, {
        "ON_FOO": (2, 3, 1, 1, 2, 1), "UNDER_FOO": (2, 5, 2, 5, 1, 0),
        "ALL": (2, 2, 1, 1, 4, 1), "FOO_A": (1, 5, 1, 5, 0, 0), "STAR": (2, 5, 2, 5, 1, 0)}),
    ({"subject": "foo.*", "seq": 5}, {
        "ON_FOO": (2, 3, 1, 1, 2, 1), "UNDER_FOO": (2, 4, 1, 2, 1, 1),
        "ALL": (2, 2, 1, 1, 4, 1), "FOO_A": (1, 5, 1, 5, 0, 0), "STAR": (2, 5, 2, 5, 1, 0)}),
]


@pytest.mark.parametrize("purge, expected", PURGES, ids=["all", "keep", "upto"])
def test_filtered_purge_moves_the_consumers_inside_it(server, purge, expected):
    """Each consumer has acked its first message and holds its second unacknowledged
    (FOO_A has only one); then the stream is purged on a filter.  Consumers whose filter
    lies inside the purged one move past the purge, wider ones drop what went from their
    pending, the rest stay where they were."""
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["foo", "foo.>"])
        for subject in ["foo", "foo.a", "foo", "foo.b", "foo", "foo.c", "foo"]:
            await js.publish(subject, b"x")
        for name, filter_subject in CONSUMERS:
            await js.add_consumer("S", api.ConsumerConfig(
                durable_name=name, filter_subject=filter_subject,
                ack_policy=api.AckPolicy.EXPLICIT))
            sub = await js.pull_subscribe_bind(name, "S")
            first = await sub.fetch(1, timeout=2)
            await first[0].ack_sync()
            if name != "FOO_A":
                await sub.fetch(1, timeout=2)
        await js.purge_stream("S", **purge)
        out = {name: _consumer_state(await js.consumer_info("S", name))
               for name, _filter in CONSUMERS}
        await nc.close()
        return out

    assert run(main()) == expected
