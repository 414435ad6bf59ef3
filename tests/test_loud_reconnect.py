"""A second CONNECT on one connection logs in anew, on `jsstore serve` as on nats-server
(one configuration file, raw sessions, the outcomes compared): whatever the connection
subscribed to as the user before is gone, whoever the new user is and whether or not the
new login succeeds, so a subscription never carries one user's rights into another's
login (nats-server's clearAccountSubs on a CONNECT that is not the first)."""

from __future__ import annotations

import time

import pytest
from rawsession import Session, differences, on_both

pytestmark = pytest.mark.natsserver

CONF = """
no_auth_user: guest
accounts {
  PUBLIC: { users: [ { user: guest, password: g } ] }
  SECRET: {
    users: [
      { user: alice, password: a }
      { user: reader, password: r,
        permissions: { publish: "_INBOX.>", subscribe: "public.>" } }
      { user: limited, password: l,
        permissions: { subscribe: { allow: ">", deny: "orders.secret" } } }
    ]
  }
}
"""


def _delivered(session: Session, frames: bytes = b"") -> list[tuple]:
    """(subject, sid, payload) of every message the session has after `frames`."""
    time.sleep(0.1)
    return [(f[1], f[5], f[4].decode()) for f in session.exchange(frames) if f[0] == "MSG"]


def _publish(port: int, user: str, password: str, subject: str, payload: bytes) -> None:
    publisher = Session(port, user, password)
    publisher.exchange(b"PUB %s %d\r\n%s\r\n" % (subject.encode(), len(payload), payload))
    publisher.close()


def _outcomes(port: int) -> dict:
    out = {}
    # the guest (no credentials) subscribes, then logs in as alice of SECRET
    client = Session(port)
    out["guest sub"] = client.exchange(b"SUB orders.> 1\r\nSUB orders.> q 2\r\n")
    client.send(b'CONNECT {"verbose":false,"user":"alice","pass":"a"}\r\n')
    _publish(port, "alice", "a", "orders.secret", b"s1")
    out["alice after the guest"] = _delivered(client)
    # alice's new subscription works, and the guest's sids can be used again
    out["alice subscribes"] = _delivered(
        client, b"SUB orders.> 1\r\nPUB orders.secret 2\r\ns2\r\n")
    # within one account: alice's subscription does not stay with the read-only user
    client.send(b'CONNECT {"verbose":false,"user":"reader","pass":"r"}\r\n')
    _publish(port, "alice", "a", "orders.secret", b"s3")
    out["reader after alice"] = _delivered(client)
    out["reader subscribes past its rights"] = client.exchange(b"SUB orders.> 3\r\n")
    client.close()

    # an auto-unsubscribe and a queue subscription go too
    client = Session(port, "alice", "a")
    client.exchange(b"SUB orders.> 1\r\nUNSUB 1 5\r\nSUB orders.> workers 2\r\n")
    client.send(b'CONNECT {"verbose":false,"user":"alice","pass":"a"}\r\n')
    _publish(port, "alice", "a", "orders.x", b"x1")
    out["same user again"] = _delivered(client)
    client.close()

    # a login that fails closes the connection, and its subscriptions are gone with it
    client = Session(port, "alice", "a")
    client.exchange(b"SUB orders.> 1\r\n")
    out["bad password"] = client.exchange(
        b'CONNECT {"verbose":false,"user":"alice","pass":"wrong"}\r\n')
    client.close()

    # the checks on the way out of one login (a denied subject) end with it
    client = Session(port, "limited", "l")
    out["limited"] = _delivered(client, b"SUB orders.> 1\r\nPUB orders.secret 2\r\nl1\r\n"
                                b"PUB orders.open 2\r\nl2\r\n")
    client.send(b'CONNECT {"verbose":false,"user":"alice","pass":"a"}\r\n')
    out["alice after limited"] = _delivered(
        client, b"SUB orders.> 1\r\nPUB orders.secret 2\r\nl3\r\n")
    client.close()

    # verbose: the second CONNECT is answered +OK like the first
    client = Session(port, "alice", "a", verbose=True)
    out["verbose"] = client.exchange(
        b'SUB orders.> 1\r\nCONNECT {"verbose":true,"user":"alice","pass":"a"}\r\n'
        b"PUB orders.v 2\r\nv1\r\n")
    client.close()
    return out


def test_second_connect_drops_subscriptions_as_nats_server(tmp_path):
    ours, theirs = on_both(tmp_path, CONF, _outcomes)
    assert differences(ours, theirs) == {}
    assert theirs["alice after the guest"] == []
    assert theirs["alice subscribes"] == [("orders.secret", "1", "s2")]
    assert theirs["reader after alice"] == []
    assert theirs["same user again"] == []
    assert theirs["bad password"] == [("-ERR 'Authorization Violation'",), ("closed",)]
    assert theirs["limited"] == [("orders.open", "1", "l2")]
    assert theirs["alice after limited"] == [("orders.secret", "1", "l3")]


CONNECTS = ['"account":"SECRET"', '"new_account":true',
            '"user":"alice","pass":"a","account":"SECRET"',
            '"user":"alice","pass":"a","new_account":true',
            '"user":"alice","pass":"a","jwt":"x"', '"user":"alice","pass":"a","protocol":5',
            '"user":"alice","pass":"a","protocol":-1', '"user":"alice","pass":"a","protocol":1',
            '"user":"alice","pass":"a","echo":"no"', '"user":"alice","pass":"a","name":5',
            '"user":"alice","pass":"a","no_responders":true,"headers":false']


def test_connect_options_are_judged_as_nats_server_judges_them(tmp_path):
    """Naming an account in CONNECT is refused even beside good credentials (it let the
    client in), and a protocol other than 0 or 1 is 'invalid client protocol'."""
    def outcomes(port: int) -> dict:
        found = {}
        for options in CONNECTS:
            session = Session(port, connect=False)
            found[options] = session.exchange(b"CONNECT {%s}\r\n" % options.encode())
            session.close()
        return found
    ours, theirs = on_both(tmp_path, CONF, outcomes)
    assert differences(ours, theirs) == {}
    assert theirs[CONNECTS[2]][0] == ("-ERR 'Authorization Violation'",)
    assert theirs[CONNECTS[5]][0] == ("-ERR 'invalid client protocol'",)
