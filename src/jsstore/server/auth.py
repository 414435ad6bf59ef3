"""Who a client is: the credentials of its CONNECT checked against what the server was
configured with, as nats-server checks them -- a token, the one user and password given
to the server, one of the configured users (each in an account, with permissions), an
nkey user (the CONNECT's nkey, with its signature of the connection's nonce:
jsstore.server.nkey), or, with TLS verify_and_map, the user its client certificate
names (jsstore.server.certmap); a client that gives nothing connects as the
no_auth_user (a user or an nkey) when there is one."""

from __future__ import annotations

from jsstore.deferred import deferred
from jsstore.server.accounts import GLOBAL_ACCOUNT as GLOBAL

# loaded when a client signs with an nkey, or presents a certificate to map
certmap = deferred("jsstore.server.certmap")
nkey = deferred("jsstore.server.nkey")


class Identity:
    """A client that was let in: its account's name and its permissions (None: all)."""

    __slots__ = ("account", "permissions", "user")

    def __init__(self, account: str = GLOBAL, permissions: dict | None = None,
                 user: str = ""):
        self.account = account
        self.permissions = permissions
        self.user = user


ANYONE = Identity()


class Authenticator:
    """The server's authentication settings.  `users` holds password users ({user,
    password, permissions, account}) and nkey users ({nkey, permissions, account});
    `tls_map`: verify_and_map (users named by client certificates)."""

    def __init__(self, *, token: str | None = None, user: str | None = None,
                 password: str | None = None, users: list[dict] | None = None,
                 no_auth_user: str | None = None, tls_map: bool = False):
        self.token, self.user, self.password = token, user, password
        self.users = {u["user"]: u for u in users or () if "nkey" not in u}
        self.nkeys = {u["nkey"]: u for u in users or () if "nkey" in u}
        self.no_auth_user = no_auth_user
        self.tls_map = tls_map

    @property
    def required(self) -> bool:
        """Whether a client must authenticate (INFO's auth_required)."""
        return bool(self.token or self.user or self.users or self.nkeys)

    @property
    def nonce_required(self) -> bool:
        """Whether INFO carries a nonce for the client to sign (there are nkey users)."""
        return bool(self.nkeys)

    def authenticate(self, options: dict, nonce: str = "", cert=None) -> Identity | None:
        """The identity a CONNECT's options (decoded) give, None when refused; `nonce` is
        the one the connection's INFO carried, `cert` the client's certificate
        (jsstore.server.tls.PeerCertificate) when it presented one."""
        if self.token:
            return ANYONE if options.get("auth_token") == self.token else None
        if self.users or self.nkeys:
            return self._user(options, nonce, cert)
        if self.user:
            return (ANYONE if options.get("user") == self.user
                    and options.get("pass") == self.password else None)
        return ANYONE

    def _user(self, options: dict, nonce: str, cert) -> Identity | None:
        """nats-server's order: an nkey (the CONNECT's, else an nkey no_auth_user for a
        client that gives nothing at all), else a user (named by the certificate with
        verify_and_map, else the CONNECT's user, else the no_auth_user)."""
        no_auth = self.no_auth_user
        key = options.get("nkey")
        if (not key and no_auth in self.nkeys and not options.get("user")
                and not options.get("pass") and not options.get("auth_token")):
            key = no_auth
        if key and self.nkeys:
            entry = self.nkeys.get(key)
            if entry is None:
                return None
            if key != no_auth and not nkey.verify(key, nonce, options.get("sig")):
                return None
            return Identity(entry.get("account", GLOBAL), entry.get("permissions"), key)
        if not self.users:
            return None
        if self.tls_map:
            name = (certmap.mapped_user(cert.der, cert.alt_names, self.users)
                    if cert is not None else None)
            if name is None:
                return None
            entry = self.users[name]
            if options.get("pass", "") != entry["password"]:
                return None
        else:
            name = options.get("user")
            if (no_auth and not name and not options.get("pass")
                    and not options.get("auth_token")):
                entry = self.users.get(no_auth)
            else:
                entry = self.users.get(name)
                if entry is None or options.get("pass") != entry["password"]:
                    return None
            if entry is None:
                return None
        return Identity(entry.get("account", GLOBAL), entry.get("permissions"), entry["user"])
