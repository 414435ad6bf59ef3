"""Every key of nats-server's configuration file, and what jsstore does with each.

The keys are those nats-server 2.15's option parser knows (processConfigFileLine and the
parsers of the blocks it calls, every alias included). Each is either read by jsstore
(jsstore.server.options and the readers it hands blocks to), accepted because its one
meaning is what jsstore does anyway, or refused at start with the key named and the reason.
A key nats-server does not know is refused with nats-server's own words (``unknown field
"authorisation"``, with the file, line and column), so a misspelt or unsupported block
never starts a server looser than its file asks for.

``check`` walks a parsed file (jsstore.server.config) before its meaning is read, and
writes the keys nats-server matches without regard to case in lower case, so that the
readers see one spelling (a block's names for accounts stay as written).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jsstore.gocompat.quoting import quote
from jsstore.server.config import ConfigError, ConfigMap


@dataclass(frozen=True)
class Read:
    """jsstore reads the key. `block`: the keys of its value when that is a map (`each`:
    "map" for the value itself, "list" for each map in an array, "named" for each value
    of a map of names); None when the reader checks what is inside."""

    block: "Block | None" = None
    each: str = "map"


@dataclass(frozen=True)
class Only:
    """Accepted with `value` only: jsstore behaves as nats-server does with that value, and
    refuses the others (`reason`)."""

    value: object
    reason: str


@dataclass(frozen=True)
class Inert:
    """Accepted whatever it says: it tunes something of nats-server's that jsstore does not
    have, so that no value can make jsstore behave otherwise (`reason`, for the docs)."""

    reason: str


@dataclass(frozen=True)
class Refused:
    """nats-server knows it; jsstore does not do it, and refuses to start (`reason`)."""

    reason: str


@dataclass(frozen=True)
class Block:
    """The keys of one kind of map, and nats-server's words for a key it does not know
    (``{key}`` is the key as Go's %q writes it)."""

    name: str
    keys: dict = field(default_factory=dict)
    unknown: str = "unknown field {key}"

    def with_keys(self, names: str, disposition) -> "Block":
        for name in names.split():
            self.keys[name] = disposition
        return self


READ = Read()

CLUSTERING = "clustering (routes, gateways, leaf nodes) is nats-server's: jsstore runs alone"
JWT = ("operator mode (JWT accounts, resolvers, trusted keys) is not supported: configure "
       "accounts and users in the file")
LOGGING = "jsstore's log has no such setting"
NO_TRACE = "jsstore has no debug or trace log"

# an account's limits {} (parseAccountLimits) -> AccountLimits fields (None: it limits
# leaf nodes, which jsstore does not have: nothing to limit)
ACCOUNT_LIMIT_FIELDS = {
    "max_connections": "max_connections", "max_conn": "max_connections",
    "max_subscriptions": "max_subscriptions", "max_subs": "max_subscriptions",
    "max_payload": "max_payload", "max_pay": "max_payload",
    "max_leafnodes": None, "max_leafs": None}
# an account's jetstream {} (parseJetStreamForAccount) -> AccountLimits fields
ACCOUNT_JETSTREAM_FIELDS = {
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

ACCOUNT_LIMITS = Block("account limits", unknown="Unknown field {key} parsing account limits")
for _key, _field in ACCOUNT_LIMIT_FIELDS.items():
    ACCOUNT_LIMITS.keys[_key] = READ if _field else Inert(
        "jsstore accepts no leaf nodes, so there are none to limit")

ACCOUNT_JETSTREAM = Block("account jetstream")
ACCOUNT_JETSTREAM.with_keys(" ".join(ACCOUNT_JETSTREAM_FIELDS), READ)
ACCOUNT_JETSTREAM.with_keys("cluster_traffic", Refused(CLUSTERING))

TLS = Block("tls", unknown="error parsing tls config, unknown field {key}")
TLS.with_keys("cert_file key_file ca_file verify verify_and_map timeout handshake_first first "
              "immediate", READ)
TLS.with_keys("verify_cert_and_check_known_urls",
              Only(False, "a check of routes' and gateways' URLs, which jsstore does not have"))
TLS.with_keys("cipher_suites curve_preferences allow_insecure_cipher_suites min_version",
              Refused("Python's and OpenSSL's defaults apply (TLS 1.2 at least)"))
TLS.with_keys("insecure pinned_certs cert_store cert_match_by cert_match ca_certs_match "
              "cert_match_skip_invalid ocsp_peer certs certificates connection_rate_limit",
              Refused("not supported (docs/security.md lists what TLS does)"))

USER = Block("user")
USER.with_keys("nkey user username pass password", READ)
USER.with_keys("permission permissions authorization", READ)     # (server.permissions)
USER.with_keys("allowed_connection_types connection_types clients",
               Refused("allowed_connection_types is not supported"))
USER.with_keys("proxy_required", Only(False, "trusted proxies are not supported"))

AUTHORIZATION = Block("authorization")
AUTHORIZATION.with_keys("user username pass password token timeout", READ)
AUTHORIZATION.with_keys("users", Read(USER, "list"))
AUTHORIZATION.with_keys("default_permission default_permissions permissions", READ)
AUTHORIZATION.with_keys("auth_callout auth_hook", Refused("auth callouts are not supported"))
AUTHORIZATION.with_keys("proxy_required", Only(False, "trusted proxies are not supported"))

ACCOUNT = Block("account")
ACCOUNT.with_keys("users", Read(USER, "list"))
ACCOUNT.with_keys("default_permissions", READ)
ACCOUNT.with_keys("jetstream", Read(ACCOUNT_JETSTREAM))
ACCOUNT.with_keys("limits", Read(ACCOUNT_LIMITS))
ACCOUNT.with_keys("imports exports", Refused("account imports and exports are not supported"))
ACCOUNT.with_keys("mappings maps", Refused("subject mappings are not supported"))
ACCOUNT.with_keys("msg_trace trace_dest", Refused("message tracing is not supported"))
ACCOUNT.with_keys("nkey", Refused(JWT))

JETSTREAM_LIMITS = Block("jetstream limits")
JETSTREAM_LIMITS.with_keys("max_ack_pending max_ha_assets max_request_batch duplicate_window "
                           "batch", Refused("server-wide JetStream limits are not supported"))

JETSTREAM = Block("jetstream")
JETSTREAM.with_keys("enabled enable store store_dir storedir sync "
                    "sync_interval max_memory_store max_mem_store max_mem max_file_store "
                    "max_file domain", READ)
JETSTREAM.with_keys("strict", Only(True, "the API is always strict: a request with a field "
                                         "nats-server does not know is refused"))
JETSTREAM.with_keys("key ek encryption_key prev_key prev_ek prev_encryption_key cipher tpm",
                    Refused("encryption at rest is not supported"))
JETSTREAM.with_keys("limits", Read(JETSTREAM_LIMITS))
JETSTREAM.with_keys("unique_tag max_outstanding_catchup max_buffered_size max_buffered_msgs "
                    "meta_compact meta_compact_size meta_compact_sync", Refused(CLUSTERING))
JETSTREAM.with_keys("extension_hint request_queue_limit info_queue_limit max_concurrent_io",
                    Refused("a tuning of nats-server's JetStream that jsstore does not have"))

TOP = Block("configuration")
TOP.with_keys("listen port host net server_name max_payload max_control_line max_pending "
              "max_connections max_conn max_subscriptions max_subs ping_interval ping_max "
              "lame_duck_duration lame_duck_grace_period no_auth_user http http_port "
              "monitor_port store_dir storedir logfile log_file pidfile pid_file logtime "
              "logtime_utc", READ)
TOP.with_keys("tls", Read(TLS))
TOP.with_keys("authorization", Read(AUTHORIZATION))
TOP.with_keys("accounts", Read(ACCOUNT, "named"))
TOP.with_keys("jetstream", Read(JETSTREAM))
TOP.with_keys("debug trace trace_verbose trace_headers", Only(False, NO_TRACE))
TOP.with_keys("max_traced_msg_len", Refused(NO_TRACE))
TOP.with_keys("syslog", Only(False, "logging to syslog is not supported"))
TOP.with_keys("remote_syslog logfile_size_limit log_size_limit logfile_max_num log_max_num",
              Refused(LOGGING))
TOP.with_keys("disable_sublist_cache no_sublist_cache",
              Inert("jsstore's subject table keeps no cache of matches to turn off"))
TOP.with_keys("connect_error_reports reconnect_error_reports",
              Inert("they count the reconnects of routes, gateways and leaf nodes, which "
                    "jsstore does not have"))
TOP.with_keys("no_system_account no_system no_sys_acc",
              Inert("jsstore has no system account, whatever this says"))
TOP.with_keys("no_header_support", Only(False, "headers are always supported"))
TOP.with_keys("cluster gateway leaf leafnodes", Refused(CLUSTERING))
TOP.with_keys("operator operators roots root root_operators root_operator resolver "
              "account_resolver accounts_resolver resolver_tls resolver_preload "
              "resolver_pinned_accounts trusted trusted_keys system_account system "
              "default_sentinel", Refused(JWT))
TOP.with_keys("websocket ws", Refused("WebSocket clients are not supported"))
TOP.with_keys("mqtt", Refused("MQTT clients are not supported"))
TOP.with_keys("mappings maps", Refused("subject mappings are not supported"))
TOP.with_keys("https https_port http_base_path",
              Refused("the monitoring port serves plain HTTP at /"))
TOP.with_keys("client_advertise", Refused(CLUSTERING))
TOP.with_keys("ocsp ocsp_cache", Refused("OCSP stapling is not supported"))
TOP.with_keys("allow_non_tls", Refused("TLS and plain clients on one port is not supported"))
TOP.with_keys("write_deadline write_timeout",
              Refused("a slow consumer is found by max_pending, not by a write deadline"))
TOP.with_keys("max_sub_tokens max_subscription_tokens",
              Refused("a limit on subscription tokens is not supported"))
TOP.with_keys("proxy_protocol proxies", Refused("trusted proxies are not supported"))
TOP.with_keys("prof_port prof_block_rate ports_file_dir",
              Refused("a setting of nats-server's own process that jsstore does not have"))
TOP.with_keys("server_tags server_metadata", Refused(CLUSTERING))
TOP.with_keys("feature_flags", Refused("nats-server's feature flags are not supported"))
TOP.with_keys("default_js_domain", Refused(CLUSTERING))
TOP.with_keys("no_fast_producer_stall",
              Refused("a tuning of nats-server's slow consumer handling"))
TOP.with_keys("max_closed_clients", Refused("/connz keeps no closed connections"))


def check(config: ConfigMap) -> ConfigMap:
    """The configuration with its keys in the spelling the readers use; ConfigError listing
    every key nats-server does not know and every key jsstore refuses, each with its place."""
    errors: list[str] = []
    out = _walk(config, TOP, getattr(config, "used_variables", set()), errors)
    if errors:
        raise ConfigError("\n".join(errors))
    return out


def _walk(config: dict, block: Block, used: set, errors: list) -> ConfigMap:
    out = ConfigMap(used)
    places = getattr(config, "places", {})
    for key, value in config.items():
        place = places.get(key, "")
        where = f"{place}: " if place else ""
        name = key.lower()
        disposition = block.keys.get(name)
        if disposition is None:
            if key not in used:     # (a key that is only a $variable: as nats-server)
                errors.append(where + block.unknown.format(key=quote(key)))
            continue
        if isinstance(disposition, Refused) or (
                isinstance(disposition, Only) and not _same(value, disposition.value)):
            errors.append(f"{where}{quote(key)} is not supported by jsstore: "
                          f"{disposition.reason}")
            continue
        if isinstance(disposition, Read) and disposition.block is not None:
            value = _walk_value(value, disposition, used, errors)
        out[name] = value
        out.places[name] = place
    return out


def _walk_value(value, read: Read, used: set, errors: list):
    if read.each == "map":
        return _walk(value, read.block, used, errors) if isinstance(value, dict) else value
    if read.each == "list":
        return [_walk(item, read.block, used, errors) if isinstance(item, dict) else item
                for item in value] if isinstance(value, list) else value
    if not isinstance(value, dict):        # "named": a map of names to maps
        return value
    named = ConfigMap(used)
    places = getattr(value, "places", {})
    for name, item in value.items():
        named[name] = _walk(item, read.block, used, errors) if isinstance(item, dict) else item
        named.places[name] = places.get(name, "")
    return named


def _same(value, expected) -> bool:
    return type(value) is type(expected) and value == expected


def every_key() -> dict[str, dict]:
    """Every block's keys and their dispositions (for the docs and the tests)."""
    return {block.name: dict(block.keys)
            for block in (TOP, AUTHORIZATION, USER, ACCOUNT, ACCOUNT_LIMITS, ACCOUNT_JETSTREAM,
                          JETSTREAM, JETSTREAM_LIMITS, TLS)}
