"""One client connection: the protocol parser in, frames out.

Everything one read brings is parsed in one pass and handled in order; what it makes the
server send (to this client and to others) is buffered per client and written once at
the end of the read.  CONNECT options as nats-server reads them: verbose (+OK after each
operation), pedantic (subject checks), echo, headers, no_responders.  On a TLS server the
connection is upgraded (jsstore.server.tls) after INFO, or before it with handshake_first.
"""

from __future__ import annotations

import time

from jsstore._core.delivery.plans import Conn
from jsstore._core.storage.subjects import is_valid_subject
from jsstore._core.wire import protocol
from jsstore.deferred import deferred, deferred_logger
from jsstore.server.connect import decode_connect
from jsstore.server.limits import (
    MAX_ACCOUNT_CONNECTIONS,
    MAX_CONNECTIONS,
    MAX_SUBSCRIPTIONS,
    ClientTimers,
    lowest,
)
from jsstore.server.permissions import (
    RESERVED_REPLY,
    Guard,
    compiled,
    publish_violation,
    reply_violation,
    subscribe_violation,
)
from jsstore.server.subscriptions import Subscription

log = deferred_logger("jsstore.server")

# loaded when a server has nkey users, or TLS
nkey = deferred("jsstore.server.nkey")
tls_layer = deferred("jsstore.server.tls")


def no_responders(subject: str) -> bytes:
    """The status a requester gets when nothing serves `subject` (nats-server 2.15 names
    the subject)."""
    return b"NATS/1.0 503\r\nNats-Subject: " + subject.encode("utf-8", "surrogateescape") + \
        b"\r\n\r\n"


AUTHORIZATION_VIOLATION = "Authorization Violation"
INVALID_SUBJECT = "Invalid Subject"
INVALID_PUBLISH_SUBJECT = "Invalid Publish Subject"


class Client(Conn):
    """One client connection: its buffer, counters and deliveries are the core's
    (``Conn``); what the server queued for it is written once the loop has handled the
    reads at hand (Server.flush_all), and a client that does not read what it is sent
    beyond max_pending bytes is dropped as a slow consumer, as nats-server drops it."""

    def __init__(self, server, cid: int):
        self.server = server
        self.dirty = server.dirty
        self.totals = server.totals
        self.account = server.global_account   # set by CONNECT
        self.cid = cid
        self.parser = protocol.Parser(max_control_line=server.limits.max_control_line,
                                      max_payload=server.max_payload, origin=self)
        self.transport = None        # its SocketTransport (TLSTransport over it with TLS)
        self.subs: dict[str, Subscription] = {}
        self.verbose = False
        self.pedantic = False
        self.protocol = 0           # CONNECT's protocol: 1 takes INFO updates
        self.connect_info: bytes | None = None
        self.no_responders = False
        self.authorized = not server.auth.required
        self.connect_received = False       # a CONNECT came (the next one logs in anew)
        self.guard: Guard | None = None     # its permissions at work (None: it has none)
        self.max_subs = lowest(server.limits.max_subscriptions, -1)   # -1: none; see _admit
        self.timers: ClientTimers | None = None
        self.counted_in = None              # the account whose connections count it
        self.started = self.active = time.time()
        self._peer: tuple | None = None
        self.name = self.lang = self.version = ""
        self.last_read = 0.0        # time.monotonic() of its last read (the PING timer's)
        self.acks: list[str] = []   # plain acks not applied yet (Server.publish)
        self.nonce = ""             # INFO's, for nkey users to sign
        self.cert = None            # the client's TLS certificate (PeerCertificate)
        self.info_after_tls = False  # INFO waits for the TLS handshake (TLS-first)
        self.tls_first = False      # the handshake came before INFO (shown by /connz)
        self._fallback = None       # TLS-first's fallback to INFO first, while pending
        self._core_publishes()

    # -- the transport's calls -------------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        server = self.server
        if server.auth.nonce_required:
            self.nonce = nkey.new_nonce()
        tls = server.tls
        self.info_after_tls = tls is not None and tls.handshake_first
        if not self.info_after_tls:
            transport.write(server.info_frame(self.cid, **self._nonce()))
        if len(server.clients) >= server.limits.max_connections:
            # as nats-server: the INFO, then the refusal
            transport.write(protocol.err_frame(MAX_CONNECTIONS))
            self.closed = True
            transport.close()
            return
        server.clients[self.cid] = self
        server.stats["total_connections"] += 1
        if server.loop is not None:
            self.timers = ClientTimers(self, server.loop, server.limits,
                                       auth=not self.authorized)
        if tls is not None:
            self.transport = tls_layer.TLSTransport(transport, server.tls_context, tls.timeout,
                                                    self._tls_ready, server.loop)
            if self.info_after_tls and tls.fallback_delay > 0:
                self._fallback = server.loop.call_later(
                    tls.fallback_delay, self._tls_fallback)

    @property
    def peer(self) -> tuple:
        """The client's address and port."""
        if self._peer is None:
            peer = (self.transport.get_extra_info("peername") if self.transport else None) \
                or ("", 0)
            self._peer = (peer[0], peer[1]) if len(peer) >= 2 else ("", 0)
        return self._peer

    def _nonce(self) -> dict:
        return {"nonce": self.nonce} if self.nonce else {}

    def _tls_fallback(self) -> None:
        """A TLS-first client that said nothing within the fallback delay gets INFO in
        plain text, then the handshake as by default."""
        self._fallback = None
        self.info_after_tls = False
        self.transport.raw.write(self.server.info_frame(self.cid, **self._nonce()))
        self.transport.restart_timer()

    def _tls_ready(self) -> None:
        """The TLS handshake is done: the client's certificate, and INFO when it comes
        after the handshake."""
        self.cert = tls_layer.PeerCertificate.of(self.transport)
        self.tls_first = self.info_after_tls
        if self.info_after_tls:
            self.transport.write(self.server.info_frame(self.cid, **self._nonce()))

    def eof_received(self) -> None:
        return None             # (the client closed its side: the connection is closed)

    def connection_lost(self, exc) -> None:
        self.closed = True
        if self._fallback is not None:
            self._fallback.cancel()
        if self.timers is not None:
            self.timers.cancel()
        self.server.client_gone(self)

    def data_received(self, data: bytes) -> None:
        # the consumers this read lets deliver more (its publishes stored, its acks) gather
        # once each when it is handled (jsstore.jetstream.signals)
        js = self.account.js
        if js is None or not js.signals.defer():
            self._read(data)
            return
        try:
            self._read(data)
        finally:
            try:
                js.signals.settle()
            except Exception as exc:    # a bug: logged; the client stays connected
                self.internal_error(("GATHER", "the consumers this read signalled"), exc)
            if self.server.dirty:
                self.server.flush_soon()

    def _read(self, data: bytes) -> None:
        if self.server.tls is not None:
            if self._fallback is not None:      # the client spoke first: TLS-first
                self._fallback.cancel()
                self._fallback = None
            data = self.transport.feed(data)    # TLS records in, plain bytes out
            if not data:
                return
        server = self.server
        self.last_read = time.monotonic()
        self.active = time.time()
        self._plain_acks()
        lowered = -1        # a max_payload a CONNECT in this read lowered
        parser = self.parser
        # the parser delivers (and stores) the publishes the core has plans for itself,
        # takes the plain acks, and stops before either when operations came first
        # (parser.more): those are handled here, in order, before it reads on
        ops = parser.feed(data)
        while True:
            stopped = False
            for op in ops:
                try:
                    kind = op[0]
                    if not self.authorized and kind != protocol.CONNECT:
                        self.error_and_close(AUTHORIZATION_VIOLATION)
                        return
                    if kind == protocol.PUB:
                        if lowered >= 0 and len(op[4]) + len(op[3] or b"") > lowered:
                            self.error_and_close(protocol.MAX_PAYLOAD)
                            return
                        if self.verbose:            # nats-server says +OK before routing it
                            self.write(protocol.OK_FRAME)
                        self._pub(op[1], op[2], op[3], op[4])
                    elif kind == protocol.SUB:
                        if self.acks:
                            self.apply_acks()
                        self._sub(op[1], op[2], op[3])
                        self._plain_acks()
                    elif kind == protocol.UNSUB:
                        if self.acks:
                            self.apply_acks()
                        self._unsub(op[1], op[2])
                    elif kind == protocol.PING:
                        self.write(protocol.PONG_FRAME)
                        if self.connect_info is not None:
                            self.write(self.connect_info)
                            self.connect_info = None
                    elif kind == protocol.CONNECT:
                        if self.acks:
                            self.apply_acks()
                        if not self._connect(op[1]):
                            stopped = True
                            break
                        self._plain_acks()
                        if parser.max_payload < server.max_payload:
                            # its account's max_payload: the parser took what follows the
                            # CONNECT in this read under the server's, so it is checked
                            # here
                            lowered = parser.max_payload
                    elif kind == protocol.PONG:
                        if self.timers is not None:
                            self.timers.pong()
                    elif kind == protocol.OK or kind == protocol.INFO:
                        pass
                    elif kind == protocol.ERR:
                        pass
                    if self.verbose and kind in (protocol.SUB, protocol.UNSUB,
                                                 protocol.CONNECT):
                        self.write(protocol.OK_FRAME)
                except Exception:               # a bug: logged; the client stays connected
                    self.internal_error(op)
            if stopped or not parser.more:
                break
            ops = parser.feed(b"")
        if self.acks:
            # what this read asked for goes out first; its acks are applied while the
            # client reads that
            self.flush()
            self.apply_acks()
        error = self.parser.error
        if error is not None:
            kind, text = error
            if kind == protocol.SEND:
                self.write(protocol.err_frame(text))
            self.flush()
            self.close()
        if self.out:
            server.dirty.add(self)
        server.flush_soon()

    # -- writing --------------------------------------------------------------------------
    def flush(self) -> None:
        """Write what waits in the buffer (a slow consumer is cut off)."""
        out = self.out
        if out:
            # (a new buffer for what comes next: the transport may keep this one)
            self.out = bytearray()
            if self.transport is not None and not self.closed:
                self.transport.write(out)
                if self.transport.get_write_buffer_size() > self.server.max_pending:
                    # a slow consumer: it does not read what it is sent; nats-server
                    # drops it
                    self.server.slow_consumers += 1
                    self.closed = True
                    self.transport.abort()

    def error_and_close(self, text: str) -> None:
        self.write(protocol.err_frame(text))
        self.flush()
        self.close()

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.close()

    def internal_error(self, op, exc: BaseException | None = None) -> None:
        """An exception out of handling one operation (the one being handled, or `exc`)
        is a bug of jsstore's, not the client's: it is logged with its traceback and the
        connection stays up, as nats-server keeps a connection whose request failed
        inside the server (the request goes unanswered; the operations after it are
        handled)."""
        log.error("internal error handling %r from client %d",
                  op[:2] if isinstance(op, tuple) else op, self.cid,
                  exc_info=exc if exc is not None else True)

    def _core_publishes(self) -> None:
        """Have the core deliver this client's publishes that its account has plans for,
        unless it has not logged in or has permissions to check on each message."""
        self.parser.interest = (self.account.interest if self.authorized and not self.guard
                                else None)

    def _plain_acks(self) -> None:
        """Have the parser take this client's plain acks (see Parser.take_acks) while
        nobody but JetStream sees them: JetStream is on, nobody subscribes to ack
        subjects, and nothing is checked per message (verbose, pedantic, permissions)."""
        self.parser.take_acks = (
            self.authorized and self.account.router is not None
            and not self.account.table.ack_watchers
            and not (self.verbose or self.pedantic or self.guard))

    # -- operations ---------------------------------------------------------------------------
    def _connect(self, payload: bytes) -> bool:
        options = decode_connect(payload or b"{}")
        if options is None:         # nats-server closes the connection without an -ERR
            self.close()
            return False
        if self.connect_received:
            # a second CONNECT logs in anew, maybe as another user of another account:
            # as nats-server (clearAccountSubs), what the connection subscribed to as the
            # user before goes first, whatever the new login's outcome
            for sub in list(self.subs.values()):
                self.unsubscribe(sub)
        self.connect_received = True
        identity = self.server.auth.authenticate(options, self.nonce, self.cert)
        if identity is None or options.get("account") or options.get("new_account"):
            # (as nats-server: naming an account in CONNECT is an error, once optional for
            # sandbox set-ups, even beside good credentials)
            self.error_and_close(AUTHORIZATION_VIOLATION)
            return False
        account = self.server.account(identity.account)
        if not self._admit(account):
            return False
        self.authorized = True
        if self.timers is not None:
            self.timers.authorized()
        self.guard = Guard(compiled(identity.permissions)) if identity.permissions else None
        # (subscriptions before a first CONNECT are possible only where no login is
        # asked, all in the one global account; a second CONNECT dropped the others)
        self.account = account
        if self.guard is not None and self.guard.checks_deliveries:
            self._check_deliveries()
        else:           # (an earlier login's checks on the way out end with it)
            self._deliver_unchecked()
        self.name = options.get("name", "")
        self.lang = options.get("lang", "")
        self.version = options.get("version", "")
        self.verbose = options["verbose"]
        self.pedantic = options["pedantic"]
        self.echo = options["echo"]
        self.protocol = options.get("protocol", 0)
        if not 0 <= self.protocol <= 1:         # ClientProtoZero..ClientProtoInfo
            self.error_and_close("invalid client protocol")
            return False
        if self.protocol >= 1:
            # as nats-server: an INFO update telling the client which account it is in
            # (after the PONG to the first PING, as nats-server: a client's handshake
            # waits for that PONG and takes nothing else before it)
            self.connect_info = protocol.info_frame(self.server.info_json(
                self.cid, connect_info=True, remote_account=self.account.name,
                max_payload=self.parser.max_payload))
        self.headers = options.get("headers", False)
        self.no_responders = options.get("no_responders", False)
        if self.no_responders and not self.headers:
            self.error_and_close("no responders requires headers support")
            return False
        self._core_publishes()
        return True

    def _admit(self, account) -> bool:
        """Count this client in `account`, unless the account has all the connections it
        may have (nats-server's registerWithAccount); its limits become this client's."""
        limits = account.limits
        if self.counted_in is not account:      # (a second CONNECT: counted already)
            if 0 <= limits.max_connections <= account.connections:
                self.error_and_close(MAX_ACCOUNT_CONNECTIONS)
                return False
            if self.counted_in is not None:
                self.counted_in.connections -= 1
            account.connections += 1
            self.counted_in = account
        server = self.server
        self.max_subs = lowest(server.limits.max_subscriptions, limits.max_subscriptions)
        self.parser.max_payload = lowest(server.max_payload, limits.max_payload)
        if 0 <= self.max_subs <= len(self.subs) and server.loop is not None:
            # as nats-server (applyAccountLimits, on the side): told once what this read
            # brought is handled, closed 20 ms later
            server.loop.call_soon(self._over_subscription_limit)
        return True

    def _over_subscription_limit(self) -> None:
        if not self.closed:
            self.write(protocol.err_frame(MAX_SUBSCRIPTIONS))
            self.flush()
            self.server.loop.call_later(0.02, self.close)

    def _pub(self, subject: str, reply: str | None, hdr: bytes | None, payload: bytes) -> None:
        self.tally_in(1, len(payload) + (len(hdr) if hdr else 0))
        if self.pedantic and not is_valid_subject(subject, False):
            # as nats-server: the -ERR, and the message goes on all the same (a publish on
            # "a.*" reaches the subscriptions and streams its wildcard token matches)
            self.write(protocol.err_frame(INVALID_PUBLISH_SUBJECT))
        if self.guard is not None and not self.guard.may_publish(subject):
            self.write(protocol.err_frame(publish_violation(subject)))
            return
        if reply is not None and reply.startswith(RESERVED_REPLY):
            # (service import replies: nats-server refuses them from any client)
            self.write(protocol.err_frame(reply_violation(reply)))
            return
        self.account.publish(self, subject, reply, hdr, payload)

    def _sub(self, subject: str, queue: str | None, sid: str) -> None:
        if not is_valid_subject(subject, True):
            self.write(protocol.err_frame(INVALID_SUBJECT))
            return
        guard = self.guard
        if guard is not None:
            if not guard.may_subscribe(subject, queue):
                self.write(protocol.err_frame(subscribe_violation(subject, queue)))
                return
            if guard.watch(subject):
                self._check_deliveries()
        if 0 <= self.max_subs <= len(self.subs):
            self.write(protocol.err_frame(MAX_SUBSCRIPTIONS))
            return
        if sid in self.subs:
            return
        sub = Subscription(self, subject, queue, sid)
        self.subs[sid] = sub
        self.account.subscribe(sub)

    def _unsub(self, sid: str, limit: int) -> None:
        sub = self.subs.get(sid)
        if sub is None:
            return
        if limit > 0 and sub.delivered < limit:
            sub.max = limit
            self.account.interest.clear()   # (plans take subscriptions with no limit)
            return
        self.unsubscribe(sub)

    def apply_acks(self) -> None:
        """Apply the plain acks this client sent that wait (in the order sent)."""
        acks, self.acks = self.acks, []
        router = self.account.router
        if router is not None and acks:
            router.ack_many(acks)

    def unsubscribe(self, sub: Subscription) -> None:
        if self.subs.pop(sub.sid, None) is not None:
            self.account.unsubscribe(sub)

    # -- permissions on the way out -----------------------------------------------------
    def _check_deliveries(self) -> None:
        """Have every delivery to this client pass its Guard first (a deny filter, reply
        subjects to track): checking versions of deliver and deliver_many replace the
        plain ones on this client only, so that other clients' deliveries pay nothing."""
        self.deliver = self._deliver_guarded
        self.deliver_many = self._deliver_many_guarded
        self.checked = True
        self.account.interest.clear()       # (plans deliver unchecked: none may hold it)

    def _deliver_unchecked(self) -> None:
        """Deliveries to this client go out unchecked again (the class's own methods)."""
        self.__dict__.pop("deliver", None)
        self.__dict__.pop("deliver_many", None)
        if self.checked:
            self.checked = False
            self.account.interest.clear()

    def _deliver_guarded(self, sub: Subscription, subject: str, reply: str | None,
                         hdr: bytes | None, payload: bytes) -> None:
        """deliver, through the Guard: a denied subject is dropped uncounted."""
        if self.guard.delivers(subject, reply):
            Conn.deliver(self, sub, subject, reply, hdr, payload)

    def _deliver_many_guarded(self, sub: Subscription, msgs: list) -> None:
        delivers = self.guard.delivers
        msgs = [msg for msg in msgs if delivers(msg.subject, msg.reply)]
        if msgs:
            Conn.deliver_many(self, sub, msgs)
