"""The core's way out (jsstore._core.delivery.plans): frames rendered into a connection's buffer,
counts, UNSUB limits, queue picks, plans by subject and by inbox head, and the parser's
pass that delivers publishes with a plan while keeping their order with the operations
Python handles."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jsstore._core.delivery.plans import Conn, Interest, Plan, Subscription, Totals
from jsstore._core.wire.protocol import PING, PUB, SUB, Parser
from jsstore.wire.bus import Msg


class _Conn(Conn):
    """A connection with no socket: what the server's Client adds, the least of it."""

    def __init__(self, headers: bool = True, echo: bool = True):
        self.dirty = set()
        self.totals = Totals()
        self.headers = headers
        self.echo = echo
        self.gone = []

    def unsubscribe(self, sub):
        self.gone.append(sub)


def _frame(subject, sid, reply, hdr, payload) -> bytes:
    """A MSG / HMSG frame as nats-server writes it."""
    head = f"{subject} {sid} {reply} " if reply else f"{subject} {sid} "
    if hdr:
        return b"HMSG " + head.encode() + b"%d %d\r\n" % (len(hdr), len(hdr) + len(payload)) \
            + hdr + payload + b"\r\n"
    return b"MSG " + head.encode() + b"%d\r\n" % len(payload) + payload + b"\r\n"


def test_deliver_renders_nats_servers_frames_and_counts():
    conn = _Conn()
    sub = Subscription(conn, "a.*", None, "7")
    hdr = b"NATS/1.0\r\nK: v\r\n\r\n"
    conn.deliver(sub, "a.b", None, None, b"hi")
    conn.deliver(sub, "a.b", "_INBOX.1", hdr, b"xy")
    conn.deliver(sub, "a.\udce9", None, None, bytearray(b""))     # a subject's raw byte
    assert bytes(conn.out) == (_frame("a.b", "7", None, None, b"hi")
                               + _frame("a.b", "7", "_INBOX.1", hdr, b"xy")
                               + b"MSG a.\xe9 7 0\r\n\r\n")
    assert (conn.out_msgs, conn.out_bytes, sub.delivered) == (3, 2 + len(hdr) + 2, 3)
    assert (conn.totals.out_msgs, conn.totals.out_bytes) == (3, 2 + len(hdr) + 2)
    assert conn.dirty == {conn}


def test_a_connection_without_headers_gets_the_payload_alone():
    conn = _Conn(headers=False)
    sub = Subscription(conn, "a", None, "1")
    conn.deliver(sub, "a", None, b"NATS/1.0\r\n\r\n", b"data")
    assert bytes(conn.out) == b"MSG a 1 4\r\ndata\r\n"
    assert conn.out_bytes == 4


def test_an_unsub_limit_ends_the_subscription_at_its_last_delivery():
    conn = _Conn()
    sub = Subscription(conn, "a", None, "1")
    sub.max = 3
    msgs = [Msg("a", b"%d" % i) for i in range(5)]
    conn.deliver_many(sub, msgs[:2])
    assert conn.gone == []
    conn.deliver_many(sub, msgs[2:])
    assert sub.delivered == 3 and conn.gone == [sub]
    assert bytes(conn.out).count(b"MSG ") == 3


_SUBJECT = st.text(st.sampled_from("abcxyz.019é>*"), min_size=1, max_size=12)
_MSG = st.builds(
    Msg, _SUBJECT, st.one_of(st.binary(max_size=40), st.binary(max_size=40).map(bytearray)),
    st.one_of(st.none(), st.just(b""), st.just(b"NATS/1.0\r\n\r\n"),
              st.binary(min_size=1, max_size=30).map(lambda b: b"NATS/1.0\r\nK: " + b)),
    st.one_of(st.none(), st.just(""), _SUBJECT), _SUBJECT)


@settings(max_examples=300, deadline=None)
@given(st.lists(_MSG, max_size=12), st.text(st.sampled_from("0123456789ab"), min_size=1,
                                            max_size=6), st.booleans())
def test_a_burst_is_its_messages_delivered_one_by_one(msgs, sid, headers):
    """deliver_many (a pull batch) writes byte for byte what deliver writes for each
    message, and counts the same."""
    one, many = _Conn(headers=headers), _Conn(headers=headers)
    for msg in msgs:
        one.deliver(Subscription(one, "x", None, sid), msg.subject, msg.reply, msg.hdr,
                    msg.data)
    many.deliver_many(Subscription(many, "x", None, sid), msgs)
    assert bytes(many.out) == bytes(one.out)
    assert (many.out_msgs, many.out_bytes) == (one.out_msgs, one.out_bytes)


def _interest(plans: dict, heads: dict | None = None, unanswered=None):
    asked = []

    def compile(subject):
        asked.append(subject)
        return plans.get(subject)
    interest = Interest(compile, lambda head: (heads or {}).get(head),
                        unanswered or (lambda *a: None))
    return interest, asked


def test_plans_are_compiled_once_per_subject_and_forgotten_on_clear():
    conn = _Conn()
    plan = Plan([Subscription(conn, "a", None, "1")])
    interest, asked = _interest({"a": plan})
    assert interest.plan_for(b"a") is plan
    assert interest.plan_for(b"a") is plan and asked == ["a"]
    assert interest.plan_for(b"b") is None and interest.plan_for(b"b") is None
    assert asked == ["a", "b"]
    interest.clear()
    assert interest.plan_for(b"a") is plan and asked == ["a", "b", "a"]


def test_an_inbox_head_plan_serves_every_reply_subject_under_it():
    conn = _Conn()
    plan = Plan([Subscription(conn, "_INBOX.x.*", None, "1")])
    interest, asked = _interest({}, {"_INBOX.x": plan})
    assert all(interest.plan_for(b"_INBOX.x.%d" % i) is plan for i in range(100))
    assert asked == []
    # a last token that is a wildcard is asked for by itself
    assert interest.plan_for(b"_INBOX.x.*") is None and asked == ["_INBOX.x.*"]


def test_plans_take_only_subscriptions():
    for bad in ([object()], ):
        try:
            Plan(bad)
        except TypeError:
            continue
        raise AssertionError("a plan took something that is not a Subscription")
    try:
        Plan([], [[]])
    except TypeError:
        pass
    else:
        raise AssertionError("a plan took an empty queue group")


def _pubs(subject: bytes, count: int, reply: bytes = b"") -> bytes:
    head = subject + (b" " + reply if reply else b"")
    return b"".join(b"PUB %s %d\r\n%s\r\n" % (head, len(b"m%d" % i), b"m%d" % i)
                    for i in range(count))


def test_the_parser_delivers_planned_publishes_itself():
    origin, sink = _Conn(), _Conn()
    sub = Subscription(sink, "a", None, "9")
    interest, _ = _interest({"a": Plan([sub])})
    parser = Parser(origin=origin)
    parser.interest = interest
    assert parser.feed(_pubs(b"a", 3)) == [] and not parser.more
    assert bytes(sink.out) == b"".join(_frame("a", "9", None, None, b"m%d" % i)
                                       for i in range(3))
    assert (origin.in_msgs, origin.in_bytes, sink.out_msgs) == (3, 6, 3)


def test_operations_before_a_planned_publish_are_handed_out_first():
    """A SUB (or anything Python handles) ahead of planned publishes in one read: feed()
    returns it and stops, the publishes wait for the next feed(b"") (by then the SUB may
    have changed the plans)."""
    origin, sink = _Conn(), _Conn()
    interest, _ = _interest({"a": Plan([Subscription(sink, "a", None, "9")])})
    parser = Parser(origin=origin)
    parser.interest = interest
    ops = parser.feed(b"PING\r\nSUB b 1\r\n" + _pubs(b"a", 2) + b"PING\r\n" + _pubs(b"a", 1))
    assert [op[0] for op in ops] == [PING, SUB] and parser.more and not sink.out
    assert parser.feed(b"") == [(PING,)] and parser.more
    assert sink.out_msgs == 2
    assert parser.feed(b"") == [] and not parser.more and sink.out_msgs == 3


def test_publishes_without_a_plan_are_operations():
    origin = _Conn()
    interest, _ = _interest({})
    parser = Parser(origin=origin)
    parser.interest = interest
    assert parser.feed(_pubs(b"b", 2, b"r")) == [
        (PUB, "b", "r", None, b"m0"), (PUB, "b", "r", None, b"m1")]
    # a reply in the service imports' space is Python's to refuse, plan or none
    interest, _ = _interest({"a": Plan()})
    parser.interest = interest
    assert parser.feed(_pubs(b"a", 1, b"_R_.x")) == [(PUB, "a", "_R_.x", None, b"m0")]


def test_a_request_the_core_delivered_to_nobody_is_reported():
    told = []
    origin = _Conn(echo=False)
    own = Subscription(origin, "a", None, "1")          # (no echo: not to itself)
    interest, _ = _interest({"a": Plan([own])}, unanswered=lambda *a: told.append(a))
    parser = Parser(origin=origin)
    parser.interest = interest
    assert parser.feed(_pubs(b"a", 1, b"_INBOX.r")) == []
    assert told == [(origin, "a", "_INBOX.r")] and not origin.out


def test_each_message_reaches_one_member_of_a_queue_group():
    origin = _Conn(echo=False)
    members = [_Conn() for _ in range(4)]
    group = [Subscription(conn, "q", "workers", str(i)) for i, conn in enumerate(members)]
    group.append(Subscription(origin, "q", "workers", "own"))   # never picked: no echo
    interest, _ = _interest({"q": Plan([], [group])})
    parser = Parser(origin=origin)
    parser.interest = interest
    parser.feed(_pubs(b"q", 400))
    counts = [conn.out_msgs for conn in members]
    assert sum(counts) == 400 and origin.out_msgs == 0
    assert all(count > 50 for count in counts), counts     # (about 100 each)
    members[0].closed = True
    parser.feed(_pubs(b"q", 100))
    assert members[0].out_msgs == counts[0] and sum(c.out_msgs for c in members) == 500


def test_compiled_plans_must_be_plans():
    """A compile callback that gives anything but a Plan or None is a bug, said at once
    (the core would otherwise read it as a plan)."""
    interest = Interest(lambda subject: "plan", lambda head: 42, lambda *a: None)
    for subject in (b"a.b", b"a"):
        try:
            interest.plan_for(subject)
        except TypeError:
            continue
        raise AssertionError(f"{subject!r}: a compiled non-plan was taken")
