"""The stream side of ``jsstore.aio.api``: stream configuration, info and state, PubAck and
RawStreamMsg, as nats-py's ``nats.js.api`` has them, field for field (names, defaults,
durations in seconds, times as datetimes), so code written for nats-py reads them
unchanged.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from enum import Enum
from typing import Any, Dict, List, Optional

from jsstore.aio.base import Base, parse_time


class RetentionPolicy(str, Enum):
    LIMITS = "limits"
    INTEREST = "interest"
    WORK_QUEUE = "workqueue"


class StorageType(str, Enum):
    FILE = "file"
    MEMORY = "memory"


class DiscardPolicy(str, Enum):
    OLD = "old"
    NEW = "new"


class StoreCompression(str, Enum):
    NONE = "none"
    S2 = "s2"


@dataclass
class PubAck(Base):
    """A publish's acknowledgement: the stream and sequence it was stored at."""
    stream: str
    seq: int
    domain: Optional[str] = None
    duplicate: Optional[bool] = None
    batch_id: Optional[str] = None
    batch_size: Optional[int] = None
    val: Optional[str] = None           # a counter stream's value after the publish

    @classmethod
    def from_response(cls, resp: Dict[str, Any]) -> PubAck:
        resp = dict(resp)
        if "batch" in resp:
            resp.setdefault("batch_id", resp.pop("batch"))
        if "count" in resp:
            resp.setdefault("batch_size", resp.pop("count"))
        return super().from_response(resp)


@dataclass
class Placement(Base):
    cluster: Optional[str] = None
    tags: Optional[List[str]] = None


@dataclass
class ExternalStream(Base):
    api: str
    deliver: Optional[str] = None


@dataclass
class SubjectTransform(Base):
    src: str
    dest: str


@dataclass
class StreamConsumerSource(Base):
    name: str
    deliver_subject: str


@dataclass
class StreamSource(Base):
    """A mirror's or source's origin."""
    name: str
    opt_start_seq: Optional[int] = None
    opt_start_time: Optional[datetime.datetime] = None
    filter_subject: Optional[str] = None
    external: Optional[ExternalStream] = None
    subject_transforms: Optional[List[SubjectTransform]] = None
    consumer: Optional[StreamConsumerSource] = None
    _nested = {"external": ExternalStream, "subject_transforms": SubjectTransform,
               "consumer": StreamConsumerSource}
    _times = ("opt_start_time",)


@dataclass
class StreamSourceInfo(Base):
    name: str
    lag: Optional[int] = None
    active: Optional[int] = None
    error: Optional[Dict[str, Any]] = None


@dataclass
class LostStreamData(Base):
    msgs: Optional[List[int]] = None
    bytes: Optional[int] = None


@dataclass
class StreamState(Base):
    """A stream's message counts and sequences."""
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    consumer_count: int
    deleted: Optional[List[int]] = None
    num_deleted: Optional[int] = None
    lost: Optional[LostStreamData] = None
    subjects: Optional[Dict[str, int]] = None
    _nested = {"lost": LostStreamData}


@dataclass
class RePublish(Base):
    src: Optional[str] = None
    dest: Optional[str] = None
    headers_only: Optional[bool] = None


@dataclass
class StreamConsumerLimits(Base):
    inactive_threshold: Optional[float] = None     # seconds
    max_ack_pending: Optional[int] = None
    _seconds = ("inactive_threshold",)
    _optional_seconds = ("inactive_threshold",)


@dataclass
class StreamConfig(Base):
    """A stream's configuration (what add_stream and update_stream take)."""
    name: Optional[str] = None
    description: Optional[str] = None
    subjects: Optional[List[str]] = None
    retention: Optional[RetentionPolicy] = None
    max_consumers: Optional[int] = None
    max_msgs: Optional[int] = None
    max_bytes: Optional[int] = None
    discard: Optional[DiscardPolicy] = DiscardPolicy.OLD
    discard_new_per_subject: bool = False
    max_age: Optional[float] = None                 # seconds
    max_msgs_per_subject: int = -1
    max_msg_size: Optional[int] = -1
    storage: Optional[StorageType] = None
    num_replicas: Optional[int] = None
    no_ack: bool = False
    template_owner: Optional[str] = None
    duplicate_window: float = 0                     # seconds
    placement: Optional[Placement] = None
    mirror: Optional[StreamSource] = None
    sources: Optional[List[StreamSource]] = None
    sealed: bool = False
    deny_delete: bool = False
    deny_purge: bool = False
    allow_rollup_hdrs: bool = False
    first_seq: Optional[int] = None
    republish: Optional[RePublish] = None
    subject_transform: Optional[SubjectTransform] = None
    allow_direct: Optional[bool] = None
    mirror_direct: Optional[bool] = None
    compression: Optional[StoreCompression] = None
    allow_msg_ttl: Optional[bool] = None
    allow_msg_schedules: Optional[bool] = None
    allow_atomic: Optional[bool] = None
    allow_batched: Optional[bool] = None
    allow_msg_counter: Optional[bool] = None
    persist_mode: Optional[str] = None
    metadata: Optional[Dict[str, str]] = None
    consumer_limits: Optional[StreamConsumerLimits] = None
    subject_delete_marker_ttl: Optional[float] = None   # seconds
    _nested = {"placement": Placement, "mirror": StreamSource, "sources": StreamSource,
               "republish": RePublish, "subject_transform": SubjectTransform,
               "consumer_limits": StreamConsumerLimits}
    _seconds = ("max_age", "duplicate_window", "subject_delete_marker_ttl")
    _optional_seconds = ("subject_delete_marker_ttl",)


@dataclass
class PeerInfo(Base):
    name: Optional[str] = None
    current: Optional[bool] = None
    offline: Optional[bool] = None
    active: Optional[int] = None
    lag: Optional[int] = None


@dataclass
class ClusterInfo(Base):
    leader: Optional[str] = None
    name: Optional[str] = None
    replicas: Optional[List[PeerInfo]] = None
    raft_group: Optional[str] = None
    leader_since: Optional[datetime.datetime] = None
    traffic_acc: Optional[str] = None
    _nested = {"replicas": PeerInfo}
    _times = ("leader_since",)


@dataclass
class StreamInfo(Base):
    """A stream's configuration and state."""
    config: StreamConfig
    state: StreamState
    mirror: Optional[StreamSourceInfo] = None
    sources: Optional[List[StreamSourceInfo]] = None
    cluster: Optional[ClusterInfo] = None
    did_create: Optional[bool] = None
    created: Optional[datetime.datetime] = None
    _nested = {"config": StreamConfig, "state": StreamState, "mirror": StreamSourceInfo,
               "sources": StreamSourceInfo, "cluster": ClusterInfo}
    _times = ("created",)


class StreamsListIterator:
    """One page of STREAM.LIST: its offset, the total, and the streams' infos in turn."""

    def __init__(self, offset: int, total: int, streams: List[Dict[str, Any]]) -> None:
        self.offset = offset
        self.total = total
        self.streams = streams
        self._index = 0

    def __iter__(self) -> StreamsListIterator:
        return self

    def __next__(self) -> StreamInfo:
        if self._index >= len(self.streams):
            raise StopIteration
        self._index += 1
        return StreamInfo.from_response(self.streams[self._index - 1])


@dataclass
class RawStreamMsg(Base):
    """A message read from a stream by get_msg.  ``hdrs`` is the header block as the
    answer carries it (base64 text; None for a direct get), ``headers`` its fields."""
    subject: Optional[str] = None
    seq: Optional[int] = None
    data: Optional[bytes] = None
    hdrs: Optional[bytes] = None
    headers: Optional[Dict] = None
    stream: Optional[str] = None
    time: Optional[datetime.datetime] = None

    @property
    def sequence(self) -> Optional[int]:
        return self.seq

    @property
    def header(self) -> Optional[Dict]:
        return self.headers

    @classmethod
    def from_response(cls, resp: Dict[str, Any]) -> RawStreamMsg:
        resp = dict(resp)
        resp["time"] = parse_time(resp["time"])
        return super().from_response(resp)
