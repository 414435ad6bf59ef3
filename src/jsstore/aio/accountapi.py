"""The account side of ``jsstore.aio.api``: what account_info answers, as nats-py's
``nats.js.api`` has it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

from jsstore.aio.base import Base


@dataclass
class AccountLimits(Base):
    """The account's JetStream limits (-1: unlimited)."""
    max_memory: int
    max_storage: int
    max_streams: int
    max_consumers: int
    max_ack_pending: int
    memory_max_stream_bytes: int
    storage_max_stream_bytes: int
    max_bytes_required: bool


@dataclass
class Tier(Base):
    memory: int
    storage: int
    streams: int
    consumers: int
    limits: AccountLimits
    _nested = {"limits": AccountLimits}


@dataclass
class APIStats(Base):
    """How many API requests the account made, and how many failed."""
    total: int
    errors: int
    level: Optional[int] = None


@dataclass
class AccountInfo(Base):
    """The account's JetStream usage and limits."""
    memory: int
    storage: int
    streams: int
    consumers: int
    limits: AccountLimits
    api: APIStats
    domain: Optional[str] = None
    tiers: Optional[Dict[str, Tier]] = None
    _nested = {"limits": AccountLimits, "api": APIStats}

    @classmethod
    def from_response(cls, resp: Dict[str, Any]) -> AccountInfo:
        info = super().from_response(resp)
        if info.tiers:
            info.tiers = {name: Tier.from_response(tier) for name, tier in info.tiers.items()}
        return info
