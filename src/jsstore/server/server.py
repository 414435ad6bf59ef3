"""The listener, its clients and their accounts.

Every client belongs to one account (``jsstore.server.accounts``), chosen by its CONNECT
credentials (a configured user's account, the no_auth_user's for a client that gives
none, else the global account ``$G``).  A message a client publishes goes to every
matching subscription of its account (one member per queue group) and, when the account
has JetStream, into it (``$JS.API.*`` requests, acks, flow control replies, and the
subjects streams capture).  What JetStream sends (API answers, consumer deliveries,
advisories) comes back through its bus, which sees the account's subscriptions as
interest (``Bus.attach``).  A request nobody serves is answered ``503`` when the client
asked for no-responders statuses.  With `tls` (jsstore.server.tls) every client
connection is TLS.
"""

from __future__ import annotations

import itertools
import random
from typing import TYPE_CHECKING

from jsstore._core.delivery.plans import Totals
from jsstore._core.wire import protocol
from jsstore.deferred import deferred
from jsstore.gocompat import json as gojson
from jsstore.server.accounts import GLOBAL_ACCOUNT, Account
from jsstore.server.auth import Authenticator
from jsstore.server.client import Client
from jsstore.server.defaults import (
    DEFAULT_MAX_PAYLOAD,
    DEFAULT_MAX_PENDING,
    DEFAULT_SYNC_INTERVAL,
    GO_VERSION,
    LAME_DUCK_DURATION,
    LAME_DUCK_GRACE_PERIOD,
)
from jsstore.server.eventloop import Loop
from jsstore.server.limits import AccountLimits, Limits
from jsstore.server.listen import bound_socket
from jsstore.server.transport import Listener
from jsstore.version import __version__ as JSSTORE_VERSION
from jsstore.wire.api import SERVER_VERSION

if TYPE_CHECKING:
    from jsstore.server.tlsconfig import TLSSettings

# loaded when asked for: sync always's held answers, the monitoring port
durable_acks = deferred("jsstore.server.durable")
monitoring = deferred("jsstore.server.monitor")

# secrets.choice without importing secrets (hmac, hashlib): the same SystemRandom
_SYSTEM_RANDOM = random.SystemRandom()
_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


class Server:
    """`js` is the global account's JetStream; `accounts` maps other accounts' names to
    their JetStream (None: JetStream off for that account).  `no_auth_user` names the
    user a client that gives no credentials connects as.  `limits` are the limits on
    clients (``jsstore.server.limits``), `account_limits` maps accounts' names to theirs
    (AccountLimits keyword arguments)."""

    def __init__(self, js=None, *, host: str = "127.0.0.1", port: int = 4222,
                 server_name: str = "", max_payload: int = DEFAULT_MAX_PAYLOAD,
                 max_pending: int = DEFAULT_MAX_PENDING, token: str | None = None,
                 user: str | None = None, password: str | None = None,
                 users: list[dict] | None = None, accounts: dict | None = None,
                 no_auth_user: str | None = None, not_enabled=None,
                 sync_always: bool = False, sync_interval: int = DEFAULT_SYNC_INTERVAL,
                 tls: TLSSettings | None = None, limits: Limits | None = None,
                 account_limits: dict | None = None):
        self.host = host
        self.port = port
        self.server_id = "N" + "".join(_SYSTEM_RANDOM.choice(_ID_ALPHABET) for _ in range(55))
        self.server_name = server_name or self.server_id
        self.max_payload = max_payload
        self.max_pending = max_pending
        self.limits = limits or Limits()
        self.limits.settle_auth_timeout(tls.timeout if tls is not None else None)
        self.auth = Authenticator(token=token, user=user, password=password, users=users,
                                  no_auth_user=no_auth_user,
                                  tls_map=tls is not None and tls.verify_and_map)
        self.tls = tls
        self.tls_context = tls.context() if tls is not None else None
        self.slow_consumers = 0
        self.stats = {"total_connections": 0}
        self.totals = Totals()          # messages in and out, counted by the clients
        self.info_version = SERVER_VERSION
        self.lame_duck_duration = LAME_DUCK_DURATION
        self.lame_duck_grace_period = LAME_DUCK_GRACE_PERIOD
        self.ldm = False                            # in lame duck mode
        self.http_port: int | None = None         # the monitoring port (-m), when asked
        self.http_host: str | None = None         # its host, when not the server's
        self.monitor = None
        self.accounts: dict[str, Account] = {}
        jetstream = js is not None or any(a is not None for a in (accounts or {}).values())
        for name, account_js in {GLOBAL_ACCOUNT: js, **(accounts or {})}.items():
            self.accounts[name] = Account(self, name, account_js,
                                          not_enabled=not_enabled if jetstream else None)
        for name, values in (account_limits or {}).items():
            self.account(name).limits = AccountLimits(**values)
        # sync always: PubAcks held until their fsync (the stores' options carry a SyncGroup)
        self.durable = durable_acks.DurableAcks(self) if sync_always else None
        self.sync_interval = sync_interval          # ns, as configured (shown by /varz)
        self.clients: dict[int, Client] = {}
        self.dirty: set[Client] = set()
        self._cids = itertools.count(1)
        self._listener: Listener | None = None
        self.loop: Loop | None = None
        self._flush_scheduled = False
        self._info_template = None

    @property
    def global_account(self) -> Account:
        return self.accounts[GLOBAL_ACCOUNT]

    @property
    def js(self):
        """The global account's JetStream, else the first account's that has one."""
        found = self.global_account.js
        if found is None:
            found = next((a.js for a in self.accounts.values() if a.js is not None), None)
        return found

    def jetstreams(self) -> list:
        """Every account's JetStream."""
        return [a.js for a in self.accounts.values() if a.js is not None]

    # -- INFO -------------------------------------------------------------------------------
    def info_json(self, cid: int, **extra) -> bytes:
        info = {"server_id": self.server_id, "server_name": self.server_name,
                "version": SERVER_VERSION, "proto": 1, "go": GO_VERSION,
                "host": self.host, "port": self.port, "headers": True,
                **({"auth_required": True} if self.auth.required else {}),
                **({"tls_required": True} if self.tls is not None else {}),
                **({"tls_verify": True} if self.tls is not None
                   and self.tls.verify_clients else {}),
                "max_payload": self.max_payload, "jetstream": self.js is not None,
                "client_id": cid, "client_ip": "127.0.0.1",
                **({"ldm": True} if self.ldm else {}), **extra,
                "jsstore_version": JSSTORE_VERSION}
        return gojson.encode(info)

    def info_frame(self, cid: int, **extra) -> bytes:
        """The INFO frame a new client is sent (info_json's), spliced from a template while
        two clients' INFOs differ in nothing but the client id: a connection that is
        refused at once (a failed CONNECT) costs little.  An INFO with something of its
        own per connection in it (`extra`: an nkey nonce) is encoded anew each time."""
        if extra:
            return protocol.info_frame(self.info_json(cid, **extra))
        key = (self.ldm, self.js is not None, self.max_payload, self.port,
               self.auth.required)
        template = self._info_template
        if template is None or template[0] != key:
            template = self._info_template = (key, self._info_parts())
        parts = template[1]
        if parts is None:
            return protocol.info_frame(self.info_json(cid))
        return parts[0] + str(cid).encode() + parts[1]

    def _info_parts(self) -> tuple[bytes, bytes] | None:
        one = self.info_json(1_000_000_001).split(b'"client_id":1000000001')
        two = self.info_json(1_000_000_002).split(b'"client_id":1000000002')
        if len(one) != 2 or one != two:
            return None
        return b"INFO " + one[0] + b'"client_id":', one[1] + b"\r\n"

    def account(self, name: str) -> Account:
        """The account `name` (made, without JetStream, the first time it is named)."""
        account = self.accounts.get(name)
        if account is None:
            account = self.accounts[name] = Account(self, name)
        return account

    # -- clients ------------------------------------------------------------------------------
    def client_gone(self, client: Client) -> None:
        self.clients.pop(client.cid, None)
        if client.counted_in is not None:
            client.counted_in.connections -= 1
            client.counted_in = None
        self.dirty.discard(client)
        for sub in list(client.subs.values()):
            client.unsubscribe(sub)

    def flush_soon(self) -> None:
        """Write what the clients have waiting once this loop iteration's reads are all
        handled (answers to several reads go out in one write)."""
        if not self._flush_scheduled and self.loop is not None:
            self._flush_scheduled = True
            self.loop.call_soon(self.flush_all)

    def flush_all(self) -> None:
        self._flush_scheduled = False
        # (the set stays the one the clients hold: the core adds to it)
        dirty = list(self.dirty)
        self.dirty.clear()
        for client in dirty:
            client.flush()

    # -- running -------------------------------------------------------------------------------
    @property
    def loop_thread(self) -> int | None:
        """The thread that runs the server's loop (None before it has one)."""
        return self.loop.thread if self.loop is not None else None

    def start(self, loop: Loop | None = None) -> None:
        """Listen (the client port, and the monitoring port when asked for) on `loop` (a new
        one when None); clients are served while the loop runs."""
        self.loop = loop if loop is not None else Loop()
        port = 0 if self.port in (-1, 0) else self.port
        sock = bound_socket(self.host, port)
        self._listener = Listener(self.loop, sock, lambda: Client(self, next(self._cids)))
        self.port = sock.getsockname()[1]
        if self.http_port is not None:
            self.monitor = monitoring.Monitor(self, self.http_host or self.host, self.http_port)
            self.monitor.start()

    def run(self, ready=None, loop: Loop | None = None) -> None:
        """Listen and serve until the loop is stopped (``loop.stop()``, from another
        thread ``loop.stop_threadsafe()``), then stop; `ready(self)` is called once clients
        can connect."""
        self.start(loop)
        try:
            if ready is not None:
                ready(self)
            self.loop.run_forever()
        finally:
            self.stop()

    def stop(self, drain: float = 1.0) -> None:
        """Stop listening, write what the clients have waiting and close them (waiting up
        to `drain` seconds for their writes), stop every account's JetStream."""
        loop = self.loop
        if self.monitor is not None:
            self.monitor.stop()
            self.monitor = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            for client in list(self.clients.values()):
                client.flush()
                client.close()
            loop.run_until(lambda: not self.clients, drain)
        for account in self.accounts.values():
            account.stop_jetstream()
        if self.durable is not None:
            self.durable.close()
        if loop is not None:
            loop.close()

    def lame_duck(self, say=None, done=None) -> None:
        """nats-server's lame duck mode: stop accepting clients and stop JetStream (its
        state flushed and closed) at once; with no client left, that is all; else tell
        the clients (an INFO with ``ldm``, to those that speak protocol 1), wait the grace
        period, then close the clients one by one spread over what the duration leaves
        after the grace period (at most a second apart).  `done()` is called at the end
        (the caller shuts down then)."""
        say = say or (lambda text: None)
        done = done or (lambda: None)
        if self.ldm:
            return
        self.ldm = True
        say("Entering lame duck mode, stop accepting new clients")
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self.js is not None:
            say("Initiating JetStream Shutdown...")
            for account in self.accounts.values():
                account.stop_jetstream()
            say("JetStream Shutdown")
        if not self.clients:
            say("Initiating Shutdown...")
            done()
            return
        for client in list(self.clients.values()):
            if client.protocol >= 1:
                client.write(protocol.info_frame(self.info_json(client.cid)))
                self.dirty.add(client)
        self.flush_all()
        self.loop.call_later(self.lame_duck_grace_period, self._lame_duck_close, say, done)

    def _lame_duck_close(self, say, done) -> None:
        say("Closing existing clients")
        clients = list(self.clients.values())
        spread = self.lame_duck_duration - self.lame_duck_grace_period
        if spread <= 0:
            spread = 1.0
        pause = min(spread / len(clients), 1.0) if clients else 0.0

        def close_next(i: int) -> None:
            if i == len(clients):
                say("Initiating Shutdown...")
                done()
                return
            clients[i].flush()
            clients[i].close()
            if i < len(clients) - 1:
                self.loop.call_later(pause, close_next, i + 1)
            else:
                close_next(i + 1)

        close_next(0)
