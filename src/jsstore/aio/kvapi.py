"""The key-value side of ``jsstore.aio.api``: a bucket's configuration, as nats-py's
``nats.js.api.KeyValueConfig`` has it (the ttl in seconds)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from jsstore.aio.base import Base
from jsstore.aio.streamapi import Placement, RePublish, StorageType


@dataclass
class KeyValueConfig(Base):
    """What create_key_value takes; it becomes the configuration of the bucket's stream
    ``KV_<bucket>``."""
    bucket: str
    description: Optional[str] = None
    max_value_size: Optional[int] = None
    history: int = 1
    ttl: Optional[float] = None                     # seconds
    max_bytes: Optional[int] = None
    storage: Optional[StorageType] = None
    replicas: int = 1
    placement: Optional[Placement] = None
    republish: Optional[RePublish] = None
    direct: Optional[bool] = None
    limit_marker_ttl: Optional[float] = None        # seconds: the stream's marker TTL
