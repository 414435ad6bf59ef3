"""Configuration the stores need.

``StoreConfig`` holds the fields of a stream's configuration that the storage layer acts
on (limits, discard, compression, first sequence, TTL); the stream layer's
``jsstore.StreamConfig`` (what ``add_stream`` takes) has the rest, and a store accepts it
too (``store_config_of``).  ``StoreOptions`` holds what nats-server keeps in
``FileStoreConfig``: block size, sync policy, cache budget.  Durations are nanoseconds,
as in nats-server's JSON.
"""

from __future__ import annotations

import msgspec

KIB = 1024
MIB = 1024 * KIB

# nats-server's block sizes (filestore.go)
DEFAULT_LARGE_BLOCK_SIZE = 8 * MIB   # limits retention, and the maximum
DEFAULT_MEDIUM_BLOCK_SIZE = 4 * MIB  # interest / workqueue retention, KV buckets
DEFAULT_SMALL_BLOCK_SIZE = 1 * MIB
MAX_BLOCK_SIZE = DEFAULT_LARGE_BLOCK_SIZE
MIN_BLOCK_SIZE = 32_000

DEFAULT_SYNC_INTERVAL = 120.0  # seconds between background fsyncs


class StoreConfig(msgspec.Struct):
    """The storage layer's view of a stream's configuration."""
    name: str
    subjects: list[str] = msgspec.field(default_factory=list)
    retention: str = "limits"          # limits | interest | workqueue
    max_consumers: int = -1
    max_msgs: int = -1
    max_bytes: int = -1
    max_age: int = 0                   # ns, 0 = unlimited
    max_msgs_per_subject: int = -1
    max_msg_size: int = -1
    discard: str = "old"               # old | new
    discard_new_per_subject: bool = False
    storage: str = "file"              # file | memory
    num_replicas: int = 1
    duplicate_window: int = 0          # ns
    compression: str = "none"          # none | s2 | lz4 (lz4 is a jsstore extension)
    first_seq: int = 0
    allow_msg_ttl: bool = False


class StoreOptions(msgspec.Struct):
    block_size: int = 0                # 0 = choose like nats-server (dyn_block_size)
    sync: str = "interval"             # interval | always (group commit)
    sync_interval: float = DEFAULT_SYNC_INTERVAL
    cache_budget: int = 256 * MIB      # bytes of sealed-block cache kept resident
    mmap: bool = True                  # write the current block through a shared file mapping
    # with sync="always": None = each store fsyncs before returning (group commit among the
    # threads that store); a jsstore.store.syncgroup.SyncGroup = stores return at once and
    # the group's owner fsyncs what was written (the server, off its event loop)
    group: object = None


def dyn_block_size(config: StoreConfig) -> int:
    """nats-server's default block size for a stream (``dynBlkSize``)."""
    if config.max_bytes > 0:
        size = config.max_bytes // 4 + 1
        if size % 100:
            size += 100 - size % 100
        if size <= MIN_BLOCK_SIZE:
            return MIN_BLOCK_SIZE
        if size >= DEFAULT_LARGE_BLOCK_SIZE:
            return DEFAULT_LARGE_BLOCK_SIZE
        return DEFAULT_MEDIUM_BLOCK_SIZE
    if config.retention == "limits":
        return DEFAULT_LARGE_BLOCK_SIZE
    return DEFAULT_MEDIUM_BLOCK_SIZE


def stream_config_json(config: StoreConfig) -> dict:
    """The stream configuration as nats-server writes it in meta.inf (JSON names and units)."""
    config = store_config_of(config)
    out = {
        "name": config.name,
        "subjects": list(config.subjects) or [config.name],
        "retention": config.retention,
        "max_consumers": config.max_consumers,
        "max_msgs": config.max_msgs,
        "max_bytes": config.max_bytes,
        "max_age": config.max_age,
        "max_msgs_per_subject": config.max_msgs_per_subject,
        "max_msg_size": config.max_msg_size,
        "discard": config.discard,
        "storage": config.storage,
        "num_replicas": config.num_replicas,
        "duplicate_window": config.duplicate_window,
        "compression": config.compression if config.compression in ("none", "s2") else "none",
        "sealed": False,
        "deny_delete": False,
        "deny_purge": False,
        "allow_rollup_hdrs": False,
        "allow_direct": False,
        "mirror_direct": False,
        "consumer_limits": {},
    }
    if config.discard_new_per_subject:
        out["discard_new_per_subject"] = True
    if config.first_seq:
        out["first_seq"] = config.first_seq
    if config.allow_msg_ttl:
        out["allow_msg_ttl"] = True
    return out


# the fields a store takes from a stream configuration, by nats-server's JSON names
STORE_FIELDS = ("subjects", "retention", "max_consumers", "max_msgs", "max_bytes", "max_age",
                "max_msgs_per_subject", "max_msg_size", "discard", "discard_new_per_subject",
                "storage", "num_replicas", "duplicate_window", "compression", "first_seq",
                "allow_msg_ttl")


def stream_config_from_json(data: dict) -> StoreConfig:
    """The storage-relevant fields of a nats-server stream configuration (meta.inf)."""
    cfg = StoreConfig(name=data["name"])
    for key in STORE_FIELDS:
        if key in data and data[key] is not None:
            setattr(cfg, key, data[key])
    return cfg


def store_config_of(config) -> StoreConfig:
    """A store's configuration from a StoreConfig, or from any stream configuration with
    nats-server's field names (``jsstore.StreamConfig``, what ``add_stream`` takes): the
    fields it leaves unset (None) keep the store's defaults."""
    if isinstance(config, StoreConfig):
        return config
    out = StoreConfig(name=config.name)
    for key in STORE_FIELDS:
        value = getattr(config, key, None)
        if value is not None:
            setattr(out, key, list(value) if key == "subjects" else value)
    return out
