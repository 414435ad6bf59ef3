"""The consumer side of ``jsstore.aio.api``: consumer configuration and info, pause and
reset answers, as nats-py's ``nats.js.api`` has them, field for field (durations in
seconds, times as datetimes)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from enum import Enum
from typing import Any, Dict, List, Optional

from jsstore.aio.base import Base
from jsstore.aio.streamapi import ClusterInfo


class AckPolicy(str, Enum):
    NONE = "none"
    ALL = "all"
    EXPLICIT = "explicit"
    FLOW_CONTROL = "flow_control"


class DeliverPolicy(str, Enum):
    ALL = "all"
    LAST = "last"
    NEW = "new"
    BY_START_SEQUENCE = "by_start_sequence"
    BY_START_TIME = "by_start_time"
    LAST_PER_SUBJECT = "last_per_subject"


class ReplayPolicy(str, Enum):
    INSTANT = "instant"
    ORIGINAL = "original"


@dataclass
class ConsumerConfig(Base):
    """A consumer's configuration (what add_consumer takes)."""
    name: Optional[str] = None
    durable_name: Optional[str] = None
    description: Optional[str] = None
    deliver_policy: Optional[DeliverPolicy] = DeliverPolicy.ALL
    opt_start_seq: Optional[int] = None
    opt_start_time: Optional[datetime.datetime] = None
    ack_policy: Optional[AckPolicy] = AckPolicy.EXPLICIT
    ack_wait: Optional[float] = None                # seconds
    max_deliver: Optional[int] = None
    backoff: Optional[List[float]] = None           # seconds
    filter_subject: Optional[str] = None
    filter_subjects: Optional[List[str]] = None
    replay_policy: Optional[ReplayPolicy] = ReplayPolicy.INSTANT
    rate_limit_bps: Optional[int] = None
    sample_freq: Optional[str] = None
    max_waiting: Optional[int] = None
    max_ack_pending: Optional[int] = None
    flow_control: Optional[bool] = None
    idle_heartbeat: Optional[float] = None          # seconds
    headers_only: Optional[bool] = None
    deliver_subject: Optional[str] = None
    deliver_group: Optional[str] = None
    inactive_threshold: Optional[float] = None      # seconds
    num_replicas: Optional[int] = None
    mem_storage: Optional[bool] = None
    metadata: Optional[Dict[str, str]] = None
    pause_until: Optional[str] = None
    _seconds = ("ack_wait", "idle_heartbeat", "inactive_threshold", "backoff")
    _optional_seconds = ("backoff",)
    _times = ("opt_start_time",)


@dataclass
class SequenceInfo(Base):
    consumer_seq: int
    stream_seq: int
    last_active: Optional[datetime.datetime] = None
    _times = ("last_active",)


@dataclass
class ConsumerInfo(Base):
    """A consumer's configuration and state."""
    name: str
    stream_name: str
    config: ConsumerConfig
    created: datetime.datetime
    delivered: Optional[SequenceInfo] = None
    ack_floor: Optional[SequenceInfo] = None
    num_ack_pending: Optional[int] = None
    num_redelivered: Optional[int] = None
    num_waiting: Optional[int] = None
    num_pending: Optional[int] = None
    cluster: Optional[ClusterInfo] = None
    push_bound: Optional[bool] = None
    paused: Optional[bool] = None
    pause_remaining: Optional[str] = None
    _nested = {"config": ConsumerConfig, "delivered": SequenceInfo,
               "ack_floor": SequenceInfo, "cluster": ClusterInfo}
    _times = ("created",)


@dataclass
class ConsumerPause(Base):
    """A consumer's pause state after pause_consumer or resume_consumer."""
    paused: bool
    pause_until: Optional[str] = None
    pause_remaining: Optional[str] = None


@dataclass
class ConsumerReset(Base):
    """What reset_consumer answers: the consumer's info and the stream sequence it
    delivers from again."""
    info: ConsumerInfo
    reset_seq: int

    @classmethod
    def from_response(cls, resp: Dict[str, Any]) -> ConsumerReset:
        resp = dict(resp)
        reset_seq = resp.pop("reset_seq")
        return cls(info=ConsumerInfo.from_response(resp), reset_seq=reset_seq)
