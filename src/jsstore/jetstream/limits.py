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
"""

from __future__ import annotations

from typing import Iterable

from jsstore.consumer.config import ServerLimits
from jsstore.jetstream.info import AccountLimits
from jsstore.stream.config import MaxBytesRule, StreamConfig
from jsstore.wire import apierrors as api_errors

UNLIMITED = AccountLimits()


def max_bytes_rule(limits: AccountLimits) -> MaxBytesRule:
    return MaxBytesRule(limits.max_bytes_required, max(limits.memory_max_stream_bytes, 0),
                        max(limits.storage_max_stream_bytes, 0))


def consumer_limits(limits: AccountLimits) -> ServerLimits:
    return ServerLimits(account_max_ack_pending=max(limits.max_ack_pending, 0),
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
                     cfg: StreamConfig) -> None:
    """A stream may be added next to `existing`: the stream count, its max_consumers
    against the account's, and the bytes it reserves."""
    if limits.max_streams > 0 and len(existing) >= limits.max_streams:
        raise api_errors.JSMaximumStreamsLimitErr()
    if 0 < limits.max_consumers < cfg.max_consumers:
        raise api_errors.JSMaximumConsumersLimitErr()
    check_reservation(limits, existing, cfg.max_bytes, cfg.storage)


def check_update(limits: AccountLimits, others: list[StreamConfig], old: StreamConfig,
                 new: StreamConfig) -> None:
    """A stream's configuration may change from `old` to `new`: only what its max_bytes
    grows by is reserved anew (from -1, "unlimited", that is one byte more)."""
    if 0 < limits.max_consumers < new.max_consumers:
        raise api_errors.JSMaximumConsumersLimitErr()
    grows = new.max_bytes - old.max_bytes
    if grows > 0:
        check_reservation(limits, others + [old], grows, new.storage)


def check_reservation(limits: AccountLimits, existing: Iterable[StreamConfig], add: int,
                      storage: str) -> None:
    """`add` more bytes (1 for a stream without max_bytes) fit beside what `existing`
    reserve."""
    add = max(add, 1)
    memory, file = reserved(existing)
    if storage == "memory":
        if limits.max_memory >= 0 and memory + add > limits.max_memory:
            raise api_errors.JSMemoryResourcesExceededErr()
    elif limits.max_storage >= 0 and file + add > limits.max_storage:
        raise api_errors.JSStorageResourcesExceededErr()


def over_limit(limits: AccountLimits, storage: str, used: int) -> bool:
    """Whether `used` bytes in `storage` are more than the account may hold (a publish
    that would take it there is refused)."""
    limit = limits.max_memory if storage == "memory" else limits.max_storage
    return 0 <= limit < used


def limits_bytes(limits: AccountLimits) -> bool:
    """Whether any publish has to look at the account's usage."""
    return limits.max_memory >= 0 or limits.max_storage >= 0
