"""What a parsed configuration file (``jsstore.server.config``) means to the server:
the options ``jsstore serve`` takes, under the command line's names.

What is used: port, host/listen, server_name, max_payload, http/http_port/monitor_port,
jetstream {store_dir, max_memory_store, max_file_store, domain, sync_interval (or sync):
``always`` or a duration} (or ``jetstream: enabled``), authorization {token |
user+password | users [{user, password, permissions}], default_permissions, timeout},
accounts {NAME: {users [...], default_permissions, limits {max_connections,
max_subscriptions, max_payload}, jetstream: enabled | {limits}}} (each account's users
join the user list, its JetStream limits go to ``accounts``, its limits {} to
``account_limits``), no_auth_user, lame_duck_duration, lame_duck_grace_period, the
limits max_connections, max_subscriptions, max_control_line, max_pending, ping_interval
and ping_max, and tls {cert_file, key_file, ca_file, verify, verify_and_map, timeout,
handshake_first}; users may be nkey users ({nkey: U..., permissions}).  Permissions are
read by ``jsstore.server.permissions``.
"""

from __future__ import annotations

from jsstore.gocompat.durations import SECOND, parse_go_duration
from jsstore.server import nkey
from jsstore.server.config import ConfigError
from jsstore.server.permissions import parse_permissions, with_defaults
from jsstore.server.tlsconfig import settings_from_config

# the server-wide limits (nats-server's names and aliases) -> serve options
_LIMITS = {"max_connections": "max_connections", "max_conn": "max_connections",
           "max_subscriptions": "max_subscriptions", "max_subs": "max_subscriptions",
           "max_control_line": "max_control_line", "max_pending": "max_pending",
           "ping_max": "ping_max", "max_pings_out": "ping_max"}
# an account's limits {} block (parseAccountLimits) -> AccountLimits fields
_ACCOUNT_LIMIT_KEYS = {"max_connections": "max_connections", "max_conn": "max_connections",
                       "max_subscriptions": "max_subscriptions", "max_subs": "max_subscriptions",
                       "max_payload": "max_payload", "max_pay": "max_payload",
                       "max_leafnodes": None, "max_leafs": None}


def _integer(key: str, value) -> int:
    """A whole-number option: a number, or a string of digits."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{key}: expected an integer, got {value!r}") from None


def _user_permissions(entry: dict) -> dict | None:
    """A user's permissions (under any of nats-server's names for them)."""
    for key in ("permissions", "permission", "authorization"):
        if key in entry:
            return parse_permissions(entry[key])
    return None


def _default_permissions(block: dict, keys: tuple[str, ...]) -> dict | None:
    for key in keys:
        if key in block:
            return parse_permissions(block[key])
    return None


def _account_limits(name: str, raw) -> dict:
    if not isinstance(raw, dict):
        raise ConfigError(f"Expected account limits to be a map/struct, got {raw!r}")
    out = {}
    for key, value in raw.items():
        if str(key).lower() not in _ACCOUNT_LIMIT_KEYS:
            raise ConfigError(f'Unknown field "{key}" parsing account limits')
        field = _ACCOUNT_LIMIT_KEYS[str(key).lower()]
        if field is not None:           # (leaf nodes are not served)
            out[field] = _integer(f"account {name} limits {key}", value)
    return out


def _limits(config: dict) -> dict:
    """The server-wide limits: counts, ping_interval (seconds) and the authorization
    timeout (seconds)."""
    out = {}
    for key, value in config.items():
        name = _LIMITS.get(key)
        if name is not None:
            out[name] = _integer(key, value)
    if "ping_interval" in config:
        out["ping_interval"] = _duration_ns("ping_interval", config["ping_interval"]) / SECOND
    return out


def _auth_timeout(value) -> float:
    """authorization's timeout in seconds: a number of seconds or a Go duration string."""
    if isinstance(value, str):
        try:
            return parse_go_duration(value) / SECOND
        except ValueError:
            raise ConfigError(f"error parsing authorization config, 'timeout' "
                              f"{value!r} is not a duration") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError("error parsing authorization config, 'timeout' wrong type")
    return float(value)


def _users(raw, account: str = "$G") -> list[dict]:
    users = []
    if raw and not isinstance(raw, list):
        raise ConfigError(f"users: expected an array of users, got {raw!r}")
    for entry in raw or []:
        if isinstance(entry, dict) and "nkey" in entry:
            users.append(_nkey_user(entry, account))
        elif isinstance(entry, dict) and "user" in entry:
            users.append({"user": str(entry["user"]),
                          "password": str(entry.get("password", entry.get("pass", ""))),
                          "permissions": _user_permissions(entry),
                          "account": account})
    return users


def _nkey_user(entry: dict, account: str) -> dict:
    """A user given as {nkey: U..., permissions}, checked as nats-server checks it."""
    key = str(entry["nkey"])
    if "user" in entry or "password" in entry or "pass" in entry:
        raise ConfigError("Nkey users do not take usernames or passwords")
    try:
        valid = nkey.is_user_key(key)
    except ImportError:
        raise ConfigError("nkey users need the nkeys package (pip install nkeys)") from None
    if not valid:
        raise ConfigError("Not a valid public nkey for a user")
    return {"nkey": key, "permissions": _user_permissions(entry),
            "account": account}


# an account's jetstream {...} keys (nats-server's spellings) -> AccountLimits fields
_ACCOUNT_LIMITS = {
    "max_memory": "max_memory", "max_mem": "max_memory", "mem": "max_memory",
    "memory": "max_memory",
    "max_store": "max_storage", "max_file": "max_storage", "max_disk": "max_storage",
    "store": "max_storage", "disk": "max_storage",
    "max_streams": "max_streams", "streams": "max_streams",
    "max_consumers": "max_consumers", "consumers": "max_consumers",
    "max_bytes_required": "max_bytes_required", "max_stream_bytes": "max_bytes_required",
    "max_bytes": "max_bytes_required",
    "mem_max_stream_bytes": "memory_max_stream_bytes",
    "memory_max_stream_bytes": "memory_max_stream_bytes",
    "disk_max_stream_bytes": "storage_max_stream_bytes",
    "store_max_stream_bytes": "storage_max_stream_bytes",
    "max_ack_pending": "max_ack_pending",
}


def account_jetstream(name: str, value) -> dict | None:
    """An account's ``jetstream`` setting: its limits (AccountLimits fields; those not set
    are unlimited), or None when JetStream is off for it."""
    if isinstance(value, bool):
        return {} if value else None
    if isinstance(value, str):
        word = value.lower()
        if word in ("enabled", "enable"):
            return {}
        if word in ("disabled", "disable"):
            return None
        raise ConfigError(f"account {name}: expected 'enabled' or 'disabled' for string "
                          f"value, got {value!r}")
    if not isinstance(value, dict):
        raise ConfigError(f"account {name}: expected map, bool or string to define "
                          f"JetStream, got {type(value).__name__}")
    limits = {}
    for key, raw in value.items():
        field = _ACCOUNT_LIMITS.get(key.lower())
        if field is None:
            raise ConfigError(f"account {name}: unknown field {key!r} in jetstream")
        if field == "max_bytes_required":
            if not isinstance(raw, bool):
                raise ConfigError(f"Expected a parseable bool for {key!r}, got {raw!r}")
        elif not isinstance(raw, int) or isinstance(raw, bool):
            raise ConfigError(f"Expected a parseable size for {key!r}, got {raw!r}")
        limits[field] = raw
    return limits


def server_options(config: dict) -> dict:
    """The serve options a configuration gives (the same names as the command line's)."""
    out: dict = {}
    if "port" in config:
        out["port"] = config["port"]
    listen = config.get("listen")
    if isinstance(listen, str) and ":" in listen:
        host, port = listen.rsplit(":", 1)
        out["host"], out["port"] = host, _integer("listen", port)
    for key in ("host", "net"):
        if key in config:
            out["host"] = str(config[key])
    if "server_name" in config:
        out["server_name"] = str(config["server_name"])
    if "max_payload" in config:
        out["max_payload"] = _integer("max_payload", config["max_payload"])
    for key in ("http", "http_port", "monitor_port"):
        if key in config:
            value = config[key]
            out["http_port"] = _integer(key, str(value).rsplit(":", 1)[-1])
    jetstream = config.get("jetstream")
    if jetstream:
        out["jetstream"] = True
        if isinstance(jetstream, dict):
            if "store_dir" in jetstream:
                out["store_dir"] = str(jetstream["store_dir"])
            for key in ("max_memory_store", "max_file_store", "max_mem", "max_file"):
                if key in jetstream:
                    out[key] = jetstream[key]
            if jetstream.get("domain"):
                out["domain"] = str(jetstream["domain"])
            for key in ("sync", "sync_interval"):
                if key in jetstream:
                    out["sync_interval"] = sync_interval(key, jetstream[key])
        elif isinstance(jetstream, str) and jetstream.lower() not in ("enabled", "enable"):
            out["store_dir"] = jetstream
    if "store_dir" in config:
        out["store_dir"] = str(config["store_dir"])
    auth = config.get("authorization") or {}
    if isinstance(auth, dict):
        if "token" in auth:
            out["token"] = str(auth["token"])
        if "user" in auth:
            out["user"] = str(auth["user"])
            out["password"] = str(auth.get("password", auth.get("pass", "")))
        users = _users(auth.get("users"))
        with_defaults(users, _default_permissions(
            auth, ("default_permission", "default_permissions", "permissions")))
        if "timeout" in auth:
            out["auth_timeout"] = _auth_timeout(auth["timeout"])
    else:
        users = []
    accounts, account_limits = {}, {}
    if not isinstance(config.get("accounts") or {}, dict):
        raise ConfigError(f"accounts: expected a map of accounts, got {config['accounts']!r}")
    for name, account in (config.get("accounts") or {}).items():
        if isinstance(account, dict):
            account_users = _users(account.get("users"), str(name))
            with_defaults(account_users, _default_permissions(account,
                                                              ("default_permissions",)))
            users += account_users
            accounts[str(name)] = account_jetstream(str(name), account.get("jetstream", False))
            if "limits" in account:
                account_limits[str(name)] = _account_limits(str(name), account["limits"])
    if accounts:
        out["accounts"] = accounts
    if account_limits:
        out["account_limits"] = account_limits
    if users:
        out["users"] = users
    if "no_auth_user" in config:
        name = str(config["no_auth_user"])
        if not any(name in (user.get("user"), user.get("nkey")) for user in users):
            raise ConfigError(f'no_auth_user: "{name}" not present as user or nkey in '
                              f'authorization block or account configuration')
        out["no_auth_user"] = name
    out.update(_lame_duck(config))
    if "tls" in config:
        out["tls"] = settings_from_config(config["tls"])
    out.update(_limits(config))
    return out


MIN_LAME_DUCK_DURATION = 30 * SECOND          # nats-server refuses anything shorter


def _duration_ns(key: str, value) -> int:
    """A duration option: a Go duration string, or a number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value * SECOND)
    try:
        return parse_go_duration(str(value))
    except ValueError:
        raise ConfigError(f"invalid {key} of {value}") from None


def sync_interval(key: str, value):
    """jetstream's sync_interval (or sync) as nats-server reads it: "always" in any case, a
    Go duration string, or an integer number of seconds (which nats-server takes with a
    warning); "always" or nanoseconds."""
    if isinstance(value, str):
        if value.lower() == "always":
            return "always"
        try:
            return parse_go_duration(value)
        except ValueError as exc:
            raise ConfigError(f"error parsing {key}: {exc}") from None
    if isinstance(value, int) and not isinstance(value, bool):
        return value * SECOND
    # nats-server fails on its type assertion to int64
    gotype = {bool: "bool", float: "float64", list: "[]interface {}",
              dict: "map[string]interface {}"}.get(type(value), type(value).__name__)
    raise ConfigError(f"interface conversion: interface {{}} is {gotype}, not int64")


def _lame_duck(config: dict) -> dict:
    """lame_duck_duration and lame_duck_grace_period, checked as nats-server does."""
    out = {}
    if "lame_duck_duration" in config:
        duration = _duration_ns("lame_duck_duration", config["lame_duck_duration"])
        if duration < MIN_LAME_DUCK_DURATION:
            raise ConfigError(f"invalid lame_duck_duration of {config['lame_duck_duration']}"
                              f", minimum is 30 seconds")
        out["lame_duck_duration"] = duration / SECOND
    if "lame_duck_grace_period" in config:
        grace = _duration_ns("lame_duck_grace_period", config["lame_duck_grace_period"])
        if grace < 0:
            raise ConfigError("invalid lame_duck_grace_period, needs to be positive")
        out["lame_duck_grace_period"] = grace / SECOND
    return out
