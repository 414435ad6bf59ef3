"""An account's JetStream limits, enforced as nats-server enforces them on one server.

The limits come from the server's configuration (``accounts { A { jetstream { ... } } }``);
-1 (or 0 for the booleans) is unlimited.  What each one bears on:

- ``max_bytes_required``, ``memory_max_stream_bytes``, ``storage_max_stream_bytes``: a
  stream's configuration, checked with the rest of it (``MaxBytesRule``).
- ``max_streams``: creating a stream; ``max_consumers``: a stream's configured
  max_consumers may not exceed it, and it caps the consumers of each stream.
- ``max_memory``, ``max_storage``: the streams' max_bytes are *reserved* against them when
  a stream is created or grows its max_bytes (a stream without max_bytes reserves one
  byte in the check and nothing after); and a publish is refused when the account would
  hold more than that in the storage with it.
- ``max_ack_pending``: a consumer's max_ack_pending default and ceiling.

The server's own limits (``jetstream { max_mem, max_file }``) bear on every account
together (``ServerResources``): the reservations of all of them, and a publish is refused
with "insufficient resources" once all of them hold more than that in its storage.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable

from jsstore.deferred import deferred
from jsstore.jetstream.info import AccountLimits

if TYPE_CHECKING:
    from jsstore.consumer.config import ServerLimits
    from jsstore.stream.config import StreamConfig
    from jsstore.stream.configchecks import MaxBytesRule

# loaded with the first stream's checks
configchecks = deferred("jsstore.stream.configchecks")
consumerconfig = deferred("jsstore.consumer.config")
api_errors = deferred("jsstore.wire.apierrors")

UNLIMITED = AccountLimits()
DEFAULT_MAX_MEMORY = 256 << 20      # nats-server's when the memory can not be found out
DEFAULT_MAX_STORAGE = 1 << 40       # ... and its default disk limit


class ServerResources:
    """The server's JetStream limits, shared by the JetStreams of every account (-1:
    none); each JetStream joins when it opens.  Limits the configuration sets bear on
    reservations and publishes; the ones a server works out for itself when none are
    set (``dynamic``: nats-server's 75% of the memory and the store's free disk) only on
    reservations (a full disk is the store's own error)."""

    def __init__(self, max_memory: int = -1, max_storage: int = -1, *,
                 dynamic: tuple[bool, bool] = (False, False)):
        self.max_memory = max_memory
        self.max_storage = max_storage
        self.dynamic = dynamic          # (memory, storage): worked out, not configured
        self.members: list = []         # the accounts' JetStreams

    @classmethod
    def of_machine(cls, store_dir: str, max_memory: int = -1,
                   max_storage: int = -1) -> ServerResources:
        """The limits given, and where one is not (-1), nats-server's default for it:
        three quarters of the physical memory, the free space of the store's disk."""
        dynamic = (max_memory < 0, max_storage < 0)
        if max_memory < 0:
            try:
                max_memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4 * 3
            except (ValueError, OSError):
                max_memory = DEFAULT_MAX_MEMORY
        if max_storage < 0:
            probe = store_dir
            while probe and not os.path.isdir(probe):
                probe = os.path.dirname(probe)
            try:
                stat = os.statvfs(probe or ".")
                max_storage = stat.f_bavail * stat.f_frsize
            except OSError:
                max_storage = DEFAULT_MAX_STORAGE
        return cls(max_memory, max_storage, dynamic=dynamic)

    def usage_limit(self, storage: str) -> int:
        """What the server may hold in `storage` before publishes are refused (-1: no
        limit)."""
        if storage == "memory":
            return -1 if self.dynamic[0] else self.max_memory
        return -1 if self.dynamic[1] else self.max_storage

    @property
    def limited(self) -> bool:
        """Whether publishes have to look at what the server holds."""
        return self.usage_limit("memory") >= 0 or self.usage_limit("file") >= 0

    def configs(self) -> list[StreamConfig]:
        return [config for js in self.members for config in js.stream_configs()]

    def used(self, storage: str) -> int:
        return sum(js.bytes_used(storage) for js in self.members)


NO_SERVER_LIMITS = ServerResources()


def max_bytes_rule(limits: AccountLimits) -> MaxBytesRule:
    return configchecks.MaxBytesRule(limits.max_bytes_required,
                                     max(limits.memory_max_stream_bytes, 0),
                                     max(limits.storage_max_stream_bytes, 0))


def consumer_limits(limits: AccountLimits) -> ServerLimits:
    return consumerconfig.ServerLimits(account_max_ack_pending=max(limits.max_ack_pending, 0),
                        account_max_consumers=max(limits.max_consumers, 0))


def reserved(configs: Iterable[StreamConfig]) -> tuple[int, int]:
    """(memory, storage) the streams reserve: the sum of their max_bytes, by storage."""
    memory = storage = 0
    for cfg in configs:
        if cfg.max_bytes > 0:
            if cfg.storage == "memory":
                memory += cfg.max_bytes
            else:
                storage += cfg.max_bytes
    return memory, storage


def check_new_stream(limits: AccountLimits, existing: list[StreamConfig],
                     cfg: StreamConfig, server: ServerResources = NO_SERVER_LIMITS) -> None:
    """A stream may be added next to `existing`: the stream count, its max_consumers
    against the account's, and the bytes it reserves."""
    if limits.max_streams > 0 and len(existing) >= limits.max_streams:
        raise api_errors.JSMaximumStreamsLimitErr()
    if 0 < limits.max_consumers < cfg.max_consumers:
        raise api_errors.JSMaximumConsumersLimitErr()
    check_reservation(limits, existing, cfg.max_bytes, cfg.storage, server)


def check_update(limits: AccountLimits, others: list[StreamConfig], old: StreamConfig,
                 new: StreamConfig, server: ServerResources = NO_SERVER_LIMITS) -> None:
    """A stream's configuration may change from `old` to `new`: only what its max_bytes
    grows by is reserved anew (from -1, "unlimited", that is one byte more)."""
    if 0 < limits.max_consumers < new.max_consumers:
        raise api_errors.JSMaximumConsumersLimitErr()
    grows = new.max_bytes - old.max_bytes
    if grows > 0:
        check_reservation(limits, others + [old], grows, new.storage, server)


def check_reservation(limits: AccountLimits, existing: Iterable[StreamConfig], add: int,
                      storage: str, server: ServerResources = NO_SERVER_LIMITS) -> None:
    """`add` more bytes (1 for a stream without max_bytes) fit beside what `existing`
    reserve, and beside what every account reserves on the server."""
    add = max(add, 1)
    memory = storage == "memory"
    error = (api_errors.JSMemoryResourcesExceededErr if memory
             else api_errors.JSStorageResourcesExceededErr)
    index = 0 if memory else 1
    account_limit = limits.max_memory if memory else limits.max_storage
    if account_limit >= 0 and reserved(existing)[index] + add > account_limit:
        raise error()
    server_limit = server.max_memory if memory else server.max_storage
    if server_limit >= 0 and reserved(server.configs())[index] + add > server_limit:
        raise error()


def over_limit(limits: AccountLimits, storage: str, used: int) -> bool:
    """Whether `used` bytes in `storage` are more than the account may hold (a publish
    that would take it there is refused)."""
    limit = limits.max_memory if storage == "memory" else limits.max_storage
    return 0 <= limit < used


def check_usage(limits: AccountLimits, server: ServerResources, storage: str,
                account_used: int, size: int) -> None:
    """A message of `size` bytes into `storage`: refused with "insufficient resources"
    while the server's JetStreams hold more than its limit, and when the account would
    hold more than its own with the message."""
    server_limit = server.usage_limit(storage)
    if server_limit >= 0 and server.used(storage) > server_limit:
        raise api_errors.JSInsufficientResourcesErr()
    if over_limit(limits, storage, account_used + size):
        raise api_errors.JSAccountResourcesExceededErr()


def limits_bytes(limits: AccountLimits, server: ServerResources) -> bool:
    """Whether any publish has to look at what the account or the server holds."""
    return limits.max_memory >= 0 or limits.max_storage >= 0 or server.limited
