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
3. ``validate``              ``checkConsumerCfg``, check by check in nats-server's order;
4. an existing consumer:     ``same_config`` (the ``create`` action), the work-queue
   ``check_workqueue_update``, ``check_update`` (``checkNewConsumerConfig``), and
   ``apply_update`` for what is stored;
   a new consumer:           ``check_new_consumer`` (stream and account maximum, the
   work-queue rules, the durable name length), then ``with_ephemeral_threshold``.

``encode`` writes Go's JSON of a configuration; ``wire_config`` adds the metadata keys
nats-server adds to every answer (``_nats.level``, ``_nats.ver``), sorted as Go writes
a map.  Errors are the generated API errors of ``jsstore.api.errors``.  ``ServerLimits``
carries the server's and the account's JetStream limits that take part.

nats-server 2.15 keeps a one-entry ``filter_subjects`` as it is, keeps ``num_replicas`` as
given (0 included), and accepts filters outside the stream's subjects; so does this
module.  Times are parsed and written as Go's ``time`` package does, durations in errors
as Go prints them (``jsstore.gocompat.times`` and ``durations``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Literal

import msgspec

from jsstore.gocompat import json as gojson
from jsstore.gocompat.quoting import quote, time_quote
from jsstore.stream import config as streamconfig
from jsstore._core.subjects import filters_overlap, is_literal, is_subset_match, is_valid_subject
from jsstore.gocompat.durations import MILLISECOND, SECOND, format_go_duration
from jsstore.gocompat.times import (TimeParseError, format_go_time, is_zero_time,
                                    parse_go_time, parse_time_ns, utc_text)
from jsstore.wire import apierrors as api_errors
from jsstore.wire import api as wire_api

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
def _stream_limits(stream: streamconfig.StreamConfig) -> streamconfig.ConsumerLimits:
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
    stream_limits = _stream_limits(stream)
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


# -- checkConsumerCfg ----------------------------------------------------------------------
def is_valid_asset_name(name: str) -> bool:
    """nats-server's isValidAssetName: no whitespace, '.', '*', '>', '\\' or '/'."""
    return bool(name) and not any(ch in name for ch in " \t\r\n\f.*>\\/")


def _invalid(text: str) -> api_errors.ApiError:
    return api_errors.JSStreamInvalidConfigF(err=text)


def subject_filters(cfg: ConsumerConfig) -> list[str]:
    """gatherSubjectFilters: filter_subjects plus filter_subject when set."""
    return list(cfg.filter_subjects) + ([cfg.filter_subject] if cfg.filter_subject else [])


def validate(cfg: ConsumerConfig, stream: streamconfig.StreamConfig, *,
             limits: ServerLimits = NO_LIMITS, recovering: bool = False) -> None:
    """nats-server's checkConsumerCfg on a normalized configuration: raise the first
    rule's error, in nats-server's order."""
    stream = streamconfig.normalize(stream)
    _check_enum_values(cfg)
    _check_names_and_replicas(cfg, stream, recovering)
    _check_acks(cfg)
    if len(cfg.description) > MAX_DESCRIPTION_LEN:
        raise api_errors.JSConsumerDescriptionTooLongErrF(max=MAX_DESCRIPTION_LEN)
    if cfg.deliver_subject:
        _check_push(cfg, stream)
    else:
        _check_pull(cfg, stream, limits)
    _check_limits(cfg, stream, limits)
    if cfg.direct:
        if not cfg.deliver_subject:
            raise api_errors.JSConsumerDirectRequiresPushErr()
        if is_durable(cfg):
            raise api_errors.JSConsumerDirectRequiresEphemeralErr()
    _check_filters(cfg)
    _check_start(cfg)
    _check_sampling(cfg.sample_freq)
    if cfg.flow_control and cfg.idle_heartbeat == 0:
        raise api_errors.JSConsumerWithFlowControlNeedsHeartbeats()
    if cfg.durable_name and cfg.name and cfg.name != cfg.durable_name:
        raise api_errors.JSConsumerCreateDurableAndNameMismatch()
    if sum(len(k) + len(v) for k, v in cfg.metadata.items()) > MAX_METADATA_LEN:
        raise api_errors.JSConsumerMetadataLengthErrF(limit=f"{MAX_METADATA_LEN // 1024}KB")
    _check_priority(cfg)
    if stream.placement is not None and stream.placement.preferred:
        raise _invalid("preferred server not permitted in placement")


def _check_enum_values(cfg: ConsumerConfig) -> None:
    """Deliver and priority policies a JSON request could not have carried: refused with
    the text nats-server's decoder gives (ack and replay policies have their own errors)."""
    if (cfg.deliver_policy or "all") not in DELIVER_POLICIES:
        raise api_errors.JSInvalidJSONErr(
            err=f"can not unmarshal {quote(gojson.encode(cfg.deliver_policy).decode())}")
    if (cfg.priority_policy or "none") not in PRIORITY_POLICIES:
        raise api_errors.JSInvalidJSONErr(
            err=f"unknown priority policy: {gojson.encode(cfg.priority_policy).decode()}")


def _check_names_and_replicas(cfg: ConsumerConfig, stream, recovering: bool) -> None:
    if cfg.name and not is_valid_asset_name(cfg.name):
        raise _invalid("consumer name can not contain '.', '*', '>', '\\', '/'")
    if cfg.durable_name and not is_valid_asset_name(cfg.durable_name):
        raise _invalid("consumer durable name can not contain '.', '*', '>', '\\', '/'")
    replicas = cfg.num_replicas or 0
    if replicas > 0 and replicas > stream.num_replicas:
        raise api_errors.JSConsumerReplicasExceedsStream()
    if replicas < 0:
        raise api_errors.JSReplicasCountCannotBeNegative()
    if (stream.retention in ("interest", "workqueue") and not recovering
            and replicas != 0 and replicas != stream.num_replicas):
        raise api_errors.JSConsumerReplicasShouldMatchStream()


def _check_acks(cfg: ConsumerConfig) -> None:
    if cfg.ack_policy not in ACK_POLICIES:
        raise api_errors.JSConsumerAckPolicyInvalidErr()
    if cfg.replay_policy not in REPLAY_POLICIES:
        raise api_errors.JSConsumerReplayPolicyInvalidErr()
    if any(value < 0 for value in cfg.backoff):
        raise api_errors.JSConsumerBackOffNegativeErr()
    if cfg.ack_wait < 0:
        raise api_errors.JSConsumerAckWaitNegativeErr()
    if cfg.ack_policy == "flow_control":
        if not cfg.deliver_subject:
            raise api_errors.JSConsumerAckFCRequiresPushErr()
        if not cfg.flow_control:
            raise api_errors.JSConsumerAckFCRequiresFCErr()
        if cfg.idle_heartbeat != FLOW_CONTROL_HEARTBEAT:
            raise _invalid("flow control ack policy heartbeat needs to be 1s")
        if cfg.max_ack_pending <= 0:
            raise api_errors.JSConsumerAckFCRequiresMaxAckPendingErr()
        if cfg.ack_wait != 0 or cfg.backoff:
            raise api_errors.JSConsumerAckFCRequiresNoAckWaitErr()
        if cfg.max_deliver > 0:
            raise api_errors.JSConsumerAckFCRequiresNoMaxDeliverErr()
    if cfg.backoff and cfg.max_deliver != -1 and len(cfg.backoff) > cfg.max_deliver:
        raise api_errors.JSConsumerMaxDeliverBackoffErr()


def delivery_forms_cycle(stream: streamconfig.StreamConfig, deliver_subject: str) -> bool:
    """deliveryFormsCycle: the stream would store what the consumer delivers."""
    return any(is_subset_match(deliver_subject, subject) for subject in stream.subjects)


def _check_push(cfg: ConsumerConfig, stream) -> None:
    if not is_literal(cfg.deliver_subject):
        raise api_errors.JSConsumerDeliverToWildcardsErr()
    if not is_valid_subject(cfg.deliver_subject, True):
        raise api_errors.JSConsumerInvalidDeliverSubject()
    if delivery_forms_cycle(stream, cfg.deliver_subject):
        raise api_errors.JSConsumerDeliverCycleErr()
    if cfg.max_waiting != 0:
        raise api_errors.JSConsumerPushMaxWaitingErr()
    if cfg.max_ack_pending > 0 and cfg.ack_policy == "none":
        raise api_errors.JSConsumerMaxPendingAckPolicyRequiredErr()
    if 0 < cfg.idle_heartbeat < MIN_HEARTBEAT:
        raise api_errors.JSConsumerSmallHeartbeatErr()


def _check_pull(cfg: ConsumerConfig, stream, limits: ServerLimits) -> None:
    if cfg.ack_policy == "none" and stream.retention == "workqueue":
        raise api_errors.JSConsumerPullRequiresAckErr()
    if cfg.rate_limit_bps > 0:
        raise api_errors.JSConsumerPullWithRateLimitErr()
    if cfg.max_waiting < 0:
        raise api_errors.JSConsumerMaxWaitingNegativeErr()
    if cfg.idle_heartbeat > 0:
        raise api_errors.JSConsumerHBRequiresPushErr()
    if cfg.flow_control:
        raise api_errors.JSConsumerFCRequiresPushErr()
    if cfg.max_batch < 0:
        raise api_errors.JSConsumerMaxRequestBatchNegativeErr()
    if cfg.max_expires != 0 and cfg.max_expires < MIN_MAX_EXPIRES:
        raise api_errors.JSConsumerMaxRequestExpiresTooSmall()
    if 0 < limits.max_request_batch < cfg.max_batch:
        raise api_errors.JSConsumerMaxRequestBatchExceededF(limit=limits.max_request_batch)


def _check_limits(cfg: ConsumerConfig, stream, limits: ServerLimits) -> None:
    stream_limits = _stream_limits(stream)
    for limit in (limits.max_ack_pending, limits.account_max_ack_pending,
                  stream_limits.max_ack_pending):
        if 0 < limit < cfg.max_ack_pending:
            raise api_errors.JSConsumerMaxPendingAckExcessErrF(limit=limit)
    if 0 < stream_limits.inactive_threshold < cfg.inactive_threshold:
        raise api_errors.JSConsumerInactiveThresholdExcess(
            limit=format_go_duration(stream_limits.inactive_threshold))


def _check_filters(cfg: ConsumerConfig) -> None:
    if cfg.filter_subject and cfg.filter_subjects:
        raise api_errors.JSConsumerDuplicateFilterSubjects()
    if cfg.filter_subject and not is_valid_subject(cfg.filter_subject, True):
        raise _invalid("invalid subject")
    if any(not subject for subject in cfg.filter_subjects):
        raise api_errors.JSConsumerEmptyFilter()
    filters = subject_filters(cfg)
    for i, subject in enumerate(filters):
        if not is_valid_subject(subject, True):
            raise _invalid("invalid subject")
        if any(i != j and is_subset_match(subject, other) for j, other in enumerate(filters)):
            raise api_errors.JSConsumerOverlappingSubjectFilters()


_POLICY_WORDS = {"all": "all", "last": "last", "last_per_subject": "last per subject",
                 "new": "new", "by_start_sequence": "by start sequence",
                 "by_start_time": "by start time"}


def _check_start(cfg: ConsumerConfig) -> None:
    """The deliver policy against opt_start_seq, opt_start_time and the filters."""
    policy = cfg.deliver_policy
    words = _POLICY_WORDS.get(policy or "all")
    if words is None:
        return
    has_seq, has_time = cfg.opt_start_seq > 0, cfg.opt_start_time is not None

    def bad_start(start: str) -> api_errors.ApiError:
        return api_errors.JSConsumerInvalidPolicyErrF(
            err=f"consumer delivery policy is deliver {words}, but optional start {start} "
                f"is also set")

    def not_set(option: str) -> api_errors.ApiError:
        return api_errors.JSConsumerInvalidPolicyErrF(
            err=f"consumer delivery policy is deliver {words}, but optional {option} is not set")

    if policy in ("all", "last", "last_per_subject", "new"):
        if has_seq:
            raise bad_start("sequence")
        if has_time:
            raise bad_start("time")
        if policy == "last_per_subject" and not subject_filters(cfg):
            raise not_set("filter subject")
    elif policy == "by_start_sequence":
        if cfg.opt_start_seq == 0:
            raise not_set("start sequence")
        if has_time:
            raise bad_start("time")
    elif policy == "by_start_time":
        if not has_time:
            raise not_set("start time")
        if cfg.opt_start_seq != 0:
            raise bad_start("start sequence")


def _check_sampling(sample_freq: str) -> None:
    """sample_freq is "N" or "N%" with N a Go int >= 0 (strconv.Atoi's texts)."""
    if not sample_freq:
        return
    digits = sample_freq.removesuffix("%")
    body = digits[1:] if digits[:1] in ("+", "-") else digits
    if not body or not body.isascii() or not body.isdigit():
        raise api_errors.JSConsumerInvalidSamplingErrF(
            err=f"strconv.Atoi: parsing {quote(digits)}: invalid syntax")
    value = int(digits)
    if not -(1 << 63) <= value < (1 << 63):
        raise api_errors.JSConsumerInvalidSamplingErrF(
            err=f"strconv.Atoi: parsing {quote(digits)}: value out of range")
    if value < 0:
        raise api_errors.JSConsumerInvalidSamplingErrF(err="<nil>")


def _check_priority(cfg: ConsumerConfig) -> None:
    if (cfg.priority_policy or "none") != "none":
        if cfg.deliver_subject:
            raise api_errors.JSConsumerPushWithPriorityGroupErr()
        if not cfg.priority_groups:
            raise api_errors.JSConsumerPriorityPolicyWithoutGroup()
        for group in cfg.priority_groups:
            if not group:
                raise api_errors.JSConsumerEmptyGroupName()
            if not PRIORITY_GROUP_NAME.fullmatch(group):
                raise api_errors.JSConsumerInvalidGroupNameErr()
    else:
        if cfg.priority_groups:
            raise api_errors.JSConsumerPriorityGroupWithPolicyNone()
        if cfg.priority_timeout > 0:
            raise api_errors.JSConsumerPinnedTTLWithoutPriorityPolicyNone()


# -- creating beside other consumers -------------------------------------------------------
def _limitable(others: Iterable[ConsumerConfig]) -> list[ConsumerConfig]:
    """The consumers that count against limits (direct and sourcing ones do not)."""
    return [other for other in others if not other.direct and not other.sourcing]


def partition_unique(filters: list[str], others: Iterable[ConsumerConfig]) -> bool:
    """partitionUnique: no other consumer of a work-queue stream may be unfiltered or have
    a filter that collides with one of `filters`."""
    others = _limitable(others)
    for partition in filters:
        for other in others:
            theirs = subject_filters(other)
            if not theirs or any(filters_overlap(partition, f) for f in theirs):
                return False
    return True


def check_workqueue(cfg: ConsumerConfig, stream: streamconfig.StreamConfig,
                    others: Iterable[ConsumerConfig]) -> None:
    """The work-queue rules for a new consumer (`others` are the stream's consumers)."""
    if (stream.retention or "limits") != "workqueue" or cfg.direct or cfg.sourcing:
        return
    if cfg.ack_policy not in ("explicit", "flow_control"):
        raise api_errors.JSConsumerWQRequiresExplicitAckErr()
    if (cfg.deliver_policy or "all") != "all":
        raise api_errors.JSConsumerWQConsumerNotDeliverAllErr()
    others = _limitable(others)
    if others:
        filters = subject_filters(cfg)
        if not filters:
            raise api_errors.JSConsumerWQMultipleUnfilteredErr()
        if not partition_unique(filters, others):
            raise api_errors.JSConsumerWQConsumerNotUniqueErr()


def check_workqueue_update(cfg: ConsumerConfig, stream: streamconfig.StreamConfig,
                           name: str, others: Iterable[ConsumerConfig]) -> None:
    """An existing work-queue consumer's new filters must stay unique among `others` (the
    other consumers; an update that drops every filter passes, as in nats-server)."""
    del name   # `others` already leaves out the consumer being updated
    if (stream.retention or "limits") == "workqueue":
        if not partition_unique(subject_filters(cfg), others):
            raise api_errors.JSConsumerWQConsumerNotUniqueErr()


def check_new_consumer(cfg: ConsumerConfig, stream: streamconfig.StreamConfig,
                       others: Iterable[ConsumerConfig], *,
                       limits: ServerLimits = NO_LIMITS) -> None:
    """addConsumer's checks for a consumer that does not exist yet, in nats-server's order:
    the stream's (or account's) max_consumers, the work-queue rules, the durable name
    length.  `others` are the stream's consumers."""
    others = list(others)
    maximum = stream.max_consumers or 0
    if maximum <= 0 or 0 < limits.account_max_consumers < maximum:
        maximum = limits.account_max_consumers
    if (not cfg.direct and not cfg.sourcing and maximum > 0
            and len(_limitable(others)) >= maximum):
        raise api_errors.JSMaximumConsumersLimitErr()
    check_workqueue(cfg, stream, others)
    if len(cfg.durable_name) > MAX_NAME_LEN:
        raise api_errors.JSConsumerNameTooLongErrF(max=MAX_NAME_LEN)


# -- updates -------------------------------------------------------------------------------
def _comparable(cfg: ConsumerConfig, required_level: str | None) -> ConsumerConfig:
    metadata = {k: v for k, v in cfg.metadata.items()
                if k not in (SERVER_LEVEL_KEY, SERVER_VERSION_KEY, REQUIRED_LEVEL_KEY)}
    if required_level is not None:
        metadata[REQUIRED_LEVEL_KEY] = required_level
    return msgspec.structs.replace(with_zero_values(cfg), metadata=metadata)


def same_config(new: ConsumerConfig, old: ConsumerConfig) -> bool:
    """Whether a `create` action on an existing consumer finds the same configuration:
    `new` (normalized and checked) against the stored `old`, the stored
    `_nats.req.level` counting for both (copyConsumerMetadata)."""
    level = old.metadata.get(REQUIRED_LEVEL_KEY)
    return _comparable(new, level) == _comparable(old, level)


def _start_times_differ(old: str | None, new: str | None) -> bool:
    if old is None or new is None:
        return (old is None) != (new is None)
    return parse_time_ns(old) != parse_time_ns(new)


def check_update(old: ConsumerConfig, new: ConsumerConfig,
                 stream: streamconfig.StreamConfig | None = None, *,
                 deliver_subject_has_interest: bool = False) -> None:
    """checkNewConsumerConfig: what an update of `old` (stored) to `new` (normalized and
    checked) may not change.  Its plain errors answer as JSConsumerCreateErrF (500, as
    nats-server wraps them).  `deliver_subject_has_interest`: somebody still listens on
    the old deliver subject, which makes a new one a name clash."""
    del stream   # the stream-level rules were applied by validate()
    if same_config(new, old):
        return
    old, new = with_zero_values(old), with_zero_values(new)
    for field, text in (("deliver_policy", "deliver policy can not be updated"),
                        ("mem_storage", "storage type can not be updated"),
                        ("direct", "direct can not be updated"),
                        ("sourcing", "sourcing can not be updated"),
                        ("opt_start_seq", "start sequence can not be updated")):
        if getattr(old, field) != getattr(new, field):
            raise api_errors.JSConsumerCreateErrF(err=text)
    if _start_times_differ(old.opt_start_time, new.opt_start_time):
        raise api_errors.JSConsumerCreateErrF(err="start time can not be updated")
    for field, text in (("ack_policy", "ack policy can not be updated"),
                        ("replay_policy", "replay policy can not be updated"),
                        ("idle_heartbeat", "heart beats can not be updated"),
                        ("flow_control", "flow control can not be updated")):
        if getattr(old, field) != getattr(new, field):
            raise api_errors.JSConsumerCreateErrF(err=text)
    if old.deliver_subject != new.deliver_subject:
        if not old.deliver_subject:
            raise api_errors.JSConsumerCreateErrF(err="can not update pull consumer to push based")
        if not new.deliver_subject:
            raise api_errors.JSConsumerCreateErrF(err="can not update push consumer to pull based")
        if deliver_subject_has_interest:
            raise api_errors.JSConsumerNameExistErr()
    if old.max_waiting != new.max_waiting:
        raise api_errors.JSConsumerCreateErrF(err="max waiting can not be updated")
    if new.backoff and new.max_deliver != -1 and len(new.backoff) > new.max_deliver:
        raise api_errors.JSConsumerMaxDeliverBackoffErr()


def apply_update(old: ConsumerConfig, new: ConsumerConfig) -> ConsumerConfig:
    """The configuration nats-server keeps after an accepted update of `old` to `new`: the
    pause time in UTC, an ephemeral's inactive threshold back to its default when unset."""
    del old
    out = with_ephemeral_threshold(new)
    if out.pause_until is not None:
        out = msgspec.structs.replace(out, pause_until=utc_text(out.pause_until))
    return out
