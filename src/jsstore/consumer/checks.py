"""Consumer configuration checks: nats-server's ``checkConsumerCfg`` (``validate``), the
rules for a consumer beside the stream's others (work queues, maxima), and the rules for
updating one (``same_config``, ``check_update``, ``apply_update``). The configuration
itself, its JSON and its defaults are ``jsstore.consumer.config``; the errors are the
generated API errors.
"""

from __future__ import annotations

from typing import Iterable

import msgspec

from jsstore._core.storage.subjects import (filters_overlap, is_literal, is_subset_match,
                                           is_valid_subject)
from jsstore.consumer.config import (
    ACK_POLICIES,
    DEFAULT_INACTIVE_THRESHOLD,
    DELIVER_POLICIES,
    FLOW_CONTROL_HEARTBEAT,
    MAX_DESCRIPTION_LEN,
    MAX_METADATA_LEN,
    MAX_NAME_LEN,
    MIN_HEARTBEAT,
    MIN_MAX_EXPIRES,
    NO_LIMITS,
    PRIORITY_GROUP_NAME,
    PRIORITY_POLICIES,
    REPLAY_POLICIES,
    REQUIRED_LEVEL_KEY,
    SERVER_LEVEL_KEY,
    SERVER_VERSION_KEY,
    ConsumerConfig,
    ServerLimits,
    consumer_limits_of,
    is_durable,
    with_zero_values,
)
from jsstore.gocompat import json as gojson
from jsstore.gocompat.durations import format_go_duration
from jsstore.gocompat.quoting import byte_len, quote
from jsstore.gocompat.times import parse_time_ns, utc_text
from jsstore.stream import config as streamconfig
from jsstore.wire import apierrors as api_errors
from jsstore.wire.subjecttree import SubjectTree


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
    if byte_len(cfg.description) > MAX_DESCRIPTION_LEN:
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
    if sum(byte_len(k) + byte_len(v) for k, v in cfg.metadata.items()) > MAX_METADATA_LEN:
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
    stream_limits = consumer_limits_of(stream)
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
    # the valid filters in a tree (a pair at a time took seconds for 10,000 of them), the
    # invalid ones compared directly (the first one ends the checks)
    tree, invalid = SubjectTree(), []
    for index, subject in enumerate(filters):
        if is_valid_subject(subject, True):
            tree.insert(subject, index)
        else:
            invalid.append(index)
    for i, subject in enumerate(filters):
        if not is_valid_subject(subject, True):
            raise _invalid("invalid subject")
        if any(j != i for j in tree.supersets(subject)) or any(
                is_subset_match(subject, filters[j]) for j in invalid):
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
    the stream's (or account's, or else the server's default) max_consumers, the
    work-queue rules, the durable name length.  `others` are the stream's consumers
    (iterated only when a check needs them)."""
    maximum = stream.max_consumers or 0
    if maximum <= 0 or 0 < limits.account_max_consumers < maximum:
        maximum = limits.account_max_consumers
    if maximum <= 0:
        maximum = limits.default_max_consumers
    if (not cfg.direct and not cfg.sourcing and maximum > 0
            and len(_limitable(others)) >= maximum):
        raise api_errors.JSMaximumConsumersLimitErr()
    check_workqueue(cfg, stream, others)
    if byte_len(cfg.durable_name) > MAX_NAME_LEN:
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
    pause time in UTC, and the 5 s default inactive threshold when none is given and the
    consumer is an ephemeral one -- as it was before the update (updateInactiveThreshold
    asks the consumer, whose configuration is still `old`): an ephemeral made durable by
    DURABLE.CREATE keeps a threshold."""
    out = new
    if not is_durable(old) and new.inactive_threshold <= 0:
        out = msgspec.structs.replace(new, inactive_threshold=DEFAULT_INACTIVE_THRESHOLD)
    if out.pause_until is not None:
        out = msgspec.structs.replace(out, pause_until=utc_text(out.pause_until))
    return out
