"""Who a client is: the credentials of its CONNECT checked against what the server was
configured with, as nats-server checks them -- a token, the one user and password given
to the server, or one of the configured users (each in an account, with permissions); a
client that gives nothing connects as the no_auth_user when there is one."""

from __future__ import annotations

from jsstore.server.accounts import GLOBAL_ACCOUNT as GLOBAL


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
    def __init__(self, *, token: str | None = None, user: str | None = None,
                 password: str | None = None, users: list[dict] | None = None,
                 no_auth_user: str | None = None):
        self.token, self.user, self.password = token, user, password
        self.users = {u["user"]: u for u in users or ()}
        self.no_auth_user = no_auth_user

    @property
    def required(self) -> bool:
        """Whether a client must authenticate (INFO's auth_required)."""
        return bool(self.token or self.user or self.users)

    def authenticate(self, options: dict) -> Identity | None:
        """The identity a CONNECT's options (decoded) give, None when refused."""
        if self.token:
            return ANYONE if options.get("auth_token") == self.token else None
        if self.users:
            name = options.get("user")
            if (self.no_auth_user and not name and not options.get("pass")
                    and not options.get("auth_token")):
                entry = self.users[self.no_auth_user]
            else:
                entry = self.users.get(name)
                if entry is None or options.get("pass") != entry["password"]:
                    return None
            return Identity(entry.get("account", GLOBAL), entry.get("permissions"),
                            entry["user"])
        if self.user:
            return (ANYONE if options.get("user") == self.user
                    and options.get("pass") == self.password else None)
        return ANYONE
