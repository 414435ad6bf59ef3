"""Stream configuration: nats-server's JSON shape and defaults.

``StreamConfig`` mirrors nats-server's stream configuration JSON field for field and in the
same key order.  Fields nats-server always writes are typed ``X | None`` with ``None``
meaning "not given": such a config encodes without them, as nats-py sends requests, and
``normalize`` fills them with nats-server's defaults so the result encodes exactly as
nats-server answers.  Fields nats-server omits when empty default to that empty value and
are omitted on encoding too (``omit_defaults``).  Durations are nanoseconds.

The checks (nats-server's ``checkStreamCfg``, the create and update handlers' rules and
``configUpdateCheck``) are ``jsstore.stream.configchecks``; the defaults they apply between
their checks are the ``fill_*`` functions here, which ``normalize`` applies all at once.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from jsstore.deferred import deferred
from jsstore.gocompat.durations import MILLISECOND, SECOND
from jsstore.store import config as store_config

# the API errors (a generated table of some 230 classes) load with the first error
api_errors = deferred("jsstore.wire.apierrors")

DEFAULT_DUPLICATE_WINDOW = 120 * SECOND           # StreamDefaultDuplicatesWindow
MIN_WINDOW = 100 * MILLISECOND                    # max_age and duplicate_window floor
MAX_REPLICAS = 5                                   # StreamMaxReplicas
MAX_NAME_LEN = 255                                 # JSMaxNameLen
MAX_DESCRIPTION_LEN = 4 * 1024                     # JSMaxDescriptionLen
MAX_METADATA_LEN = 128 * 1024                      # JSMaxMetadataLen (keys + values)
FULL_WILDCARD = ">"
TRANSFORM_SEPARATOR = "\f"                          # joins several transforms in a source index

Retention = Literal["limits", "interest", "workqueue"]
Storage = Literal["file", "memory"]
Discard = Literal["old", "new"]
# "lz4" is a jsstore extension of the storage layer; nats-server knows none and s2.
Compression = Literal["none", "s2", "lz4"]
PersistMode = Literal["default", "async"]


class SubjectTransform(msgspec.Struct):
    """Subject mapping applied to messages (stream input or a source/mirror); nats-server
    writes both fields, empty or not."""
    src: str = ""
    dest: str = ""


class ExternalStream(msgspec.Struct):
    """A source or mirror in another account or domain, reached through API prefixes
    (nats-server writes both, empty or not)."""
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


def _pedantic(text: str) -> api_errors.ApiError:
    return api_errors.JSPedanticErrF(err=text)


def _invalid(text: str) -> api_errors.ApiError:
    return api_errors.JSStreamInvalidConfigF(err=text)


# -- nats-server's defaults, one rule each -----------------------------------------------------
# checkStreamCfg applies these between its checks (jsstore.stream.configchecks calls them in
# its order, with `pedantic` from the request); ``normalize`` applies them all.  Each works on
# a copy it may change and raises only with `pedantic` set: pedantic mode refuses what would
# otherwise be corrected silently.
LIMIT_FIELDS = ("max_msgs", "max_msgs_per_subject", "max_bytes", "max_msg_size", "max_consumers")


def fill_limits(cfg: StreamConfig, pedantic: bool = False) -> None:
    """0 (unset) and anything below -1 become -1 (unlimited); pedantic mode refuses the
    latter."""
    for name in LIMIT_FIELDS:
        value = getattr(cfg, name)
        if pedantic and value is not None and value < -1:
            raise _pedantic(f"{name} must be set to -1")
        setattr(cfg, name, _positive_or_unlimited(value))


def fill_duplicate_window(cfg: StreamConfig, pedantic: bool = False) -> None:
    """A stream that neither mirrors nor sources gets a 2-minute window, or max_age's
    when that is shorter (pedantic mode refuses the shortening)."""
    if cfg.duplicate_window or cfg.mirror is not None or cfg.sources:
        return
    max_age = cfg.max_age or 0
    if max_age != 0 and max_age < DEFAULT_DUPLICATE_WINDOW:
        if pedantic:
            raise _pedantic("duplicate window cannot be bigger than max age")
        cfg.duplicate_window = max_age
    else:
        cfg.duplicate_window = DEFAULT_DUPLICATE_WINDOW


def _allow_rollups(cfg: StreamConfig, pedantic: bool, feature: str) -> None:
    if not cfg.allow_rollup_hdrs:
        if pedantic:
            raise _invalid(f"{feature} cannot be set if roll-ups are disabled")
        cfg.allow_rollup_hdrs, cfg.deny_purge = True, False


def fill_marker_needs(cfg: StreamConfig, pedantic: bool = False) -> None:
    """Subject delete markers need per-message TTLs and roll-ups (which need the purge
    permission)."""
    if cfg.subject_delete_marker_ttl <= 0:
        return
    if not cfg.allow_msg_ttl:
        if pedantic:
            raise _invalid("subject delete marker cannot be set if message TTLs are disabled")
        cfg.allow_msg_ttl = True
    _allow_rollups(cfg, pedantic, "subject delete marker")


def fill_schedule_needs(cfg: StreamConfig, pedantic: bool = False) -> None:
    """Message schedules need roll-ups."""
    if cfg.allow_msg_schedules:
        _allow_rollups(cfg, pedantic, "message scheduling")


def fill_subjects(cfg: StreamConfig) -> None:
    """A stream that neither mirrors nor sources captures its own name."""
    cfg.subjects = list(cfg.subjects)
    if not cfg.subjects and cfg.mirror is None and not cfg.sources:
        cfg.subjects = [cfg.name]


def fill_republish(cfg: StreamConfig, pedantic: bool = False) -> None:
    """An empty republish source is ``>``; ``>`` to ``>`` on a stream whose one subject is
    its subject transform's source republishes the transformed subjects instead."""
    republish = cfg.republish
    if republish is None:
        return
    if republish.src == "":
        if pedantic:
            raise _pedantic("republish source can not be empty")
        republish = msgspec.structs.replace(republish, src=FULL_WILDCARD)
    transform = cfg.subject_transform
    if (republish.src == FULL_WILDCARD and republish.dest == FULL_WILDCARD
            and transform is not None and len(cfg.subjects) == 1
            and transform.src == cfg.subjects[0]):
        if pedantic:
            raise _pedantic("implicit republish based on subject transform")
        republish = msgspec.structs.replace(republish, src=transform.dest, dest=transform.dest)
    cfg.republish = republish


def fill_placement(cfg: StreamConfig) -> None:
    """nats-server keeps no empty placement."""
    if cfg.placement is not None and cfg.placement == Placement():
        cfg.placement = None


def fill_flags(cfg: StreamConfig) -> None:
    """The policies, flags and objects nats-server always writes, at their zero values;
    the default persist mode is written as no mode at all."""
    for name, default in (("retention", "limits"), ("storage", "file"), ("discard", "old"),
                          ("compression", "none"), ("max_age", 0)):
        if getattr(cfg, name) is None:
            setattr(cfg, name, default)
    if not cfg.num_replicas:
        cfg.num_replicas = 1
    if cfg.persist_mode == "default":
        cfg.persist_mode = None
    for name in ("allow_direct", "mirror_direct", "sealed", "deny_delete", "deny_purge",
                 "allow_rollup_hdrs", "allow_msg_ttl"):
        if getattr(cfg, name) is None:
            setattr(cfg, name, False)
    if cfg.consumer_limits is None:
        cfg.consumer_limits = ConsumerLimits()


def normalize(cfg: StreamConfig) -> StreamConfig:
    """A copy with nats-server's defaults applied (never raises; the checks are
    ``jsstore.stream.configchecks``)."""
    out = msgspec.structs.replace(cfg)
    fill_flags(out)
    fill_limits(out)
    fill_duplicate_window(out)
    fill_marker_needs(out)
    fill_schedule_needs(out)
    fill_subjects(out)
    fill_republish(out)
    fill_placement(out)
    return out


def is_valid_name(name: str) -> bool:
    """nats-server's isValidName: non-empty, no whitespace, '.', '*' or '>'."""
    return bool(name) and not any(ch in name for ch in " \t\r\n\f.*>")


def is_valid_asset_name(name: str) -> bool:
    """nats-server's isValidAssetName: a valid name without '\\' or '/' either."""
    return is_valid_name(name) and not any(ch in name for ch in "\\/")


def source_index_parts(source: StreamSource) -> tuple[str, str, str]:
    """(name, sources, destinations) of nats-server's source index name: the filter (or
    ``>``) and ``>`` without transforms, else every transform's source and destination
    (``>`` for an empty one) joined by form feeds."""
    if not source.subject_transforms:
        return source.name, source.filter_subject or FULL_WILDCARD, FULL_WILDCARD
    srcs = TRANSFORM_SEPARATOR.join(t.src or FULL_WILDCARD for t in source.subject_transforms)
    dests = TRANSFORM_SEPARATOR.join(t.dest or FULL_WILDCARD for t in source.subject_transforms)
    return source.name, srcs, dests


def source_index_name(source: StreamSource) -> str:
    """nats-server's composeIName: the index parts, the name qualified by the API prefix of
    an external source (nats-server hashes the prefix; equal prefixes give equal names)."""
    name, srcs, dests = source_index_parts(source)
    if source.external is not None:
        name += ":" + source.external.api
    return " ".join((name, srcs, dests))


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
