"""What the embedded API answers with: a stream's info, a message read back, the
account's usage, and meta.inf as nats-server writes it."""

from __future__ import annotations

import msgspec

from jsstore.deferred import deferred
from jsstore.gocompat import json as gojson
from jsstore.stream.config import StreamConfig

# the state values (dataclasses) load when a StreamInfo is first decoded or made
_state = deferred("jsstore.state")


class NoStreamResponseError(Exception):
    """No stream captures the subject published to (over NATS: no responders)."""


class StoredMsg(msgspec.Struct):
    """A message read back from a stream."""
    subject: str
    seq: int
    data: bytes
    headers: dict[str, str] | None  # the decoded header block (first value of a repeated key)
    time: int                       # Unix ns when stored
    hdr: bytes | None = None        # the raw NATS header block


class StreamInfo(msgspec.Struct):
    """A stream's normalized configuration, creation time and state."""
    config: StreamConfig
    created: str                    # RFC 3339 UTC with nanoseconds, as nats-server writes it
    state: _state.StreamState
    mirror: dict | None = None      # a mirror's progress (nats-server's StreamSourceInfo)
    sources: list[dict] | None = None  # each source's progress


class AccountLimits(msgspec.Struct):
    """The account's JetStream limits; -1 is unlimited (the only setting embedded)."""
    max_memory: int = -1
    max_storage: int = -1
    max_streams: int = -1
    max_consumers: int = -1
    max_ack_pending: int = -1
    memory_max_stream_bytes: int = -1
    storage_max_stream_bytes: int = -1
    max_bytes_required: bool = False


class AccountInfo(msgspec.Struct):
    """Usage of the account: bytes held in memory and file streams, stream/consumer counts."""
    memory: int
    storage: int
    reserved_memory: int
    reserved_storage: int
    streams: int
    consumers: int
    limits: AccountLimits


def meta_info_json(config: StreamConfig, created: str) -> bytes:
    """meta.inf as nats-server writes it: {"Created": ..., <stream config fields>}."""
    return b'{"Created":' + gojson.encode(created) + b"," + gojson.encode(config)[1:]
