"""Stream configuration: nats-server's JSON shape, defaults, validation and update rules.

``StreamConfig`` mirrors nats-server's stream configuration JSON field for field and in the
same key order.  Fields nats-server always writes are typed ``X | None`` with ``None``
meaning "not given": such a config encodes without them, as nats-py sends requests, and
``normalize`` fills them with nats-server's defaults so the result encodes exactly as
nats-server answers.  Fields nats-server omits when empty default to that empty value and
are omitted on encoding too (``omit_defaults``).  Durations are nanoseconds.

``validate`` applies nats-server's create checks (``checkStreamCfg`` and the stream create
handler), ``check_update`` its update checks (``configUpdateCheck``); both raise the API
error classes of ``jsstore.wire.apierrors`` with nats-server's codes and texts.
"""

from __future__ import annotations

from typing import Iterable, Literal, NamedTuple

import msgspec

from jsstore._core.subjects import filters_overlap, is_subset_match, is_valid_subject
from jsstore.gocompat.durations import MILLISECOND, SECOND
from jsstore.store import config as store_config
from jsstore.stream import transform as subjtransform
from jsstore.wire import apierrors as api_errors

DEFAULT_DUPLICATE_WINDOW = 120 * SECOND           # StreamDefaultDuplicatesWindow
MIN_WINDOW = 100 * MILLISECOND                    # max_age and duplicate_window floor
MAX_REPLICAS = 5                                   # StreamMaxReplicas
MAX_NAME_LEN = 255                                 # JSMaxNameLen
MAX_DESCRIPTION_LEN = 4 * 1024                     # JSMaxDescriptionLen
MAX_METADATA_LEN = 128 * 1024                      # JSMaxMetadataLen (keys + values)
FULL_WILDCARD = ">"

Retention = Literal["limits", "interest", "workqueue"]
Storage = Literal["file", "memory"]
Discard = Literal["old", "new"]
# "lz4" is a jsstore extension of the storage layer; nats-server knows none and s2.
Compression = Literal["none", "s2", "lz4"]
PersistMode = Literal["default", "async"]


class MaxBytesRule(NamedTuple):
    """What an account requires of a stream's max_bytes (its JetStream limits): set at
    all, and at most the limit for the stream's storage (0: no limit)."""
    required: bool = False
    memory_limit: int = 0
    file_limit: int = 0


NO_MAX_BYTES_RULE = MaxBytesRule()


class SubjectTransform(msgspec.Struct):
    """Subject mapping applied to messages (stream input or a source/mirror); nats-server
    writes both fields, empty or not."""
    src: str = ""
    dest: str = ""


class ExternalStream(msgspec.Struct, omit_defaults=True):
    """A source or mirror in another account or domain, reached through API prefixes."""
    api: str = ""
    deliver: str = ""


class StreamSource(msgspec.Struct, omit_defaults=True):
    """A stream to mirror or to source messages from."""
    name: str = ""
    opt_start_seq: int = 0
    opt_start_time: str = ""   # RFC 3339 text, kept as given
    filter_subject: str = ""
    subject_transforms: list[SubjectTransform] = []
    external: ExternalStream | None = None


class RePublish(msgspec.Struct):
    """Republish stored messages matching src onto dest (a subject transform). nats-server
    writes src and dest always, headers_only only when set (UNSET is false)."""
    src: str = ""
    dest: str = ""
    headers_only: bool | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self):
        if self.headers_only is False:
            self.headers_only = msgspec.UNSET


class Placement(msgspec.Struct, omit_defaults=True):
    """Cluster placement directives (accepted and kept; one server ignores them)."""
    cluster: str = ""
    tags: list[str] = []
    preferred: str = ""


class ConsumerLimits(msgspec.Struct, omit_defaults=True):
    """Defaults and maxima for the stream's consumers."""
    inactive_threshold: int = 0   # ns
    max_ack_pending: int = 0


class StreamConfig(msgspec.Struct, omit_defaults=True):
    """nats-server's stream configuration, keys in nats-server's order."""
    name: str = ""
    description: str = ""
    subjects: list[str] = []
    retention: Retention | None = None
    max_consumers: int | None = None
    max_msgs: int | None = None
    max_bytes: int | None = None
    max_age: int | None = None              # ns, 0 = unlimited
    max_msgs_per_subject: int | None = None
    max_msg_size: int | None = None
    discard: Discard | None = None
    storage: Storage | None = None
    num_replicas: int | None = None
    no_ack: bool = False
    template_owner: str = ""
    duplicate_window: int = 0               # ns
    placement: Placement | None = None
    mirror: StreamSource | None = None
    sources: list[StreamSource] = []
    compression: Compression | None = None
    first_seq: int = 0
    subject_transform: SubjectTransform | None = None
    republish: RePublish | None = None
    allow_direct: bool | None = None
    mirror_direct: bool | None = None
    discard_new_per_subject: bool = False
    sealed: bool | None = None
    deny_delete: bool | None = None
    deny_purge: bool | None = None
    allow_rollup_hdrs: bool | None = None
    consumer_limits: ConsumerLimits | None = None
    allow_msg_ttl: bool | None = None
    subject_delete_marker_ttl: int = 0      # ns
    allow_msg_counter: bool = False
    allow_atomic: bool = False
    allow_msg_schedules: bool = False
    persist_mode: PersistMode | None = None
    metadata: dict[str, str] = {}


_encoder = msgspec.json.Encoder()


def decode(data: bytes | str) -> StreamConfig:
    """A configuration from nats JSON (msgspec.ValidationError on wrong types or values)."""
    return msgspec.json.decode(data, type=StreamConfig)


def encode(cfg: StreamConfig) -> bytes:
    """nats JSON for a configuration (only the keys the config holds)."""
    return _encoder.encode(cfg)


def _positive_or_unlimited(value: int | None) -> int:
    """nats-server stores 0 (unset) and any negative value as -1 (unlimited) for count and
    size limits."""
    return -1 if not value or value < 0 else value


def normalize(cfg: StreamConfig) -> StreamConfig:
    """A copy with nats-server's defaults applied (never raises; see ``validate``)."""
    out = msgspec.structs.replace(cfg)
    if out.retention is None:
        out.retention = "limits"
    if out.storage is None:
        out.storage = "file"
    if out.discard is None:
        out.discard = "old"
    if out.compression is None:
        out.compression = "none"
    if not out.num_replicas:
        out.num_replicas = 1
    out.max_msgs = _positive_or_unlimited(out.max_msgs)
    out.max_bytes = _positive_or_unlimited(out.max_bytes)
    out.max_msgs_per_subject = _positive_or_unlimited(out.max_msgs_per_subject)
    out.max_msg_size = _positive_or_unlimited(out.max_msg_size)
    out.max_consumers = _positive_or_unlimited(out.max_consumers)
    if out.max_age is None:
        out.max_age = 0
    if out.duplicate_window == 0 and out.mirror is None:
        window = DEFAULT_DUPLICATE_WINDOW
        out.duplicate_window = out.max_age if 0 < out.max_age < window else window
    if out.persist_mode == "default":
        out.persist_mode = None   # nats-server omits the default mode
    for name in ("allow_direct", "mirror_direct", "sealed", "deny_delete", "deny_purge",
                 "allow_rollup_hdrs", "allow_msg_ttl"):
        if getattr(out, name) is None:
            setattr(out, name, False)
    if out.consumer_limits is None:
        out.consumer_limits = ConsumerLimits()
    # Subject delete markers need per-message TTLs and roll-ups; schedules need roll-ups.
    if out.subject_delete_marker_ttl > 0:
        out.allow_msg_ttl = True
        out.allow_rollup_hdrs = True
    if out.allow_msg_schedules:
        out.allow_rollup_hdrs = True
    if not out.subjects and out.mirror is None and not out.sources:
        out.subjects = [out.name]
    if out.placement is not None and out.placement == Placement():
        out.placement = None      # nats-server keeps no empty placement
    if out.republish is not None and out.republish.src == "":
        out.republish = msgspec.structs.replace(out.republish, src=FULL_WILDCARD)
    out.subjects = list(out.subjects)
    return out


def _invalid(text: str) -> Exception:
    return api_errors.JSStreamInvalidConfigF(err=text)


def is_valid_name(name: str) -> bool:
    """nats-server's isValidName: non-empty, no whitespace, '.', '*' or '>'."""
    return bool(name) and not any(ch in name for ch in " \t\r\n\f.*>")


def check_transform(src: str, dest: str) -> str | None:
    """Why src -> dest is not a valid subject mapping, in nats-server's words (None when
    it is): the full transform rules of jsstore.stream.transform."""
    return subjtransform.transform_error(src, dest)


def validate(cfg: StreamConfig, *, existing_streams: Iterable[StreamConfig] = (),
             max_bytes: MaxBytesRule = NO_MAX_BYTES_RULE) -> None:
    """Raise nats-server's API error for the first rule `cfg` breaks on create.

    `existing_streams` are the account's other streams (normalized), for subject overlap,
    mirror/source size checks and cycles; `max_bytes` is what the account requires of
    max_bytes.
    """
    errors = api_errors
    if "/" in cfg.name or "\\" in cfg.name:
        raise errors.JSStreamNameContainsPathSeparatorsErr()
    if not is_valid_name(cfg.name):
        raise _invalid("stream name is required and can not contain '.', '*', '>', '\\', '/'")
    if len(cfg.name) > MAX_NAME_LEN:
        raise _invalid(f"stream name is too long, maximum allowed is {MAX_NAME_LEN}")
    if len(cfg.description) > MAX_DESCRIPTION_LEN:
        raise _invalid(f"stream description is too long, maximum allowed is {MAX_DESCRIPTION_LEN}")
    if sum(len(k) + len(v) for k, v in cfg.metadata.items()) > MAX_METADATA_LEN:
        raise _invalid(f"stream metadata exceeds maximum size of {MAX_METADATA_LEN} bytes")
    if cfg.sealed:
        raise _invalid("stream configuration for create can not be sealed")
    others = {other.name: other for other in existing_streams if other.name != cfg.name}
    normalized = normalize(cfg)
    _check_rules(normalized, cfg, others, max_bytes)
    if normalized.num_replicas > 1:
        raise errors.JSStreamReplicasNotSupportedErr()
    for other in others.values():
        if any(filters_overlap(mine, theirs)
               for mine in normalized.subjects for theirs in other.subjects):
            raise errors.JSStreamSubjectOverlapErr()


def _check_rules(cfg: StreamConfig, given: StreamConfig, others: dict,
                 max_bytes: MaxBytesRule) -> None:
    """checkStreamCfg after the name checks, in nats-server's order, on the normalized cfg."""
    errors = api_errors
    if cfg.num_replicas > MAX_REPLICAS:
        raise _invalid(f"maximum replicas is {MAX_REPLICAS}")
    if cfg.num_replicas < 0:
        raise errors.JSReplicasCountCannotBeNegative()
    if cfg.max_age < 0:
        raise _invalid("max age can not be negative")
    if 0 < cfg.max_age < MIN_WINDOW:
        raise _invalid("max age needs to be >= 100ms")
    if cfg.duplicate_window < 0:
        raise _invalid("duplicates window can not be negative")
    if cfg.max_age != 0 and cfg.duplicate_window > cfg.max_age:
        raise _invalid("duplicates window can not be larger then max age")
    if 0 < cfg.duplicate_window < MIN_WINDOW:
        raise _invalid("duplicates window needs to be >= 100ms")
    if cfg.deny_purge and cfg.allow_rollup_hdrs:
        raise _invalid("roll-ups require the purge permission")
    if cfg.discard_new_per_subject:
        if cfg.discard != "new":
            raise _invalid("discard new per subject requires discard new policy to be set")
        if cfg.max_msgs_per_subject <= 0:
            raise _invalid("discard new per subject requires max msgs per subject > 0")
    if cfg.subject_delete_marker_ttl > 0:
        if cfg.subject_delete_marker_ttl < SECOND:
            raise _invalid("subject delete marker TTL must be at least 1 second")
    elif cfg.subject_delete_marker_ttl < 0:
        raise _invalid("subject delete marker TTL must not be negative")
    _check_features(cfg)
    _check_mirror_and_sources(cfg, given, others)
    _check_subjects(cfg)
    _check_max_bytes(cfg, max_bytes)
    _check_transforms(cfg)


def _check_features(cfg: StreamConfig) -> None:
    """Counters, schedules and atomic batches (2.12) and their incompatibilities."""
    if cfg.allow_msg_counter:
        if cfg.discard == "new":
            raise _invalid("counter stream cannot use discard new")
        if cfg.retention != "limits":
            raise _invalid("counter stream can only use limits retention")
        if cfg.allow_msg_ttl:
            raise _invalid("counter stream cannot use message TTLs")
        if cfg.allow_msg_schedules:
            raise _invalid("counter stream cannot use message schedules")
    if cfg.allow_msg_schedules and cfg.discard == "new":
        raise _invalid("message scheduling cannot use discard new")
    if cfg.allow_atomic and cfg.persist_mode == "async":
        raise _invalid("async persist mode is not supported with atomic batch publish")


def _check_mirror_and_sources(cfg: StreamConfig, given: StreamConfig, others: dict) -> None:
    errors = api_errors
    mirror = cfg.mirror
    if mirror is not None:
        if cfg.first_seq > 0:
            raise errors.JSMirrorWithFirstSeqErr()
        if given.subjects:
            raise errors.JSMirrorWithSubjectsErr()
        if cfg.sources:
            raise errors.JSMirrorWithSourcesErr()
        if cfg.allow_msg_counter:
            raise errors.JSMirrorWithCountersErr()
        if cfg.allow_atomic:
            raise errors.JSMirrorWithAtomicPublishErr()
        if cfg.allow_msg_schedules:
            raise errors.JSMirrorWithMsgSchedulesErr()
        if mirror.filter_subject and mirror.subject_transforms:
            raise errors.JSMirrorMultipleFiltersNotAllowed()
        if cfg.subject_delete_marker_ttl > 0:
            raise _invalid("subject delete markers forbidden on mirrors")
        for i, transform in enumerate(mirror.subject_transforms):
            if transform.src and not is_valid_subject(transform.src, True):
                raise errors.JSMirrorInvalidSubjectFilter(err=f"invalid subject {transform.src}")
            problem = check_transform(transform.src, transform.dest)
            if problem:
                raise errors.JSMirrorInvalidTransformDestination(err=problem)
            for j, other in enumerate(mirror.subject_transforms):
                if i != j and filters_overlap(transform.src or FULL_WILDCARD, other.src or FULL_WILDCARD):
                    raise errors.JSMirrorOverlappingSubjectFilters()
        if mirror.external is None:
            if not is_valid_name(mirror.name):
                raise errors.JSMirrorInvalidStreamName()
            origin = others.get(mirror.name)
            if origin is not None and 0 < cfg.max_msg_size < (origin.max_msg_size or -1):
                raise errors.JSMirrorMaxMessageSizeTooBigErr()
    if cfg.sources and cfg.allow_msg_schedules:
        raise errors.JSSourceWithMsgSchedulesErr()
    seen = set()
    for source in cfg.sources:
        if not is_valid_name(source.name):
            raise errors.JSSourceInvalidStreamName()
        index_name = source.name + ("" if source.external is None else ":" + source.external.api)
        index_name += " " + source.filter_subject + "".join(
            f" {t.src}>{t.dest}" for t in source.subject_transforms)
        if index_name in seen:
            raise errors.JSSourceDuplicateDetected()
        seen.add(index_name)
        if source.external is not None:
            continue
        origin = others.get(source.name)
        if origin is not None and 0 < cfg.max_msg_size < (origin.max_msg_size or -1):
            raise errors.JSSourceMaxMessageSizeTooBigErr()
        if source.filter_subject and source.subject_transforms:
            raise errors.JSSourceMultipleFiltersNotAllowed()
        for transform in source.subject_transforms:
            if transform.src and not is_valid_subject(transform.src, True):
                raise errors.JSSourceInvalidSubjectFilter(err=f"invalid subject {transform.src}")
            problem = check_transform(transform.src, transform.dest)
            if problem:
                raise errors.JSSourceInvalidTransformDestination(err=problem)
        for i, transform in enumerate(source.subject_transforms):
            for j, other in enumerate(source.subject_transforms):
                if i != j and is_subset_match(transform.src, other.src):
                    raise errors.JSSourceOverlappingSubjectFilters()
    _check_cycles(cfg, others)


def _check_cycles(cfg: StreamConfig, others: dict) -> None:
    """A stream may not (through sources and mirrors) feed on its own subjects."""
    to_visit, visited = [cfg], set()
    while to_visit:
        current = to_visit.pop(0)
        visited.add(current.name)
        for source in current.sources:
            if source.external is not None:
                continue
            if source.name in visited:
                if not source.filter_subject or any(
                        filters_overlap(s, source.filter_subject) for s in current.subjects):
                    raise _invalid("detected cycle")
            elif source.name in others:
                to_visit.append(others[source.name])
        mirror = current.mirror
        if mirror is not None and mirror.external is None:
            if mirror.name in visited:
                raise _invalid("detected cycle")
            if mirror.name in others:
                to_visit.append(others[mirror.name])


def _check_subjects(cfg: StreamConfig) -> None:
    for subject in cfg.subjects:
        if not is_valid_subject(subject, True):
            raise _invalid("invalid subject")
        if subject == FULL_WILDCARD:
            if not cfg.no_ack:
                raise _invalid("capturing all subjects requires no-ack to be true")
            if cfg.num_replicas != 1:
                raise _invalid("capturing all subjects requires replicas of 1")
        if not cfg.no_ack and (is_subset_match(subject, "$JS.>") or is_subset_match(subject, "$JSC.>")):
            if not is_subset_match(subject, "$JS.EVENT.>"):
                raise _invalid("subjects that overlap with jetstream api require no-ack to be true")
        if not cfg.no_ack and is_subset_match(subject, "$SYS.>"):
            if not is_subset_match(subject, "$SYS.ACCOUNT.>"):
                raise _invalid("subjects that overlap with system api require no-ack to be true")
    if not cfg.subjects and not cfg.sources and cfg.mirror is None:
        raise _invalid("stream needs at least one configured subject or be a source/mirror")
    if len(cfg.subjects) > 1:
        for i, subject in enumerate(cfg.subjects):
            for j, other in enumerate(cfg.subjects):
                if i != j and filters_overlap(subject, other):
                    raise _invalid(f'subject "{subject}" overlaps with "{other}"')


def _check_max_bytes(cfg: StreamConfig, rule: MaxBytesRule) -> None:
    """The account's rule on max_bytes: required, and at most the limit for its storage."""
    limit = rule.memory_limit if cfg.storage == "memory" else rule.file_limit
    if rule.required and cfg.max_bytes <= 0:
        raise api_errors.JSStreamMaxBytesRequired()
    if limit > 0 and cfg.max_bytes > limit:
        raise api_errors.JSStreamMaxStreamBytesExceeded()


def _check_transforms(cfg: StreamConfig) -> None:
    errors = api_errors
    republish = cfg.republish
    if republish is not None:
        if any(filters_overlap(republish.dest, s) for s in cfg.subjects if republish.dest):
            raise _invalid("stream configuration for republish destination forms a cycle")
        try:   # nats-server only needs the republish transform to build
            subjtransform.SubjectTransform(republish.src, republish.dest)
        except subjtransform.TransformError:
            raise _invalid("stream configuration for republish with transform from "
                           f"'{republish.src}' to '{republish.dest}' not valid") from None
    transform = cfg.subject_transform
    if transform is not None:
        if transform.src and not is_valid_subject(transform.src, True):
            raise errors.JSStreamTransformInvalidSource(err=f"invalid subject {transform.src}")
        problem = check_transform(transform.src, transform.dest)
        if problem:
            raise errors.JSStreamTransformInvalidDestination(err=problem)
    if cfg.placement is not None and cfg.placement.preferred:
        raise _invalid("preferred server not permitted in placement")


def check_update(old: StreamConfig, new: StreamConfig, *,
                 existing_streams: Iterable[StreamConfig] = (),
                 max_bytes: MaxBytesRule = NO_MAX_BYTES_RULE) -> None:
    """Raise nats-server's error when `new` may not replace `old` (both as requested)."""
    errors = api_errors
    old_cfg = normalize(old)
    others = {other.name: other for other in existing_streams if other.name != new.name}
    if new.name != old_cfg.name:
        raise _invalid("stream configuration name must match original")
    cfg = normalize(new)
    _check_rules(cfg, new, others, max_bytes)
    if cfg.num_replicas > 1:
        raise errors.JSStreamReplicasNotSupportedErr()
    if cfg.storage != old_cfg.storage:
        raise _invalid("stream configuration update can not change storage type")
    if cfg.retention != old_cfg.retention and "workqueue" in (cfg.retention, old_cfg.retention):
        raise _invalid("stream configuration update can not change retention policy to/from workqueue")
    if old_cfg.template_owner:
        raise _invalid("stream configuration update not allowed on template owned stream")
    if cfg.template_owner:
        raise _invalid("stream configuration update can not be owned by a template")
    if old_cfg.sealed and not cfg.sealed:
        raise _invalid("stream configuration update can not unseal a sealed stream")
    if old_cfg.deny_delete and not cfg.deny_delete:
        raise _invalid("stream configuration update can not cancel deny message deletes")
    if old_cfg.deny_purge and not cfg.deny_purge:
        raise _invalid("stream configuration update can not cancel deny purge")
    # Since 2.12 a mirror may be promoted to a normal stream by removing it; any other
    # change of the mirror is refused.
    if cfg.mirror is not None and cfg.mirror != old_cfg.mirror:
        raise errors.JSStreamMirrorNotUpdatableErr()
    if old_cfg.allow_msg_ttl and not cfg.allow_msg_ttl:
        raise _invalid("message TTL status can not be disabled")
    if cfg.allow_msg_counter != old_cfg.allow_msg_counter:
        raise _invalid("stream configuration update can not change message counter setting")
    if old_cfg.allow_msg_schedules and not cfg.allow_msg_schedules:
        raise _invalid("message schedules can not be disabled")
    for other in others.values():
        if any(filters_overlap(mine, theirs) for mine in cfg.subjects for theirs in other.subjects):
            raise errors.JSStreamSubjectOverlapErr()


def apply_update(new: StreamConfig) -> StreamConfig:
    """The configuration nats-server keeps after an accepted update: normalized, and a
    sealed stream gets no max_age, discard new, deny_delete and deny_purge, no roll-ups."""
    cfg = normalize(new)
    if cfg.republish is not None and not cfg.republish.dest:
        cfg.republish = msgspec.structs.replace(cfg.republish, dest=FULL_WILDCARD)
    if cfg.sealed:
        cfg.max_age = 0
        cfg.discard = "new"
        cfg.deny_delete = cfg.deny_purge = True
        cfg.allow_rollup_hdrs = False
    return cfg


def from_call(config: StreamConfig | store_config.StoreConfig | None,
              params: dict) -> StreamConfig:
    """The configuration an embedded call gives (``add_stream(config, **params)``): a
    StreamConfig (or a store's StoreConfig) and/or keyword fields; nested fields (republish,
    mirror, sources, ...) may be given as dicts."""
    nested = {key: value for key, value in params.items()
              if isinstance(value, dict) or (isinstance(value, list) and value
                                             and isinstance(value[0], dict))}
    if nested:
        try:
            converted = msgspec.convert(nested, StreamConfig)
        except msgspec.ValidationError as exc:
            raise api_errors.JSInvalidJSONErr(err=exc) from exc
        params = {**params, **{key: getattr(converted, key) for key in nested}}
    if config is None:
        return StreamConfig(**params)
    if isinstance(config, store_config.StoreConfig):    # a store's own configuration
        config = msgspec.convert(store_config.stream_config_json(config), StreamConfig)
    return msgspec.structs.replace(config, **params) if params else config


def to_store_config(cfg: StreamConfig) -> store_config.StoreConfig:
    """The storage layer's view of a (normalized) stream configuration."""
    cfg = normalize(cfg)
    return store_config.StoreConfig(
        name=cfg.name, subjects=list(cfg.subjects), retention=cfg.retention,
        max_consumers=cfg.max_consumers, max_msgs=cfg.max_msgs, max_bytes=cfg.max_bytes,
        max_age=cfg.max_age, max_msgs_per_subject=cfg.max_msgs_per_subject,
        max_msg_size=cfg.max_msg_size, discard=cfg.discard,
        discard_new_per_subject=cfg.discard_new_per_subject, storage=cfg.storage,
        num_replicas=cfg.num_replicas, duplicate_window=cfg.duplicate_window,
        compression=cfg.compression, first_seq=cfg.first_seq, allow_msg_ttl=cfg.allow_msg_ttl)
