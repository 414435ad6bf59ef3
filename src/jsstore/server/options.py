"""What a parsed configuration file (``jsstore.server.config``) means to the server:
the options ``jsstore serve`` takes, under the command line's names.

Which keys are read, accepted or refused is ``jsstore.server.configkeys`` (every key of
nats-server's); this module reads those it lets through: the listen address, limits,
monitoring port, logging, JetStream (its store, limits, domain and sync interval),
authorization (a token, one user, or users with permissions and nkeys), accounts (their
users, default permissions, limits {} and JetStream limits), no_auth_user, lame duck
timing and tls {} (``jsstore.server.tlsconfig``). Permissions are read by
``jsstore.server.permissions``.  Cross checks are nats-server's: a user name or nkey is
configured once across the authorization block and every account, a token or a single
user excludes a users array and accounts' users.
"""

from __future__ import annotations

from jsstore.gocompat.durations import SECOND, parse_go_duration
from jsstore.gocompat.quoting import quote
from jsstore.server import nkey
from jsstore.server.config import ConfigError
from jsstore.server.configkeys import ACCOUNT_JETSTREAM_FIELDS, ACCOUNT_LIMIT_FIELDS
from jsstore.server.configkeys import check as check_keys
from jsstore.server.permissions import parse_permissions, with_defaults
from jsstore.server.tlsconfig import settings_from_config

# the server-wide limits (nats-server's names and aliases) -> serve options
_LIMITS = {"max_connections": "max_connections", "max_conn": "max_connections",
           "max_subscriptions": "max_subscriptions", "max_subs": "max_subscriptions",
           "max_control_line": "max_control_line", "max_pending": "max_pending",
           "ping_max": "ping_max"}


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
    for key, value in raw.items():     # (the keys: checked by configkeys)
        field = ACCOUNT_LIMIT_FIELDS[key]
        if field is not None:
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
    if raw is not None and not isinstance(raw, list):
        raise ConfigError(f"Expected users field to be an array, got {raw}")
    for entry in raw or []:
        if not isinstance(entry, dict):
            raise ConfigError(f"Expected user entry to be a map/struct, got {entry}")
        if "nkey" in entry:
            users.append(_nkey_user(entry, account))
        elif entry.get("user", entry.get("username")):
            users.append({"user": str(entry.get("user", entry.get("username"))),
                          "password": _password(entry),
                          "permissions": _user_permissions(entry),
                          "account": account})
        else:
            raise ConfigError("User entry requires a user")
    return users


def _password(entry: dict) -> str:
    return str(entry.get("password", entry.get("pass", "")))


def _at(place: str | None, text: str) -> str:
    """An error as nats-server words it: where it is, then what."""
    return f"{place}: {text}" if place else text


def _unique_users(users: list[dict], seen: set, place: str | None) -> None:
    """nats-server's rule: a user name or nkey is configured once, in the authorization
    block and every account taken together (the last one would otherwise win)."""
    for user in users:
        name = user.get("nkey") or user["user"]
        if name in seen:
            kind = "nkey" if user.get("nkey") else "user"
            raise ConfigError(_at(place, f"Duplicate {kind} {quote(name)} detected"))
        seen.add(name)


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
    for key, raw in value.items():     # (the keys: checked by configkeys)
        field = ACCOUNT_JETSTREAM_FIELDS[key]
        if field == "max_bytes_required":
            if not isinstance(raw, bool):
                raise ConfigError(f"Expected a parseable bool for {key!r}, got {raw!r}")
        elif not isinstance(raw, int) or isinstance(raw, bool):
            raise ConfigError(f"Expected a parseable size for {key!r}, got {raw!r}")
        limits[field] = raw
    return limits


def _listen(key: str, value) -> tuple[str | None, int]:
    """A listen setting (nats-server's parseListen): a port, or "host:port"."""
    if isinstance(value, str) and ":" in value:
        host, port = value.rsplit(":", 1)
        return host.strip("[]") or None, _integer(key, port)
    return None, _integer(key, value)


_JETSTREAM_SWITCH = {"enabled": True, "enable": True, "disabled": False, "disable": False}


def _jetstream(value, out: dict) -> None:
    """The jetstream setting (nats-server's parseJetStream): true/false, "enabled" or
    "disabled", or a block (enabled: false in it turns JetStream off)."""
    if isinstance(value, bool):
        on = value
    elif isinstance(value, str):
        on = _JETSTREAM_SWITCH.get(value.lower())
        if on is None:
            raise ConfigError(f"Expected 'enabled' or 'disabled' for string value, "
                              f"got '{value}'")
    elif isinstance(value, dict):
        on = True
        for key in ("enabled", "enable"):
            if key in value:
                if not isinstance(value[key], bool):
                    raise ConfigError(f"jetstream {key}: expected a boolean, "
                                      f"got {value[key]!r}")
                on = value[key]
        for key in ("store", "store_dir", "storedir"):
            if key in value:
                out["store_dir"] = str(value[key])
        for key, name in (("max_memory_store", "max_memory_store"),
                          ("max_mem_store", "max_memory_store"), ("max_mem", "max_memory_store"),
                          ("max_file_store", "max_file_store"), ("max_file", "max_file_store")):
            if key in value:
                out[name] = value[key]
        if value.get("domain"):
            out["domain"] = str(value["domain"])
        for key in ("sync", "sync_interval"):
            if key in value:
                out["sync_interval"] = sync_interval(key, value[key])
    else:
        raise ConfigError(f"Expected map, bool or string to define JetStream, got {value!r}")
    out["jetstream"] = on
    if not on:
        out.pop("store_dir", None)


def _authorization(auth, place: str | None, out: dict, seen: set) -> list[dict]:
    """The authorization block: a token or one user into `out`, and its users."""
    if not isinstance(auth, dict):
        raise ConfigError(f"authorization: expected a map, got {auth!r}")
    if "token" in auth:
        out["token"] = str(auth["token"])
    for key in ("user", "username"):
        if key in auth:
            out["user"] = str(auth[key])
            out["password"] = _password(auth)
    if "token" in auth and "user" in out:
        raise ConfigError(_at(place, "Cannot have a user/pass and token"))
    users = _users(auth.get("users"))
    if users and "user" in out:
        raise ConfigError(_at(place, "Can not have a single user/pass and a users array"))
    if users and "token" in out:
        raise ConfigError(_at(place, "Can not have a token and a users array"))
    _unique_users(users, seen, place)
    with_defaults(users, _default_permissions(
        auth, ("default_permission", "default_permissions", "permissions")))
    if "timeout" in auth:
        out["auth_timeout"] = _auth_timeout(auth["timeout"])
    return users


def server_options(config: dict) -> dict:
    """The serve options a configuration gives (the same names as the command line's);
    ConfigError for a key nats-server does not know or jsstore does not do
    (jsstore.server.configkeys), or a value it cannot take."""
    config = check_keys(config)
    places = getattr(config, "places", {})
    out: dict = {}
    if "port" in config:
        out["port"] = _integer("port", config["port"])
    if "listen" in config:
        host, out["port"] = _listen("listen", config["listen"])
        if host is not None:
            out["host"] = host
    for key in ("host", "net"):
        if key in config:
            out["host"] = str(config[key])
    if "server_name" in config:
        out["server_name"] = str(config["server_name"])
    if "max_payload" in config:
        out["max_payload"] = _integer("max_payload", config["max_payload"])
    for key in ("http", "http_port", "monitor_port"):
        if key in config:
            host, out["http_port"] = _listen(key, config[key])
            if host is not None:
                out["http_host"] = host
    for key in ("store_dir", "storedir"):
        if key in config:
            out["store_dir"] = str(config[key])
    if "jetstream" in config:
        _jetstream(config["jetstream"], out)
    for key in ("logfile", "log_file"):
        if key in config:
            out["log"] = str(config[key])
    for key in ("pidfile", "pid_file"):
        if key in config:
            out["pid"] = str(config[key])
    for key in ("logtime", "logtime_utc"):
        if key in config:
            if not isinstance(config[key], bool):
                raise ConfigError(f"{key}: expected a boolean, got {config[key]!r}")
            out[key] = config[key]
    seen: set = set()      # the user names and nkeys so far
    users = _authorization(config.get("authorization", {}), places.get("authorization"),
                           out, seen)
    accounts, account_limits = {}, {}
    if not isinstance(config.get("accounts") or {}, dict):
        raise ConfigError(f"accounts: expected a map of accounts, got {config['accounts']!r}")
    for name, account in (config.get("accounts") or {}).items():
        if name == "$G":
            raise ConfigError('"$G" is a Reserved Account')
        if not isinstance(account, dict):
            raise ConfigError("Expected map entries for accounts")
        account_users = _users(account.get("users"), str(name))
        users_place = getattr(account, "places", {}).get("users")
        if account_users and "user" in out:
            raise ConfigError(_at(users_place, "Can not have a single user/pass and accounts"))
        if account_users and "token" in out:
            raise ConfigError(_at(users_place, "Can not have a token and accounts"))
        _unique_users(account_users, seen, users_place)
        with_defaults(account_users, _default_permissions(account, ("default_permissions",)))
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
