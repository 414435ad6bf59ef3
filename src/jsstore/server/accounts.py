"""One account of a server: its clients' subscriptions and its JetStream.

Accounts isolate, as on nats-server: a message published by a client of account A reaches
only A's subscriptions and A's streams; A's JetStream (streams in
``<store_dir>/jetstream/A/``) answers only A's ``$JS.API`` requests.  An account without
JetStream on a server that has it answers those requests with "JetStream not enabled for
account" (10039).  With a JetStream domain, ``$JS.<domain>.API.>`` is the same API as
``$JS.API.>``.

The account is also the outside of its JetStream's bus (``Bus.attach``): what the
JetStream sends (API answers, deliveries, advisories) goes to the account's subscribers.
"""

from __future__ import annotations

import threading

from jsstore._core.delivery.plans import Interest, Plan
from jsstore._core.storage.subjects import is_literal, is_valid_subject
from jsstore.server.client import Client, no_responders
from jsstore.server.limits import NO_ACCOUNT_LIMITS
from jsstore.server.subscriptions import SubjectTable, Subscription
from jsstore.wire.api import PULL_REQUEST_PREFIX, is_plain_ack

API_PREFIX = "$JS.API."
JS_SUBJECTS = "$JS."            # JetStream's own: acks, the API, flow control, ...


def matches_nothing(subject: str) -> bool:
    """Whether a published subject has an empty token ("a..b", ".a", "a."): nats-server's
    subject table matches such a subject to nothing, so no subscription, stream or API
    handler sees it (a requester with no_responders is told so)."""
    return ".." in subject or subject[:1] == "." or subject[-1:] == "."
GLOBAL_ACCOUNT = "$G"


def _unanswered(hdr, data) -> None:
    """Where answers to a message without a reply subject go: nowhere."""


class _RouterToBe:
    """An account's router until something uses it: the wire API handlers (jsstore.api)
    load with the first request or publish into JetStream, not with the server's start.
    The first attribute asked of it makes the JetStream's router (``js.router()``), puts it
    in the account's ``router`` in its place, and answers from it."""

    __slots__ = ("account",)

    def __init__(self, account: "Account"):
        self.account = account

    def __getattr__(self, name: str):
        account = self.account
        if account.router is self:
            account.router = account.js.router()
        return getattr(account.router, name)

    def dispatch(self, subject: str, payload: bytes, hdr: bytes | None, send,
                 reply: str | None = None) -> bool:
        """A publish outside ``$JS.`` while the account has no stream is JetStream's no
        more than a core publish is: not handled, and the router not made for it."""
        if not subject.startswith("$JS.") and not self.account.js.has_streams():
            return False
        return self.__getattr__("dispatch")(subject, payload, hdr, send, reply)


class Account:
    """One account's subject table, its JetStream (or None) and the routing between
    them; see the module's docstring."""

    def __init__(self, server, name: str, js=None, *, not_enabled=None):
        self.server = server
        self.name = name
        self.js = js
        # what the core delivers by itself: plans compiled from the table (and the
        # streams), forgotten whenever either changes; its pick of queue members is the
        # table's too
        self.interest = Interest(self._plan, self._inbox_plan, self._no_responders,
                                 self._publish_failed)
        self.table = SubjectTable(self.interest.pick)
        self.limits = NO_ACCOUNT_LIMITS     # its limits {} block
        self.connections = 0                # its clients, counted against those limits
        self.router = _RouterToBe(self) if js is not None else None
        # answers the API requests of an account without JetStream (None: nobody does)
        self.not_enabled = not_enabled
        domain = js.domain if js is not None else None
        self.domain_prefix = f"$JS.{domain}.API." if domain else None
        if js is not None:
            js.server_name = server.server_name
            js.bus.attach(self)
            js.route_watchers.append(self.interest.clear)
            self.interest.lock = js.lock        # (held while the core stores a publish)

    def stop_jetstream(self) -> None:
        """Close the JetStream (lame duck mode, shutdown); the account goes on without."""
        js, self.js, self.router = self.js, None, None
        self.interest.clear()
        if js is not None:
            js.close()

    # -- subscriptions ------------------------------------------------------------------------
    def subscribe(self, sub: Subscription) -> None:
        self.table.insert(sub)
        self.interest.clear()
        if self.js is not None:
            self.js.bus.interest_changed(sub.subject)

    def unsubscribe(self, sub: Subscription) -> None:
        self.table.remove(sub)
        self.interest.clear()
        if self.js is not None:
            self.js.bus.interest_changed(sub.subject)

    # -- the core's plans (jsstore._core.delivery.plans) ----------------------------------
    def _plan(self, subject: str) -> Plan | None:
        """What the core does with a publish on `subject` without asking Python: None
        when Python decides each message (JetStream's subjects and the streams'; a
        subscriber whose deliveries are checked or limited)."""
        if subject.startswith(JS_SUBJECTS):
            return None
        valid = is_valid_subject(subject, False)
        if matches_nothing(subject):
            return Plan(valid=valid)
        target = None
        if self.js is not None:
            js = self.js
            with js.lock:
                if js.closed:
                    return None
                stream = js.capturing_stream_locked(subject)
                if stream is not None:
                    # stored by the core when the stream only stores, nothing checks the
                    # account's limits on each message and no answer waits for an fsync
                    target = stream.plain_target()
                    if (target is None or stream.usage_check is not None
                            or self.server.durable is not None):
                        return None
        return self._plan_of(self.table.matching(subject), valid, target)

    def _inbox_plan(self, head: str) -> Plan | None:
        """One plan for every subject ``<head>.<token>`` when they all reach the same
        subscriptions (those to ``<head>.*``: an inbox) and no stream takes any of them;
        else None."""
        if head.startswith(JS_SUBJECTS) or not is_literal(head) \
                or matches_nothing(head + ".x"):
            return None
        subs = self.table.star_only(head)
        if subs is None:
            return None
        if self.js is not None:
            js = self.js
            with js.lock:
                if js.closed or js.captures_any_under_locked(head):
                    return None
        return self._plan_of(subs)

    @staticmethod
    def _publish_failed(origin: Client, exc: BaseException) -> None:
        """A publish the core stored failed after that (a bug): logged as the client's
        internal error; the message stays stored, unanswered, as on Python's way."""
        origin.internal_error(("PUB", "stored by the core"), exc)

    @staticmethod
    def _plan_of(subs: list, valid: bool = True, target=None) -> Plan | None:
        plain, groups = [], {}
        for sub in subs:
            if sub.max or sub.client.checked:
                return None
            if sub.queue:
                groups.setdefault(sub.queue, []).append(sub)
            else:
                plain.append(sub)
        return Plan(plain, groups.values(), valid, target)

    # -- routing ------------------------------------------------------------------------------
    def route(self, subject: str, target: str, reply: str | None, hdr: bytes | None,
              payload: bytes, origin: Client | None = None) -> int:
        """Deliver to the subscriptions matching `target` (the frames carry `subject`):
        by its plan when it has one (the core's one way), else here; returns how many got
        it."""
        count = self.interest.route(subject, target, reply, hdr, payload, origin)
        if count >= 0:
            return count
        count = 0
        skip = origin if origin is not None and not origin.echo else None
        for sub in self.table.match(target, skip):
            client = sub.client
            if client is origin and not client.echo:
                continue
            if not client.closed:
                client.deliver(sub, subject, reply, hdr, payload)
                count += 1
        return count

    def publish(self, origin: Client, subject: str, reply: str | None, hdr: bytes | None,
                payload: bytes) -> None:
        """A client's PUB/HPUB.

        Plain acks (no reply, nothing but an ack) wait in the client's ``acks`` until its
        read is handled or something that might depend on them comes (Client.apply_acks):
        a pull request that gets the same answer either way is served ahead of them, so
        that its messages are written before the acks are applied.  nats-server has
        acks on a queue of their own as well."""
        if matches_nothing(subject):
            if reply:
                self._no_responders(origin, subject, reply)
            return
        delivered = self.route(subject, subject, reply, hdr, payload, origin)
        handled = False
        router = self.router
        if router is not None:
            if is_plain_ack(subject, payload, reply):
                origin.acks.append(subject)
                return
            if self.domain_prefix is not None and subject.startswith(self.domain_prefix):
                subject = API_PREFIX + subject[len(self.domain_prefix):]
            if origin.acks and not (subject.startswith(PULL_REQUEST_PREFIX)
                                    and router.pull_may_precede_acks(subject, payload)):
                origin.apply_acks()
            answer_to = (self._held_answer_to(reply) if self.server.durable is not None
                         and not subject.startswith("$JS.") else self._answer_to(reply))
            handled = router.dispatch(subject, payload, hdr, answer_to, reply)
        elif self.not_enabled is not None:
            handled = self.not_enabled(subject, self._answer_to(reply))
        if reply and not delivered and not handled:
            self._no_responders(origin, subject, reply)

    def _no_responders(self, origin: Client, subject: str, reply: str) -> None:
        """Tell a client that asked for it that nothing serves `subject`: on its first
        subscription outside queue groups that takes `reply` (nats-server's subForReply),
        a status written as it is, not a delivery (no count, no UNSUB limit)."""
        if origin.no_responders:
            for sub in self.table.matching(reply):
                if sub.client is origin and not sub.queue:
                    status = no_responders(subject)
                    origin.write(b"HMSG %s %s %d %d\r\n%s\r\n" % (
                        reply.encode("utf-8", "surrogateescape"), sub.sid_wire,
                        len(status), len(status), status))
                    return

    def _answer_to(self, reply: str | None):
        if not reply:
            return _unanswered

        def send(answer_hdr, data):
            self.route(reply, reply, None, answer_hdr, data)
        return send

    def _held_answer_to(self, reply: str | None):
        """With sync always: the answer to a stored publish waits for its fsync."""
        if not reply:
            return _unanswered
        durable = self.server.durable

        def send(answer_hdr, data):
            if answer_hdr:
                self.route(reply, reply, None, answer_hdr, data)
            else:
                durable.hold(self, reply, data)
        return send

    # -- the JetStream bus's outside (Bus.attach) ------------------------------------------
    def has_interest(self, subject: str) -> bool:
        if threading.get_ident() == self.server.loop_thread:
            # (the plans are the loop's: JetStream's timer thread asks the table)
            reach = self.interest.reach(subject)
            if reach >= 0:
                return reach > 0
        return self.table.has_interest(subject)

    def deliver(self, msg) -> int:
        """A message JetStream published: to the clients, now when this is the event loop's
        thread (or no loop runs yet), else handed to the loop."""
        server = self.server
        if server.loop is None or threading.get_ident() == server.loop_thread:
            count = self.route(msg.subject, msg.to or msg.subject, msg.reply, msg.hdr,
                               bytes(msg.data))
            server.flush_soon()
            return count
        server.loop.call_soon_threadsafe(self._deliver_later, msg)
        return 1

    def deliver_many(self, msgs: list, at_once: bool = False) -> int:
        """Messages JetStream publishes to one target in a burst (a consumer's run):
        matched once, rendered into each receiving client's buffer in one go, and
        written with the loop turn's other output or, `at_once`, now."""
        server = self.server
        if server.loop is None or threading.get_ident() == server.loop_thread:
            return self._route_many(msgs, at_once)
        server.loop.call_soon_threadsafe(self._route_many, msgs, at_once)
        return 1

    def run_target(self, to: str):
        """The account's Interest when it has a plan for `to` and this is the event
        loop's thread (the core renders a consumer's run through it), else None."""
        server = self.server
        if server.loop is not None and threading.get_ident() != server.loop_thread:
            return None
        interest = self.interest
        return interest if interest.plan_for(to.encode("utf-8", "surrogateescape")) else None

    def ran(self, at_once: bool) -> None:
        """A consumer's run was rendered into the clients' buffers (see Bus.ran)."""
        if at_once:
            self.server.flush_all()
        else:
            self.server.flush_soon()

    def _route_many(self, msgs: list, at_once: bool) -> int:
        first = msgs[0]
        count = 0
        for sub in self.table.match(first.to or first.subject):
            client = sub.client
            if not client.closed:
                client.deliver_many(sub, msgs)
                count += 1
                if at_once:
                    client.flush()
        self.server.flush_soon()
        return count

    def _deliver_later(self, msg) -> None:
        self.route(msg.subject, msg.to or msg.subject, msg.reply, msg.hdr, bytes(msg.data))
        self.server.flush_soon()

    def flush_soon(self) -> None:
        self.server.flush_soon()
