"""What a parsed configuration file (``jsstore.server.config``) means to the server:
the options ``jsstore serve`` takes, under the command line's names.

What is used: port, host/listen, server_name, max_payload, http/http_port/monitor_port,
jetstream {store_dir, max_memory_store, max_file_store, domain, sync_interval (or sync):
``always`` or a duration} (or ``jetstream: enabled``), authorization {token |
user+password | users [{user, password, permissions {publish, subscribe}}]}, accounts
{NAME: {users [...], jetstream: enabled | {limits}}} (each account's users join the user
list, its JetStream limits go to ``accounts``), no_auth_user, lame_duck_duration and
lame_duck_grace_period, tls {cert_file, key_file, ca_file, verify, verify_and_map,
timeout, handshake_first}; users may be nkey users ({nkey: U..., permissions}).
"""

from __future__ import annotations

from jsstore.gocompat.durations import SECOND, parse_go_duration
from jsstore.server import nkey
from jsstore.server.config import ConfigError
from jsstore.server.tlsconfig import settings_from_config


def _permissions(raw) -> dict | None:
    """{publish: {allow, deny}, subscribe: {allow, deny}} from the config's forms: a
    subject, a list, or a map with allow/deny."""
    if not raw:
        return None
    out = {}
    for kind in ("publish", "subscribe"):
        value = raw.get(kind) if isinstance(raw, dict) else None
        if value is None:
            continue
        if isinstance(value, str):
            out[kind] = {"allow": [value], "deny": []}
        elif isinstance(value, list):
            out[kind] = {"allow": [str(v) for v in value], "deny": []}
        elif isinstance(value, dict):
            out[kind] = {"allow": _subjects(f"{kind} allow", value.get("allow")),
                         "deny": _subjects(f"{kind} deny", value.get("deny"))}
    return out


def _subjects(key: str, value) -> list[str]:
    """A permission's subjects: one subject or an array of them."""
    if not value:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value]
    raise ConfigError(f"{key}: expected a subject or an array of subjects, got {value!r}")


def _integer(key: str, value) -> int:
    """A whole-number option: a number, or a string of digits."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{key}: expected an integer, got {value!r}") from None


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
                          "permissions": _permissions(entry.get("permissions")),
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
    return {"nkey": key, "permissions": _permissions(entry.get("permissions")),
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
    else:
        users = []
    accounts = {}
    if not isinstance(config.get("accounts") or {}, dict):
        raise ConfigError(f"accounts: expected a map of accounts, got {config['accounts']!r}")
    for name, account in (config.get("accounts") or {}).items():
        if isinstance(account, dict):
            users += _users(account.get("users"), str(name))
            accounts[str(name)] = account_jetstream(str(name), account.get("jetstream", False))
    if accounts:
        out["accounts"] = accounts
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
