"""Permissions as nats-server enforces them, compared outcome by outcome: one
configuration file (users with different permission sets, default permissions for the
user that has none) runs against `jsstore serve` and against nats-server, and every user
publishes, subscribes (plainly and in queue groups), makes JetStream requests (create a
stream, stream info, pull a message, ack it) and answers requests (allow_responses) on
several subjects.  What is compared: the -ERR texts each operation draws, which messages
each user is delivered, what each JetStream request returns, which acks take effect,
which replies reach the requester, and that every connection stays open."""

from __future__ import annotations

import json
import re
import time

import pytest
from bothservers import run
from rawsession import KINDS, Session, start

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver

CONF = """
authorization {
  default_permissions: {publish: "dflt.>", subscribe: ["dflt.>", "_INBOX.>"]}
  users = [
    {user: admin, password: p, permissions: {publish: ">", subscribe: ">"}}
    {user: orders, password: p, permissions: {
      publish: {allow: ["orders.>", "$JS.API.>"], deny: "orders.secret"},
      subscribe: {allow: ["orders.*", "_INBOX.>"], deny: "orders.secret"}}}
    {user: reader, password: p, permissions: {publish: {deny: ">"}, subscribe: ["orders.>"]}}
    {user: worker, password: p, permissions: {
      publish: "_INBOX.>", subscribe: ["work.* workers", "work.* q.*", "_INBOX.>"]}}
    {user: responder, password: p, permissions: {
      subscribe: ["svc.>", "_INBOX.>"], allow_responses: {max: 2}}}
    {user: js_reader, password: p, permissions: {
      publish: ["$JS.API.STREAM.INFO.*", "$JS.API.CONSUMER.MSG.NEXT.ORDERS.*", "$JS.ACK.>"],
      subscribe: "_INBOX.>"}}
    {user: js_responder, password: p, permissions: {
      publish: ["$JS.API.STREAM.INFO.*", "$JS.API.CONSUMER.MSG.NEXT.ORDERS.*"],
      subscribe: "_INBOX.>", allow_responses: true}}
    {user: nobody, password: p}
  ]
}
"""
USERS = ["orders", "reader", "worker", "responder", "js_reader", "js_responder", "nobody"]
PUBLISH = ["orders.new", "orders.secret", "work.a", "svc.x", "dflt.x", "_INBOX.x", "other"]
SUBSCRIBE = [("orders.*", None), ("orders.new", None), ("orders.secret", None),
             ("orders.>", None), ("work.a", None), ("work.*", None), ("work.a", "workers"),
             ("work.a", "q.7"), ("work.a", "other"), ("work.*", "q.9"), ("svc.x", None),
             ("dflt.x", None), (">", None), ("_INBOX.>", None)]
DELIVERED = ["orders.new", "orders.secret", "orders.a.b", "work.a", "svc.x", "dflt.x"]


def _summary(answer: bytes | None):
    """What a JetStream answer says, without what differs between any two servers."""
    if answer is None:
        return None
    if not answer.startswith(b"{"):
        return answer.split(b"\r\n", 1)[0].decode()          # a status (no responders)
    body = json.loads(answer)
    out = {"type": body.get("type")}
    if "error" in body:
        out["error"] = (body["error"].get("code"), body["error"].get("err_code"))
    if "config" in body:
        out["name"] = body["config"].get("name")
    return out


def _outcomes(kind: str, tmp_path) -> dict:
    conf = tmp_path / "perms.conf"
    conf.write_text(CONF)
    out: dict = {}
    with start(kind, tmp_path / kind, conf) as srv:
        admin = Session(srv.port, "admin")
        stream = json.dumps({"name": "ORDERS", "subjects": ["orders.>"]}).encode()
        assert _summary(admin.request("$JS.API.STREAM.CREATE.ORDERS", stream)[1])["type"]
        for user in USERS:
            consumer = json.dumps({"stream_name": "ORDERS", "config": {
                "durable_name": f"C_{user}", "ack_policy": "explicit"}}).encode()
            admin.request(f"$JS.API.CONSUMER.CREATE.ORDERS.C_{user}", consumer)
        admin.exchange(b"SUB _INBOX.adm.> 1\r\n")
        sessions = {user: Session(srv.port, user) for user in USERS}

        for user, s in sessions.items():
            out[user, "publish"] = {subject: s.exchange(b"PUB %s 1\r\nx\r\n" % subject.encode())
                                    for subject in PUBLISH}
            out[user, "subscribe"] = {
                f"{subject} {queue or ''}": s.exchange(b"SUB %s %s%d\r\n" % (
                    subject.encode(), (queue + " ").encode() if queue else b"", 100 + i))
                for i, (subject, queue) in enumerate(SUBSCRIBE)}
        # what admin's publishes reach, through those subscriptions (admin's own
        # subscription on _INBOX.adm.> takes some of them too: they are skipped below)
        admin.exchange(b"".join(b"PUB %s 1\r\nm\r\n" % s.encode() for s in DELIVERED))
        time.sleep(0.3)
        for user, s in sessions.items():
            out[user, "delivered"] = sorted((f[1], f[5]) for f in s.exchange()
                                            if f[0] == "MSG")
        admin.exchange()

        for user, s in sessions.items():
            for sid in range(100, 100 + len(SUBSCRIBE)):
                s.send(b"UNSUB %d\r\n" % sid)
            create = json.dumps({"name": f"X_{user}", "subjects": [f"x.{user}"]}).encode()
            errors, answer = s.request(f"$JS.API.STREAM.CREATE.X_{user}", create,
                                       inbox=f"_INBOX.{user}")
            out[user, "stream create"] = (errors, _summary(answer))
            errors, answer = s.request("$JS.API.STREAM.INFO.ORDERS", inbox=f"_INBOX.{user}")
            out[user, "stream info"] = (errors, _summary(answer))
            # a pull request, the message it brings, and its ack
            reply = f"_INBOX.pull.{user}"
            s.exchange(b"SUB %s 7\r\n" % reply.encode())
            pull = b'{"batch":1,"expires":2000000000}'
            errors = s.exchange(b"PUB $JS.API.CONSUMER.MSG.NEXT.ORDERS.C_%s %s %d\r\n%s\r\n"
                                % (user.encode(), reply.encode(), len(pull), pull))
            msg = next((f for f in errors if f[0] == "MSG" and f[5] == "7"), None)
            errors = [f for f in errors if f[0] != "MSG"]
            while msg is None and not errors:
                msg = s.frame(5)
                if msg is None or (msg[0] == "MSG" and msg[5] == "7"):
                    break
                msg = None
            out[user, "pull"] = (errors, msg[1] if msg else None)
            if msg is not None and msg[0] == "MSG" and msg[2]:
                out[user, "ack"] = [re.sub(r"\$JS\.ACK\.[^\"]*", "$JS.ACK.<token>", f[0])
                                    for f in s.exchange(b"PUB %s 0\r\n\r\n" % msg[2].encode())]
                time.sleep(0.1)
                info = json.loads(admin.request(
                    f"$JS.API.CONSUMER.INFO.ORDERS.C_{user}")[1])
                out[user, "ack pending after ack"] = info["num_ack_pending"]

        # requests to each user on svc.x: what its replies draw, which reach the requester
        for user, s in sessions.items():
            s.exchange(b"SUB svc.x 50\r\n")
            admin.exchange(b"PUB svc.x _INBOX.adm.%s 1\r\nq\r\n" % user.encode())
            time.sleep(0.1)
            got = [f[2] for f in s.exchange() if f[0] == "MSG"]
            reply = b"_INBOX.adm.%s" % user.encode()
            out[user, "request delivered"] = got
            out[user, "replies"] = s.exchange(b"PUB %s 1\r\nr\r\n" % reply * 3)
            time.sleep(0.1)
            out[user, "replies received"] = sum(1 for f in admin.exchange()
                                                if f[0] == "MSG" and f[1] == reply.decode())
            out[user, "open"] = s.is_open()
        for s in list(sessions.values()) + [admin]:
            s.close()
    return out


def test_permission_matrix_as_nats_server(tmp_path):
    found = {kind: _outcomes(kind, tmp_path) for kind in KINDS}
    ours, theirs = found["jsstore"], found["nats-server"]
    assert set(ours) == set(theirs)
    different = {key: (ours[key], theirs[key]) for key in theirs if ours[key] != theirs[key]}
    assert different == {}
    # a few of nats-server's answers, pinned
    violation = 'Permissions Violation for Subscription to "work.a" using queue "other"'
    assert theirs["worker", "subscribe"]["work.a other"] == [(f"-ERR '{violation}'",)]
    assert theirs["worker", "subscribe"]["work.a q.7"] == []
    assert theirs["nobody", "publish"]["dflt.x"] == []
    assert theirs["responder", "replies received"] == 2
    assert theirs["js_responder", "ack pending after ack"] == 0
    assert theirs["worker", "stream create"] == (
        ["-ERR 'Permissions Violation for Publish to \"$JS.API.STREAM.CREATE.X_worker\"'"],
        None)
    assert all(theirs[user, "open"] for user in USERS)


async def _client_view(url: str) -> list:
    """What nats-py shows a user whose JetStream request is refused: the request's
    exception, and the -ERR its error callback is given."""
    errors = []

    async def on_error(exc):
        errors.append(str(exc))
    nc = await nats.connect(url, user="js_reader", password="p", error_cb=on_error)
    out = []
    try:
        js = nc.jetstream(timeout=1)
        for call in (lambda: js.add_stream(name="NEW", subjects=["new.>"]),
                     lambda: js.stream_info("ORDERS")):
            try:
                await call()
                out.append("answered")
            except Exception as exc:            # noqa: BLE001  (its class is the outcome)
                out.append(type(exc).__name__)
        await nc.flush()
    finally:
        await nc.close()
    return out + [errors]


def test_a_refused_jetstream_request_as_a_client_sees_it(tmp_path):
    conf = tmp_path / "perms.conf"
    conf.write_text(CONF)
    found = {}
    for kind in KINDS:
        with start(kind, tmp_path / kind, conf) as srv:
            found[kind] = run(_client_view(srv.url))
    assert found["jsstore"] == found["nats-server"]
    # the refused request times out (nats-server drops the publish: nothing answers, and
    # no "no responders" status comes); the allowed one is answered (no stream here)
    assert found["nats-server"] == [
        "TimeoutError", "NotFoundError",
        ['nats: permissions violation for publish to "$js.api.stream.create.new"']]


def test_reserved_replies_and_pedantic_publishes(tmp_path):
    """A reply subject under "_R_." (service import replies) is refused from any client;
    a pedantic client publishing on a wildcard subject is told so before the permission
    check runs."""
    conf = tmp_path / "perms.conf"
    conf.write_text(CONF)
    found = {}
    for kind in KINDS:
        with start(kind, tmp_path / kind, conf) as srv:
            admin = Session(srv.port, "admin")
            orders = Session(srv.port, "orders", pedantic=True)
            found[kind] = [
                admin.exchange(b"SUB foo 1\r\nPUB foo _R_.x 1\r\nx\r\nPUB foo _R_ 1\r\ny\r\n"),
                orders.exchange(b"PUB orders.* 1\r\nx\r\nPUB work.* 1\r\nx\r\n"
                                b"PUB orders.new _R_.y 1\r\nx\r\n"),
                admin.is_open(), orders.is_open()]
    assert found["jsstore"] == found["nats-server"]
    assert found["nats-server"][0][0] == (
        "-ERR 'Permissions Violation for Publish with Reply of \"_R_.x\"'",)


# (allow, deny, subject, queue): queue-group rules in allow and deny lists, with and
# without plain rules beside them, for plain and queue subscriptions
QUEUE_CASES = [
    (["foo.* q"], [], "foo.a", None), (["foo.* q"], [], "foo.a", "q"),
    (["foo.* q"], [], "foo.a", "r"), (["foo.* q.*"], [], "foo.a", "q.1"),
    (["foo.* q.*"], [], "foo.a", "q"), (["foo.*", "foo.* q"], [], "foo.a", "r"),
    (["foo.*", "foo.* q"], [], "foo.a", None), (["foo.* q"], [], "foo.*", "q"),
    ([], ["foo.* q"], "foo.a", "q"), ([], ["foo.* q"], "foo.a", "r"),
    ([], ["foo.* q"], "foo.a", None), ([], ["foo.*", "foo.* q"], "foo.a", "r"),
    ([], ["foo.* q.>"], "foo.a", "q.x.y"), ([">"], ["foo.> bad"], "foo.a.b", "bad"),
    (["foo.* *"], [], "foo.a", "any"), (["foo.* q.*"], [], "foo.a", "q.*"),
    (["foo.* q.1"], [], "foo.a", "q.*"), ([], ["foo.* q.1"], "foo.a", "q.*"),
]


def test_queue_group_rules_as_nats_server(tmp_path):
    users = "\n".join(
        f"    {{user: u{i}, password: p, permissions: {{subscribe: "
        f"{json.dumps({'allow': allow, 'deny': deny} if allow else {'deny': deny})}}}}}"
        for i, (allow, deny, _subject, _queue) in enumerate(QUEUE_CASES))
    conf = tmp_path / "queues.conf"
    conf.write_text("authorization {\n  users = [\n" + users + "\n  ]\n}\n")
    found = {}
    for kind in KINDS:
        with start(kind, tmp_path / kind, conf) as srv:
            answers = []
            for i, (_allow, _deny, subject, queue) in enumerate(QUEUE_CASES):
                s = Session(srv.port, f"u{i}")
                answers.append(s.exchange(b"SUB %s %s1\r\n" % (
                    subject.encode(), (queue + " ").encode() if queue else b"")))
                s.close()
            found[kind] = answers
    assert found["jsstore"] == found["nats-server"]
    assert found["nats-server"][2] == [
        ("-ERR 'Permissions Violation for Subscription to \"foo.a\" using queue \"r\"'",)]
