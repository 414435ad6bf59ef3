"""The listener, message routing between clients, and the bridge to JetStream.

A message a client publishes goes to every matching client subscription (one member per
queue group) and, when JetStream is on, into JetStream (``$JS.API.*`` requests, acks,
flow control replies, and the subjects streams capture).  What JetStream sends (API
answers, consumer deliveries, advisories) comes back through its bus, which sees the
clients' subscriptions as interest (``Bus.attach``): consumers deliver to client inboxes
and deliver subjects as they would to in-process subscribers.  A request nobody serves is
answered ``503`` when the client asked for no-responders statuses.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import threading

from jsstore._core import protocol
from jsstore.api import schemas
from jsstore.api.router import PULL_REQUEST_PREFIX, is_plain_ack
from jsstore.gocompat import json as gojson
from jsstore.server.client import HOLD_TIME, NO_RESPONDERS, Client
from jsstore.server.defaults import (
    DEFAULT_MAX_PAYLOAD,
    DEFAULT_MAX_PENDING,
    GO_VERSION,
    LAME_DUCK_DURATION,
    LAME_DUCK_GRACE_PERIOD,
)
from jsstore.server.monitor import Monitor
from jsstore.server.subscriptions import SubjectTable, Subscription
from jsstore.version import __version__ as JSSTORE_VERSION

_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def _unanswered(hdr, data) -> None:
    """Where answers to a message without a reply subject go: nowhere."""


class Server:
    def __init__(self, js=None, *, host: str = "127.0.0.1", port: int = 4222,
                 server_name: str = "", max_payload: int = DEFAULT_MAX_PAYLOAD,
                 max_pending: int = DEFAULT_MAX_PENDING, token: str | None = None,
                 user: str | None = None, password: str | None = None,
                 users: list[dict] | None = None):
        self.js = js
        self.host = host
        self.port = port
        self.server_id = "N" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(55))
        self.server_name = server_name or self.server_id
        self.max_payload = max_payload
        self.max_pending = max_pending
        self.token, self.user, self.password = token, user, password
        self.users = {u["user"]: u for u in users or ()}
        self.auth_required = bool(token or user or self.users)
        self.slow_consumers = 0
        self.stats = {"total_connections": 0, "in_msgs": 0, "in_bytes": 0, "out_msgs": 0,
                      "out_bytes": 0}
        self.info_version = schemas.SERVER_VERSION
        self.lame_duck_duration = LAME_DUCK_DURATION
        self.lame_duck_grace_period = LAME_DUCK_GRACE_PERIOD
        self.ldm = False                            # in lame duck mode
        self.http_port: int | None = None         # the monitoring port (-m), when asked
        self.monitor = None
        self.table = SubjectTable()
        self.clients: dict[int, Client] = {}
        self.dirty: set[Client] = set()
        self._cids = itertools.count(1)
        self._server: asyncio.base_events.Server | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._flush_scheduled = False
        self._router = js.router() if js is not None else None
        if js is not None:
            js.bus.attach(self)

    # -- INFO -------------------------------------------------------------------------------
    def info_json(self, cid: int, **extra) -> bytes:
        info = {"server_id": self.server_id, "server_name": self.server_name,
                "version": schemas.SERVER_VERSION, "proto": 1, "go": GO_VERSION,
                "host": self.host, "port": self.port, "headers": True,
                "max_payload": self.max_payload, "jetstream": self.js is not None,
                "client_id": cid, "client_ip": "127.0.0.1",
                **({"auth_required": True} if self.auth_required else {}),
                **({"ldm": True} if self.ldm else {}), **extra,
                "jsstore_version": JSSTORE_VERSION}
        return gojson.encode(info)

    def account_of(self, user: str | None) -> str:
        entry = self.users.get(user) if user else None
        return entry.get("account", "$G") if entry else "$G"

    def authorize(self, options: dict):
        """A CONNECT's credentials: False when refused, else the user's permissions (None
        for none) -- by token, by the user and password given to the server, or by one of
        the configured users."""
        if self.token:
            return options.get("auth_token") == self.token and None
        if self.users:
            entry = self.users.get(options.get("user"))
            if entry is None or options.get("pass") != entry["password"]:
                return False
            return entry.get("permissions")
        if self.user:
            return (options.get("user") == self.user
                    and options.get("pass") == self.password) and None
        return None

    # -- subscriptions ------------------------------------------------------------------------
    def subscribe(self, sub: Subscription) -> None:
        self.table.insert(sub)
        if self.js is not None:
            self.js.bus.interest_changed(sub.subject)

    def unsubscribe(self, sub: Subscription) -> None:
        self.table.remove(sub)
        if self.js is not None:
            self.js.bus.interest_changed(sub.subject)

    def client_gone(self, client: Client) -> None:
        self.clients.pop(client.cid, None)
        self.dirty.discard(client)
        for sub in list(client.subs.values()):
            client.unsubscribe(sub)

    # -- routing ------------------------------------------------------------------------------
    def route(self, subject: str, target: str, reply: str | None, hdr: bytes | None,
              payload: bytes, origin: Client | None = None) -> int:
        """Deliver to the client subscriptions matching `target` (the frames carry
        `subject`); returns how many got it."""
        count = 0
        for sub in self.table.match(target):
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
        delivered = self.route(subject, subject, reply, hdr, payload, origin)
        handled = False
        router = self._router
        if router is not None:
            if is_plain_ack(subject, payload, reply):
                origin.acks.append(subject)
                return
            if origin.acks and not (subject.startswith(PULL_REQUEST_PREFIX)
                                    and router.pull_may_precede_acks(subject, payload)):
                origin.apply_acks()
            if reply:
                def send(answer_hdr, data):
                    self.route(reply, reply, None, answer_hdr, data)
            else:
                send = _unanswered
            handled = router.dispatch(subject, payload, hdr, send, reply)
        if reply and not delivered and not handled and origin.no_responders:
            for sub in self.table.match(reply):
                if sub.client is origin:
                    origin.deliver(sub, reply, None, NO_RESPONDERS, b"")

    def publish_run(self, origin: Client, run: list) -> None:
        """Consecutive PUB/HPUBs of one read (subject, reply, hdr, payload) on subjects
        outside ``$JS.``: each routed, stored when a stream captures it and answered, as
        `publish` does one by one, under one hold of JetStream's lock."""
        router = self._router
        if origin.acks:
            origin.apply_acks()
        route, capture, match = self.route, router.capture_locked, self.table.match
        frame = protocol.msg_frame
        answered = answered_bytes = 0           # answers put straight into origin.out
        # (not for a publisher with a deny filter: its deliver checks each subject)
        direct = origin if origin.denied_deliveries is None else None
        with router.lock:
            for subject, reply, hdr, payload in run:
                # route() inlined for the common cases: nobody subscribes to what is
                # stored, and the publisher's own inbox subscription takes the answer
                delivered = (route(subject, subject, reply, hdr, payload, origin)
                             if match(subject) else 0)
                answer = capture(subject, payload, hdr)
                if not reply:
                    continue
                if answer is not None:
                    for sub in match(reply):
                        client = sub.client
                        if client is direct and not sub.max and not client.closed:
                            # (origin.out, not a copy of it: a flush on the way,
                            # say of a pull batch a publish released, replaces it)
                            origin.out.append(frame(reply, sub.sid, None, None, answer))
                            sub.delivered += 1
                            answered += 1
                            answered_bytes += len(answer)
                        elif not client.closed:
                            client.deliver(sub, reply, None, None, answer)
                elif not delivered and origin.no_responders:
                    for sub in self.table.match(reply):
                        if sub.client is origin:
                            origin.deliver(sub, reply, None, NO_RESPONDERS, b"")
        if answered:
            origin.count_out(answered, answered_bytes)

    # -- the JetStream bus's outside (Bus.attach) ------------------------------------------
    def has_interest(self, subject: str) -> bool:
        return self.table.has_interest(subject)

    def deliver(self, msg) -> int:
        """A message JetStream published: to the clients, now when this is the event loop's
        thread (or no loop runs yet), else handed to the loop."""
        if self.loop is None or threading.get_ident() == self._loop_thread:
            count = self.route(msg.subject, msg.to or msg.subject, msg.reply, msg.hdr,
                               bytes(msg.data))
            self._schedule_flush()
            return count
        self.loop.call_soon_threadsafe(self._deliver_later, msg)
        return 1

    def deliver_many(self, msgs: list) -> int:
        """Messages JetStream publishes to one target in a burst (a pull batch): matched
        once, rendered into each receiving client's buffer in one go."""
        if self.loop is None or threading.get_ident() == self._loop_thread:
            return self._route_many(msgs)
        self.loop.call_soon_threadsafe(self._route_many, msgs)
        return 1

    def _route_many(self, msgs: list) -> int:
        first = msgs[0]
        count = 0
        for sub in self.table.match(first.to or first.subject):
            client = sub.client
            if not client.closed:
                client.deliver_many(sub, msgs)
                count += 1
                if not client.hold():
                    client.flush()      # a burst goes out as soon as it is ready
        self._schedule_flush()
        return count

    def _deliver_later(self, msg) -> None:
        self.route(msg.subject, msg.to or msg.subject, msg.reply, msg.hdr, bytes(msg.data))
        self._schedule_flush()

    def flush_soon(self) -> None:
        """Write what the clients have waiting once this loop iteration's reads are all
        handled (answers to several reads go out in one write)."""
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled and self.loop is not None:
            self._flush_scheduled = True
            self.loop.call_soon(self.flush_all)

    def flush_all(self) -> None:
        self._flush_scheduled = False
        dirty, self.dirty = self.dirty, set()
        for client in dirty:
            if client.hold():
                if not client.held:
                    client.held = True
                    self.loop.call_later(HOLD_TIME, client.release)
            else:
                client.flush()

    # -- running -------------------------------------------------------------------------------
    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        port = 0 if self.port in (-1, 0) else self.port
        self._server = await self.loop.create_server(
            lambda: Client(self, next(self._cids)), self.host, port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        if self.http_port is not None:
            self.monitor = Monitor(self, self.host, self.http_port)
            await self.monitor.start()

    async def stop(self) -> None:
        if self.monitor is not None:
            await self.monitor.stop()
            self.monitor = None
        if self._server is not None:
            self._server.close()
            for client in list(self.clients.values()):
                client.flush()
                client.close()
            await self._server.wait_closed()
            self._server = None
        if self.js is not None:
            self.js.close()

    async def lame_duck(self, log=None) -> None:
        """nats-server's lame duck mode: stop accepting clients and stop JetStream (its
        state flushed and closed) at once, tell the clients (an INFO with ``ldm``, to
        those that speak protocol 1), wait the grace period, then close the clients one
        by one spread over the duration (at most a second apart).  The caller shuts
        down afterwards."""
        say = log or (lambda text: None)
        if self.ldm:
            return
        self.ldm = True
        say("Entering lame duck mode, stop accepting new clients")
        if self._server is not None:
            self._server.close()
        if self.js is not None:
            say("Initiating JetStream Shutdown...")
            js, self.js, self._router = self.js, None, None
            js.close()
            say("JetStream Shutdown")
        for client in list(self.clients.values()):
            if client.protocol >= 1:
                client.out.append(protocol.info_frame(self.info_json(client.cid)))
                self.dirty.add(client)
        self.flush_all()
        await asyncio.sleep(self.lame_duck_grace_period)
        say("Closing existing clients")
        clients = list(self.clients.values())
        pause = min(self.lame_duck_duration / len(clients), 1.0) if clients else 0.0
        for i, client in enumerate(clients):
            client.flush()
            client.close()
            if i < len(clients) - 1:
                await asyncio.sleep(pause)
        say("Initiating Shutdown...")

    async def serve(self, ready=None) -> None:
        """Listen until cancelled; `ready()` is called once clients can connect."""
        await self.start()
        if ready is not None:
            ready(self)
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()
