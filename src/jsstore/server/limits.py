"""The limits a server puts on its clients, as nats-server puts them: how many may connect
(to the server, to an account), how many subscriptions one may hold, how large a control
line and a payload may be, and the two timers it keeps on a client -- the keepalive PINGs
(a client that leaves ping_max of them unanswered is dropped as a stale connection) and,
when clients must authenticate, the time a client has to send its CONNECT.

A server-wide max_subscriptions of 0 means no limit; an account's limits are limits from
0 up (0: none allowed), -1 is none.  A client's own limit is the lower of the server's
and its account's."""

from __future__ import annotations

import random
import time

from jsstore._core.wire import protocol

DEFAULT_MAX_CONNECTIONS = 64 * 1024     # DEFAULT_MAX_CONNECTIONS
DEFAULT_MAX_CONTROL_LINE = 4096         # MAX_CONTROL_LINE_SIZE
DEFAULT_PING_INTERVAL = 120.0           # DEFAULT_PING_INTERVAL, seconds
DEFAULT_PING_MAX = 2                    # DEFAULT_PING_MAX_OUT
DEFAULT_AUTH_TIMEOUT = 2.0              # AUTH_TIMEOUT, seconds
FIRST_PING_INTERVAL = 2.0               # the first PING comes no later (plus up to 20%)

MAX_CONNECTIONS = "maximum connections exceeded"
MAX_ACCOUNT_CONNECTIONS = "maximum account active connections exceeded"
MAX_SUBSCRIPTIONS = "maximum subscriptions exceeded"
STALE_CONNECTION = "Stale Connection"
AUTHENTICATION_TIMEOUT = "Authentication Timeout"


def lowest(server: int, account: int) -> int:
    """The tighter of a server-wide limit (0 or less: none) and an account's (below 0:
    none); -1 when there is none."""
    limits = [limit for limit in (server if server > 0 else -1, account) if limit >= 0]
    return min(limits) if limits else -1


class Limits:
    """The server-wide limits (times in seconds)."""

    def __init__(self, *, max_connections: int = DEFAULT_MAX_CONNECTIONS,
                 max_subscriptions: int = 0, ping_interval: float = DEFAULT_PING_INTERVAL,
                 ping_max: int = DEFAULT_PING_MAX, auth_timeout: float | None = None,
                 max_control_line: int = DEFAULT_MAX_CONTROL_LINE):
        self.max_connections = max_connections if max_connections > 0 else \
            DEFAULT_MAX_CONNECTIONS
        self.max_subscriptions = max_subscriptions
        self.ping_interval = ping_interval if ping_interval > 0 else DEFAULT_PING_INTERVAL
        self.ping_max = ping_max if ping_max > 0 else DEFAULT_PING_MAX
        # None until the server settles it: nats-server's default is AUTH_TIMEOUT, or the
        # TLS handshake timeout plus a second on a TLS server (getDefaultAuthTimeout)
        self.auth_timeout = auth_timeout if auth_timeout and auth_timeout > 0 else None
        self.max_control_line = max_control_line if max_control_line > 0 else \
            DEFAULT_MAX_CONTROL_LINE


    def settle_auth_timeout(self, tls_timeout: float | None) -> None:
        """The authentication timeout when the configuration gave none."""
        if self.auth_timeout is None:
            self.auth_timeout = (DEFAULT_AUTH_TIMEOUT if tls_timeout is None
                                 else tls_timeout + 1.0)


class AccountLimits:
    """An account's own limits (its ``limits {}`` block): -1 for none."""

    __slots__ = ("max_connections", "max_subscriptions", "max_payload")

    def __init__(self, max_connections: int = -1, max_subscriptions: int = -1,
                 max_payload: int = -1):
        self.max_connections = max_connections
        self.max_subscriptions = max_subscriptions
        self.max_payload = max_payload


NO_ACCOUNT_LIMITS = AccountLimits()


class ClientTimers:
    """One client's timers on the event loop.

    The ping timer (processPingTimer): fires every ping_interval (the first time sooner:
    at most FIRST_PING_INTERVAL, plus up to a fifth more); the client is sent a PING
    unless it sent something other than a PONG within the last interval and has answered
    a PING before (nats-server measures the round trip that way), and unless it already
    leaves ping_max of them unanswered: then it gets ``-ERR 'Stale Connection'`` and is
    closed.  A PONG from it clears the count.  The auth timer: a client of a server that requires authentication
    that has not been let in by CONNECT within auth_timeout gets ``-ERR 'Authentication
    Timeout'`` and is closed."""

    __slots__ = ("client", "loop", "limits", "out", "ping", "auth", "answered", "pong_read")

    def __init__(self, client, loop, limits: Limits, *, auth: bool):
        self.client, self.loop, self.limits = client, loop, limits
        self.out = 0
        self.answered = False           # it has answered a PING
        self.pong_read = 0.0            # when the read with its last PONG came
        # a client that must authenticate first has only the auth timer until it has (a
        # refused one costs one timer); its PINGs start then
        self.ping = None if auth else self._first_ping()
        self.auth = loop.call_later(limits.auth_timeout, self._auth) if auth else None

    def _first_ping(self):
        first = min(self.limits.ping_interval, FIRST_PING_INTERVAL)
        first += random.random() * first / 5
        return self.loop.call_later(first, self._ping)

    def _ping(self) -> None:
        client = self.client
        if client.closed:
            return
        interval = self.limits.ping_interval
        last = client.last_read
        if (not self.answered or last <= self.pong_read
                or time.monotonic() - last >= interval):
            if self.out + 1 > self.limits.ping_max:
                client.error_and_close(STALE_CONNECTION)
                return
            self.out += 1
            client.write(protocol.PING_FRAME)
            client.flush()
        self.ping = self.loop.call_later(interval, self._ping)

    def pong(self) -> None:
        if self.out:
            self.answered = True
        self.out = 0
        self.pong_read = self.client.last_read

    def _auth(self) -> None:
        self.auth = None
        if not self.client.closed and not self.client.authorized:
            self.client.error_and_close(AUTHENTICATION_TIMEOUT)

    def authorized(self) -> None:
        if self.auth is not None:
            self.auth.cancel()
            self.auth = None
            self.ping = self._first_ping()

    def cancel(self) -> None:
        if self.auth is not None:
            self.auth.cancel()
            self.auth = None
        if self.ping is not None:
            self.ping.cancel()
