"""Consumer configuration: nats-server's JSON shape, defaults, checks and update rules.

``ConsumerConfig`` has nats-server's consumer configuration fields in Go's order.  The
four fields Go always writes (``deliver_policy``, ``ack_policy``, ``replay_policy``,
``num_replicas``) are ``X | None`` with ``None`` meaning "not given"; every other field
defaults to Go's zero value and is omitted when empty, as Go's ``omitempty`` does.
Durations are int nanoseconds, times RFC 3339 text (Go's RFC3339Nano after ``normalize``).
``priority_policy`` ``"none"`` and ``None`` mean the same; Go omits it.

A configuration goes through nats-server's steps in this order (the API layer in
``jsstore.consumer.create`` adds the request checks before them):

1. ``with_static_metadata``  the stored ``_nats.req.level`` metadata, from the request
   as given (before defaults, as nats-server computes it);
2. ``normalize``             ``setConsumerConfigDefaults``; pedantic requests are refused
   (``JSPedanticErrF``) where nats-server would otherwise change a value;
3. ``checks.validate``       ``checkConsumerCfg``, check by check in nats-server's order;
4. an existing consumer:     ``checks.same_config`` (the ``create`` action), the work-queue
   ``checks.check_workqueue_update``, ``checks.check_update`` (``checkNewConsumerConfig``),
   and ``checks.apply_update`` for what is stored;
   a new consumer:           ``checks.check_new_consumer`` (stream and account maximum, the
   work-queue rules, the durable name length), then ``with_ephemeral_threshold``.

``encode`` writes Go's JSON of a configuration; ``wire_config`` adds the metadata keys
nats-server adds to every answer (``_nats.level``, ``_nats.ver``), sorted as Go writes
a map.  Errors are the generated API errors of ``jsstore.wire.apierrors``.  ``ServerLimits``
carries the server's and the account's JetStream limits that take part.

nats-server 2.15 keeps a one-entry ``filter_subjects`` as it is, keeps ``num_replicas`` as
given (0 included), and accepts filters outside the stream's subjects; so does this
module.  Times are parsed and written as Go's ``time`` package does, durations in errors
as Go prints them (``jsstore.gocompat.times`` and ``durations``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import msgspec

from jsstore.deferred import deferred
from jsstore.gocompat import json as gojson
from jsstore.gocompat.durations import MILLISECOND, SECOND
from jsstore.gocompat.times import (
    TimeParseError,
    format_go_time,
    is_zero_time,
    marshal_error,
    parse_go_time,
)
from jsstore.stream import config as streamconfig
from jsstore.wire import api as wire_api

# the API errors (a generated table of some 230 classes) load with the first error
api_errors = deferred("jsstore.wire.apierrors")

DEFAULT_ACK_WAIT = 30 * SECOND                   # JsAckWaitDefault
DEFAULT_INACTIVE_THRESHOLD = 5 * SECOND          # JsDeleteWaitTimeDefault (ephemerals)
DEFAULT_MAX_ACK_PENDING = 1000                   # JsDefaultMaxAckPending
DEFAULT_MAX_WAITING = 512                        # JSWaitQueueDefaultMax
DEFAULT_PINNED_TTL = 120 * SECOND                # JsDefaultPinnedTTL
FLOW_CONTROL_HEARTBEAT = SECOND                  # sourceHealthHB, fixed for ack flow_control
MIN_HEARTBEAT = 100 * MILLISECOND
MIN_MAX_EXPIRES = MILLISECOND
MAX_NAME_LEN = 255                               # JSMaxNameLen
MAX_DESCRIPTION_LEN = 4 * 1024                   # JSMaxDescriptionLen
MAX_METADATA_LEN = 128 * 1024                    # JSMaxMetadataLen (keys + values)
PRIORITY_GROUP_NAME = re.compile(r"[a-zA-Z0-9/_=-]{1,16}")

REQUIRED_LEVEL_KEY = "_nats.req.level"           # stored with the consumer
SERVER_LEVEL_KEY = "_nats.level"                 # added to answers only
SERVER_VERSION_KEY = "_nats.ver"                 # added to answers only

DeliverPolicy = Literal["all", "last", "new", "by_start_sequence", "by_start_time",
                        "last_per_subject"]
AckPolicy = Literal["none", "all", "explicit", "flow_control"]
ReplayPolicy = Literal["instant", "original"]
PriorityPolicy = Literal["none", "overflow", "pinned_client", "prioritized"]

DELIVER_POLICIES = ("all", "last", "new", "by_start_sequence", "by_start_time",
                    "last_per_subject")
ACK_POLICIES = ("none", "all", "explicit", "flow_control")
REPLAY_POLICIES = ("instant", "original")
PRIORITY_POLICIES = ("none", "overflow", "pinned_client", "prioritized")


class ConsumerConfig(msgspec.Struct, omit_defaults=True):
    """nats-server's consumer configuration, keys in nats-server's order."""
    durable_name: str = ""
    name: str = ""
    description: str = ""
    deliver_policy: DeliverPolicy | None = None     # always written; None = not given
    opt_start_seq: int = 0
    opt_start_time: str | None = None
    ack_policy: AckPolicy | None = None             # always written; None = not given
    ack_wait: int = 0                               # ns
    max_deliver: int = 0
    backoff: list[int] = []                         # ns
    filter_subject: str = ""
    filter_subjects: list[str] = []
    replay_policy: ReplayPolicy | None = None       # always written; None = not given
    rate_limit_bps: int = 0
    sample_freq: str = ""
    max_waiting: int = 0
    max_ack_pending: int = 0
    flow_control: bool = False
    headers_only: bool = False
    max_batch: int = 0
    max_expires: int = 0                            # ns
    max_bytes: int = 0
    deliver_subject: str = ""
    deliver_group: str = ""
    idle_heartbeat: int = 0                         # ns
    inactive_threshold: int = 0                     # ns
    num_replicas: int | None = None                 # always written; None = not given
    mem_storage: bool = False
    direct: bool = False
    sourcing: bool = False
    metadata: dict[str, str] = {}
    pause_until: str | None = None
    priority_groups: list[str] = []
    priority_policy: PriorityPolicy | None = None   # "none" is written as nothing
    priority_timeout: int = 0                       # ns


@dataclass(frozen=True)
class ServerLimits:
    """The server's JetStream limits and the account's that bear on consumers (0 = none)."""
    max_ack_pending: int = 0           # server jetstream.limits.max_ack_pending
    max_request_batch: int = 0         # server jetstream.limits.max_request_batch
    account_max_ack_pending: int = 0
    account_max_consumers: int = 0
    # nats-server 2.15: the consumers a stream takes when neither it nor its account sets
    # a limit (a stream's max_consumers of -1 or 0 sets none)
    default_max_consumers: int = 1000


NO_LIMITS = ServerLimits()




# -- JSON ----------------------------------------------------------------------------------
def _time_value(text: str) -> str:
    """A time.Time read from JSON, kept as Go's RFC3339Nano text."""
    return format_go_time(parse_go_time(text))


_TIME = gojson.time_type(_time_value)
_POLICY_ERROR = "can not unmarshal %q"
# nats-server's ConsumerConfig as its JSON decoder reads it
CONSUMER_CONFIG = gojson.struct("server.ConsumerConfig", {
    "durable_name": gojson.STRING_TYPE, "name": gojson.STRING_TYPE,
    "description": gojson.STRING_TYPE,
    "deliver_policy": gojson.enum({p: p for p in DELIVER_POLICIES} | {"undefined": "all"},
                                  _POLICY_ERROR),
    "opt_start_seq": gojson.UINT64, "opt_start_time": _TIME,
    "ack_policy": gojson.enum({p: p for p in ACK_POLICIES}, _POLICY_ERROR),
    "ack_wait": gojson.DURATION, "max_deliver": gojson.INT,
    "backoff": gojson.slice_of(gojson.DURATION), "filter_subject": gojson.STRING_TYPE,
    "filter_subjects": gojson.slice_of(gojson.STRING_TYPE),
    "replay_policy": gojson.enum({p: p for p in REPLAY_POLICIES}, _POLICY_ERROR),
    "rate_limit_bps": gojson.UINT64, "sample_freq": gojson.STRING_TYPE,
    "max_waiting": gojson.INT, "max_ack_pending": gojson.INT, "flow_control": gojson.BOOL,
    "headers_only": gojson.BOOL, "max_batch": gojson.INT, "max_expires": gojson.DURATION,
    "max_bytes": gojson.INT, "deliver_subject": gojson.STRING_TYPE,
    "deliver_group": gojson.STRING_TYPE, "idle_heartbeat": gojson.DURATION,
    "inactive_threshold": gojson.DURATION, "num_replicas": gojson.INT,
    "mem_storage": gojson.BOOL, "direct": gojson.BOOL, "sourcing": gojson.BOOL,
    "metadata": gojson.map_of(gojson.STRING_TYPE), "pause_until": _TIME,
    "priority_groups": gojson.slice_of(gojson.STRING_TYPE),
    "priority_policy": gojson.enum({p: p for p in PRIORITY_POLICIES},
                                   "unknown priority policy: %v"),
    "priority_timeout": gojson.DURATION,
})


def config_from_fields(fields: dict) -> ConsumerConfig:
    """A configuration from the fields Go's decoder set (`CONSUMER_CONFIG`)."""
    values = {name: value for name, value in fields.items() if value is not None
              or name in ("opt_start_time", "pause_until")}
    if values.get("priority_policy") == "none":
        values["priority_policy"] = None
    return ConsumerConfig(**values)


def with_zero_values(cfg: ConsumerConfig) -> ConsumerConfig:
    """A copy with Go's zero values in the always-written fields that were not given."""
    return msgspec.structs.replace(
        cfg, deliver_policy=cfg.deliver_policy or "all", ack_policy=cfg.ack_policy or "none",
        replay_policy=cfg.replay_policy or "instant", num_replicas=cfg.num_replicas or 0,
        priority_policy=None if cfg.priority_policy == "none" else cfg.priority_policy,
        metadata=dict(sorted(cfg.metadata.items())))


def encode(cfg: ConsumerConfig) -> bytes:
    """nats-server's JSON of a configuration (Go's field order, omitempty, escapes and
    sorted metadata keys)."""
    return gojson.encode(with_zero_values(cfg))


def decode(data: bytes | str) -> ConsumerConfig:
    """A configuration from JSON, decoded as nats-server's Go decoder does it: unknown keys
    ignored, keys matched without regard to case, JSInvalidJSONErr with Go's text."""
    try:
        fields = gojson.decode_request(data.encode() if isinstance(data, str) else data,
                                       CONSUMER_CONFIG, strict=False)
    except gojson.GoJSONError as exc:
        raise api_errors.JSInvalidJSONErr(err=exc) from None
    return config_from_fields(fields)


def to_dict(cfg: ConsumerConfig) -> dict:
    """The configuration as the plain JSON object nats-server stores and answers."""
    return msgspec.json.decode(encode(cfg))


def storable_error(cfg: ConsumerConfig) -> str | None:
    """Why the configuration can not be written as JSON (nats-server then fails to make
    the consumer's store), or None: a time whose offset Go parses but will not encode."""
    for name in ("opt_start_time", "pause_until"):
        text = getattr(cfg, name)
        if text is not None:
            try:
                problem = marshal_error(parse_go_time(text))
            except TimeParseError:
                continue
            if problem:
                return problem
    return None


def from_dict(data: dict) -> ConsumerConfig:
    """A configuration from a JSON object (unknown keys, such as meta.inf's, ignored)."""
    fields = set(ConsumerConfig.__struct_fields__)
    return msgspec.convert({k: v for k, v in data.items() if k in fields}, ConsumerConfig)


# -- metadata ------------------------------------------------------------------------------
def required_api_level(cfg: ConsumerConfig) -> int:
    """The JetStream API level a consumer's features need (nats-server's _nats.req.level):
    1 for a pause time or priority groups (2.11), 4 for the flow_control ack policy."""
    if cfg.ack_policy == "flow_control":
        return 4
    if cfg.pause_until is not None and not is_zero_time(cfg.pause_until):
        return 1
    if ((cfg.priority_policy or "none") != "none" or cfg.priority_timeout != 0
            or cfg.priority_groups):
        return 1
    return 0


def with_static_metadata(cfg: ConsumerConfig) -> ConsumerConfig:
    """setStaticConsumerMetadata: the stored metadata, with `_nats.req.level` computed from
    `cfg` as given and the answer-only keys removed.  nats-server does this before its
    defaults, so a negative priority_timeout still counts."""
    metadata = {k: v for k, v in cfg.metadata.items()
                if k not in (SERVER_LEVEL_KEY, SERVER_VERSION_KEY)}
    metadata[REQUIRED_LEVEL_KEY] = str(required_api_level(cfg))
    return msgspec.structs.replace(cfg, metadata=metadata)


def wire_config(cfg: ConsumerConfig, *, dynamic: bool = True) -> ConsumerConfig:
    """The configuration as nats-server answers it: the stored `_nats.req.level` (computed
    when missing) plus, with `dynamic` (every answer but CONSUMER.LIST pages),
    `_nats.level` and `_nats.ver`; keys sorted as Go writes a map."""
    metadata = {k: v for k, v in cfg.metadata.items()
                if k not in (SERVER_LEVEL_KEY, SERVER_VERSION_KEY)}
    metadata.setdefault(REQUIRED_LEVEL_KEY, str(required_api_level(cfg)))
    if dynamic:
        metadata[SERVER_LEVEL_KEY] = str(wire_api.API_LEVEL)
        metadata[SERVER_VERSION_KEY] = wire_api.SERVER_VERSION
    return with_zero_values(msgspec.structs.replace(cfg, metadata=metadata))


# -- defaults ------------------------------------------------------------------------------
def consumer_limits_of(stream: streamconfig.StreamConfig) -> streamconfig.ConsumerLimits:
    return stream.consumer_limits or streamconfig.ConsumerLimits()


def _pedantic(pedantic: bool, text: str) -> None:
    if pedantic:
        raise api_errors.JSPedanticErrF(err=text)


def normalize(cfg: ConsumerConfig, stream: streamconfig.StreamConfig, *,
              pedantic: bool = False, limits: ServerLimits = NO_LIMITS) -> ConsumerConfig:
    """nats-server's setConsumerConfigDefaults on a copy of `cfg`.  With `pedantic`, the
    changes nats-server refuses to make silently raise JSPedanticErrF instead."""
    out = _canonical(cfg)
    if out.max_deliver == 0 or out.max_deliver < -1:
        _pedantic(pedantic and out.max_deliver < -1, "max_deliver must be set to -1")
        out.max_deliver = -1
    for name, floor, text in (
            ("max_waiting", 0, "max_waiting must not be negative"),
            ("max_ack_pending", -1, "max_ack_pending must be set to -1"),
            ("max_batch", 0, "max_batch must not be negative"),
            ("max_expires", 0, "max_expires must not be negative"),
            ("max_bytes", 0, "max_bytes must not be negative"),
            ("idle_heartbeat", 0, "idle_heartbeat must not be negative"),
            ("inactive_threshold", 0, "inactive_threshold must not be negative"),
            ("priority_timeout", 0, "priority_timeout must not be negative")):
        if getattr(out, name) < floor:
            _pedantic(pedantic, text)
            setattr(out, name, floor)
    if not out.deliver_subject and out.max_waiting == 0:
        out.max_waiting = DEFAULT_MAX_WAITING
    if out.ack_wait == 0 and out.ack_policy in ("explicit", "all"):
        out.ack_wait = DEFAULT_ACK_WAIT
    if out.backoff:
        _pedantic(pedantic and out.ack_wait != out.backoff[0],
                  "first backoff value has to equal batch AckWait")
        out.ack_wait = out.backoff[0]
    stream_limits = consumer_limits_of(stream)
    if out.max_ack_pending == 0:
        _pedantic(pedantic and stream_limits.max_ack_pending > 0,
                  "max_ack_pending must be set if it's configured in stream limits")
        out.max_ack_pending = stream_limits.max_ack_pending
    if out.inactive_threshold == 0:
        _pedantic(pedantic and stream_limits.inactive_threshold > 0,
                  "inactive_threshold must be set if it's configured in stream limits")
        out.inactive_threshold = stream_limits.inactive_threshold
    if out.max_ack_pending == 0 and out.ack_policy != "none":
        out.max_ack_pending = min([DEFAULT_MAX_ACK_PENDING] + [
            limit for limit in (limits.max_ack_pending, limits.account_max_ack_pending)
            if limit > 0])
    if not out.deliver_subject and out.max_batch == 0 and limits.max_request_batch > 0:
        _pedantic(pedantic, "max_request_batch must be set if it's JetStream limits are set")
        out.max_batch = limits.max_request_batch
    if out.priority_policy == "pinned_client" and out.priority_timeout == 0:
        out.priority_timeout = DEFAULT_PINNED_TTL
    if out.ack_policy == "flow_control" and not pedantic:
        out.flow_control = True
        out.idle_heartbeat = FLOW_CONTROL_HEARTBEAT
    return out


def _canonical(cfg: ConsumerConfig) -> ConsumerConfig:
    """A copy with Go's zero values filled in and the times in Go's RFC3339Nano text (a
    time Go could not have decoded raises JSInvalidJSONErr with Go's text)."""
    out = with_zero_values(cfg)
    out.metadata = dict(cfg.metadata)
    out.backoff, out.filter_subjects = list(cfg.backoff), list(cfg.filter_subjects)
    out.priority_groups = list(cfg.priority_groups)
    for name in ("opt_start_time", "pause_until"):
        text = getattr(out, name)
        if text is not None:
            try:
                setattr(out, name, format_go_time(parse_go_time(text)))
            except TimeParseError as exc:
                raise api_errors.JSInvalidJSONErr(err=exc) from None
    return out


def is_durable(cfg: ConsumerConfig) -> bool:
    return bool(cfg.durable_name)


def with_ephemeral_threshold(cfg: ConsumerConfig) -> ConsumerConfig:
    """What nats-server stores for a new or updated consumer: ephemerals without an
    inactive threshold get the 5 s default (updateInactiveThreshold)."""
    if is_durable(cfg) or cfg.inactive_threshold > 0:
        return cfg
    return msgspec.structs.replace(cfg, inactive_threshold=DEFAULT_INACTIVE_THRESHOLD)
