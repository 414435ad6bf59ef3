"""What ``jsstore.aio`` takes and answers with: nats-py's ``nats.js.api`` types under the
same names, so code written for nats-py reads them unchanged.

jsstore's own ``StreamInfo``/``ConsumerInfo`` (``jsstore.jetstream``) are nats-server's
JSON shapes: durations in nanoseconds and times as RFC 3339 text, where nats-py has
seconds and datetimes; hence these thin types, read from the same JSON.  Enumerations are
``str`` enums, so a value read back (a plain string, as in nats-py) equals its member.
"""

from jsstore.aio.accountapi import AccountInfo, AccountLimits, APIStats, Tier
from jsstore.aio.base import Base, parse_time
from jsstore.aio.consumerapi import (
    AckPolicy,
    ConsumerConfig,
    ConsumerInfo,
    ConsumerPause,
    ConsumerReset,
    DeliverPolicy,
    ReplayPolicy,
    SequenceInfo,
)
from jsstore.aio.kvapi import KeyValueConfig
from jsstore.aio.objectapi import (
    ObjectInfo,
    ObjectLink,
    ObjectMeta,
    ObjectMetaOptions,
    ObjectStoreConfig,
)
from jsstore.aio.streamapi import (
    ClusterInfo,
    DiscardPolicy,
    ExternalStream,
    LostStreamData,
    PeerInfo,
    Placement,
    PubAck,
    RawStreamMsg,
    RePublish,
    RetentionPolicy,
    StorageType,
    StoreCompression,
    StreamConfig,
    StreamConsumerLimits,
    StreamConsumerSource,
    StreamInfo,
    StreamsListIterator,
    StreamSource,
    StreamSourceInfo,
    StreamState,
    SubjectTransform,
)

__all__ = ["AccountInfo", "AccountLimits", "APIStats", "Tier", "Base", "parse_time",
           "AckPolicy", "ConsumerConfig", "ConsumerInfo", "ConsumerPause", "ConsumerReset",
           "DeliverPolicy", "ReplayPolicy", "SequenceInfo", "ClusterInfo", "DiscardPolicy",
           "ExternalStream", "LostStreamData", "PeerInfo", "Placement", "PubAck",
           "RawStreamMsg", "RePublish", "RetentionPolicy", "StorageType", "StoreCompression",
           "StreamConfig", "StreamConsumerLimits", "StreamConsumerSource", "StreamInfo",
           "StreamSource", "StreamSourceInfo", "StreamState", "StreamsListIterator",
           "SubjectTransform", "KeyValueConfig", "ObjectInfo", "ObjectLink", "ObjectMeta",
           "ObjectMetaOptions", "ObjectStoreConfig"]
