"""The stream configuration checks of nats-server, in its order: the first rule a
configuration breaks is the answer, so the order is part of the rule.

* ``check_config`` is ``checkStreamCfg``: the checks with the defaults applied between
  them (``jsstore.stream.config``'s ``fill_*``), the configuration nats-server keeps as
  the result;
* ``check_create`` adds the create handler's rules around it (path separators, sealed,
  mirror direct without a mirror, then one server's single replica), ``check_overlap``
  the subjects of the account's other streams, ``validate`` both for a new stream;
* ``check_update`` is ``configUpdateCheck`` and what ``updateWithAdvisory`` checks after
  it (the consumers against new consumer limits, the other streams' subjects); the
  update handler runs ``check_config`` before it looks the stream up.

`existing_streams` are the account's other streams (their stored configurations): mirror
and source origins (subjects, message size, direct gets) and cycles are looked up there.
`pedantic` is the request's pedantic flag: defaults nats-server would apply silently are
refused instead.  Every failure raises a generated API error of ``jsstore.wire.apierrors``
with nats-server's code and text.

`max_bytes` is what the account's JetStream limits require of max_bytes
(``MaxBytesRule``); the account's other limits (stream count, reservations) are
``jsstore.jetstream.limits``'.  Not checked: the server's duplicate window limit.
"""

from __future__ import annotations

from typing import Iterable, Mapping, NamedTuple

import msgspec

from jsstore._core.storage.subjects import filters_overlap, is_subset_match, is_valid_subject
from jsstore.gocompat.durations import SECOND
from jsstore.gocompat.quoting import byte_len, quote
from jsstore.stream import config as streamconfig
from jsstore.stream import transform as subjtransform
from jsstore.stream.config import (
    FULL_WILDCARD,
    MAX_DESCRIPTION_LEN,
    MAX_METADATA_LEN,
    MAX_NAME_LEN,
    MAX_REPLICAS,
    MIN_WINDOW,
    StreamConfig,
    is_valid_asset_name,
)
from jsstore.wire import apierrors as api_errors
from jsstore.wire.subjecttree import SubjectTree

JS_API_PREFIX = "$JS.API"                              # JSApiPrefix
# subject spaces a stream may only capture with no_ack, and the exceptions inside them
JETSTREAM_SPACES = ("$JS.>", "$JSC.>", "$NRG.>")
JETSTREAM_EVENTS = "$JS.EVENT.>"
SYSTEM_SPACE = "$SYS.>"
SYSTEM_ACCOUNT_EVENTS = "$SYS.ACCOUNT.>"
RETENTIONS = ("limits", "interest", "workqueue")
DISCARDS = ("old", "new")
COMPRESSIONS = ("none", "s2", "lz4")     # lz4: jsstore's storage extension
STORAGES = ("file", "memory")


class MaxBytesRule(NamedTuple):
    """What an account requires of a stream's max_bytes (its JetStream limits): set at
    all, and at most the limit for the stream's storage (0: no limit)."""
    required: bool = False
    memory_limit: int = 0
    file_limit: int = 0


NO_MAX_BYTES_RULE = MaxBytesRule()


def _invalid(text: str) -> api_errors.ApiError:
    return api_errors.JSStreamInvalidConfigF(err=text)


def subjects_collide(a: str, b: str) -> bool:
    """nats-server's SubjectsCollide: equal, or some subject matches both."""
    return a == b or filters_overlap(a, b)


def check_transform(src: str, dest: str) -> str | None:
    """Why src -> dest is not a valid subject mapping, in nats-server's words (None when
    it is): nats-server's ValidateMapping (jsstore.stream.transform)."""
    return subjtransform.transform_error(src, dest)


def _others_by_name(name: str, existing_streams: Iterable[StreamConfig]) -> dict[str, StreamConfig]:
    return {other.name: other for other in existing_streams if other.name != name}


# -- checkStreamCfg ------------------------------------------------------------------------
def check_config(config: StreamConfig, *, existing_streams: Iterable[StreamConfig] = (),
                 pedantic: bool = False,
                 max_bytes: MaxBytesRule = NO_MAX_BYTES_RULE) -> StreamConfig:
    """nats-server's checkStreamCfg: raise the first rule's error, in its order; the
    configuration with nats-server's defaults (what it stores) when every rule holds."""
    others = _others_by_name(config.name, existing_streams)
    _check_name(config)
    cfg = msgspec.structs.replace(config)
    _check_policies(cfg)
    _check_limits(cfg, pedantic)
    _check_features(cfg, pedantic)
    external = _check_mirror(cfg, others, pedantic)
    more = _check_sources(cfg, others)
    _check_external_prefixes(external[0] + more[0], external[1] + more[1],
                             external[2] + more[2])
    _check_cycles(cfg, others)
    _check_subjects(cfg)
    _check_max_bytes(cfg, max_bytes)
    _check_subject_transform(cfg)
    _check_republish(cfg, pedantic)
    streamconfig.fill_placement(cfg)
    if cfg.placement is not None and cfg.placement.preferred:
        raise _invalid("preferred server not permitted in placement")
    streamconfig.fill_flags(cfg)
    return cfg


def _check_name(cfg: StreamConfig) -> None:
    if not is_valid_asset_name(cfg.name):
        raise _invalid("stream name is required and can not contain '.', '*', '>', '\\', '/'")
    if byte_len(cfg.name) > MAX_NAME_LEN:
        raise _invalid(f"stream name is too long, maximum allowed is {MAX_NAME_LEN}")
    if byte_len(cfg.description) > MAX_DESCRIPTION_LEN:
        raise _invalid(f"stream description is too long, maximum allowed is {MAX_DESCRIPTION_LEN}")
    if sum(byte_len(k) + byte_len(v) for k, v in cfg.metadata.items()) > MAX_METADATA_LEN:
        raise _invalid(f"stream metadata exceeds maximum size of {MAX_METADATA_LEN} bytes")


def _check_policies(cfg: StreamConfig) -> None:
    """Values nats-server's JSON decoder could not have produced (an embedded caller's)."""
    if cfg.retention not in (None, *RETENTIONS):
        raise _invalid("invalid retention")
    if cfg.discard not in (None, *DISCARDS):
        raise _invalid("invalid discard policy")
    if cfg.compression not in (None, *COMPRESSIONS):
        raise _invalid("invalid compression")
    if cfg.storage is None:
        cfg.storage = "file"
    if cfg.storage not in STORAGES:
        raise _invalid("invalid storage type")
    if not cfg.num_replicas:
        cfg.num_replicas = 1
    if cfg.num_replicas > MAX_REPLICAS:
        raise _invalid(f"maximum replicas is {MAX_REPLICAS}")
    if cfg.num_replicas < 0:
        raise api_errors.JSReplicasCountCannotBeNegative()


def _check_limits(cfg: StreamConfig, pedantic: bool) -> None:
    """Count and size limits, max_age and the duplicate window."""
    streamconfig.fill_limits(cfg, pedantic)
    max_age = cfg.max_age or 0
    if max_age < 0:
        raise _invalid("max age can not be negative")
    if 0 < max_age < MIN_WINDOW:
        raise _invalid("max age needs to be >= 100ms")
    streamconfig.fill_duplicate_window(cfg, pedantic)
    if cfg.duplicate_window < 0:
        raise _invalid("duplicates window can not be negative")
    if max_age != 0 and cfg.duplicate_window > max_age:
        raise _invalid("duplicates window can not be larger then max age")
    if 0 < cfg.duplicate_window < MIN_WINDOW:
        raise _invalid("duplicates window needs to be >= 100ms")


def _check_features(cfg: StreamConfig, pedantic: bool) -> None:
    """Roll-ups, counters, discard new per subject, subject delete markers, schedules and
    the persist mode, each seeing what the ones before it made of the configuration."""
    if cfg.deny_purge and cfg.allow_rollup_hdrs:
        raise _invalid("roll-ups require the purge permission")
    if cfg.allow_msg_counter:
        if cfg.discard == "new":
            raise _invalid("counter stream cannot use discard new")
        if cfg.allow_msg_ttl:
            raise _invalid("counter stream cannot use message TTLs")
        if cfg.allow_msg_schedules:
            raise _invalid("counter stream cannot use message schedules")
        if (cfg.retention or "limits") != "limits":
            raise _invalid("counter stream can only use limits retention")
    _check_discard_new_per_subject(cfg)
    if cfg.subject_delete_marker_ttl > 0:
        if cfg.subject_delete_marker_ttl < SECOND:
            raise _invalid("subject delete marker TTL must be at least 1 second")
        streamconfig.fill_marker_needs(cfg, pedantic)
    elif cfg.subject_delete_marker_ttl < 0:
        raise _invalid("subject delete marker TTL must not be negative")
    if cfg.allow_msg_schedules:
        if cfg.discard == "new":
            raise _invalid("message scheduling cannot use discard new")
        streamconfig.fill_schedule_needs(cfg, pedantic)
    if cfg.persist_mode == "async":
        if cfg.storage != "file":
            raise _invalid("async persist mode is only supported on file storage")
        if cfg.num_replicas > 1:
            raise _invalid("async persist mode is not supported on replicated streams")
        if cfg.allow_atomic:
            raise _invalid("async persist mode is not supported with atomic batch publish")


def _check_discard_new_per_subject(cfg: StreamConfig) -> None:
    if cfg.discard_new_per_subject:
        if cfg.discard != "new":
            raise _invalid("discard new per subject requires discard new policy to be set")
        if cfg.max_msgs_per_subject <= 0:
            raise _invalid("discard new per subject requires max msgs per subject > 0")


def _check_transforms_of(transforms, invalid_filter, invalid_destination) -> None:
    for transform in transforms:
        if transform.src and not is_valid_subject(transform.src, True):
            raise invalid_filter(err=f"invalid subject {transform.src}")
        problem = check_transform(transform.src, transform.dest)
        if problem:
            raise invalid_destination(err=problem)


def _check_mirror(cfg: StreamConfig, others: Mapping[str, StreamConfig],
                  pedantic: bool) -> tuple[list[str], list[str], list[str]]:
    """The mirror's rules; (origin subjects, external deliver prefixes, external API
    prefixes) for the prefix checks.  A mirror of a stream in this account takes the
    origin's allow_direct as its mirror_direct."""
    mirror = cfg.mirror
    if mirror is None:
        return [], [], []
    errors = api_errors
    if cfg.first_seq > 0:
        raise errors.JSMirrorWithFirstSeqErr()
    if cfg.subjects:
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
    transforms = mirror.subject_transforms
    for i, transform in enumerate(transforms):
        _check_transforms_of([transform], errors.JSMirrorInvalidSubjectFilter,
                             errors.JSMirrorInvalidTransformDestination)
        if any(i != j and subjects_collide(transform.src, other.src)
               for j, other in enumerate(transforms)):
            raise errors.JSMirrorOverlappingSubjectFilters()
    if mirror.external is not None:
        external = mirror.external
        return ([], [external.deliver] if external.deliver else [],
                [external.api] if external.api else [])
    if not is_valid_asset_name(mirror.name):
        raise errors.JSMirrorInvalidStreamName()
    origin = others.get(mirror.name)
    if origin is None:
        return [], [], []
    if 0 < cfg.max_msg_size < (origin.max_msg_size or 0):
        raise errors.JSMirrorMaxMessageSizeTooBigErr()
    if pedantic and bool(cfg.mirror_direct) != bool(origin.allow_direct):
        raise api_errors.JSPedanticErrF(err="origin stream has direct get set, mirror has it "
                                            "disabled")
    cfg.mirror_direct = bool(origin.allow_direct)
    return list(origin.subjects), [], []


def _check_sources(cfg: StreamConfig, others: Mapping[str, StreamConfig]
                   ) -> tuple[list[str], list[str], list[str]]:
    """Every source's rules; (origin subjects, external deliver prefixes, external API
    prefixes) for the prefix checks."""
    errors = api_errors
    if cfg.sources and cfg.allow_msg_schedules:
        raise errors.JSSourceWithMsgSchedulesErr()
    subjects: list[str] = []
    deliver_prefixes: list[str] = []
    api_prefixes: list[str] = []
    seen: set[str] = set()
    for source in cfg.sources:
        if source is None or not is_valid_asset_name(source.name):
            raise errors.JSSourceInvalidStreamName()
        index_name = streamconfig.source_index_name(source)
        if index_name in seen:
            raise errors.JSSourceDuplicateDetected()
        seen.add(index_name)
        if source.filter_subject and source.subject_transforms:
            raise errors.JSSourceMultipleFiltersNotAllowed()
        _check_transforms_of(source.subject_transforms, errors.JSSourceInvalidSubjectFilter,
                             errors.JSSourceInvalidTransformDestination)
        for i, transform in enumerate(source.subject_transforms):
            for j, other in enumerate(source.subject_transforms):
                if i != j and (transform.src == other.src
                               or is_subset_match(transform.src, other.src)):
                    raise errors.JSSourceOverlappingSubjectFilters()
        if source.external is not None:
            if source.external.deliver:
                deliver_prefixes.append(source.external.deliver)
            if source.external.api:
                api_prefixes.append(source.external.api)
            continue
        origin = others.get(source.name)
        if origin is not None:
            subjects += origin.subjects
            if 0 < cfg.max_msg_size < (origin.max_msg_size or 0):
                raise errors.JSSourceMaxMessageSizeTooBigErr()
    return subjects, deliver_prefixes, api_prefixes


def _check_external_prefixes(origin_subjects: list[str], deliver_prefixes: list[str],
                             api_prefixes: list[str]) -> None:
    """An external deliver prefix must be a literal subject that no origin subject of a
    local mirror or source lies under; an external API prefix a literal subject apart
    from this account's JetStream API."""
    for prefix in deliver_prefixes:
        if not is_valid_subject(prefix):
            raise api_errors.JSStreamInvalidExternalDeliverySubjErrF(prefix=prefix)
        for subject in origin_subjects:
            if subjects_collide(subject, f"{prefix}.{subject}"):
                raise api_errors.JSStreamExternalDelPrefixOverlapsErrF(prefix=prefix,
                                                                       subject=subject)
    for prefix in api_prefixes:
        if not is_valid_subject(prefix):
            raise _invalid(f"stream external api prefix {quote(prefix)} must be a valid "
                           "subject without wildcards")
        if subjects_collide(prefix, JS_API_PREFIX):
            raise api_errors.JSStreamExternalApiOverlapErrF(prefix=prefix, subject=JS_API_PREFIX)


def _check_cycles(cfg: StreamConfig, others: Mapping[str, StreamConfig]) -> None:
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
                        subjects_collide(s, source.filter_subject) for s in current.subjects):
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
    """The subjects (the stream's name when it neither mirrors nor sources), one at a
    time: valid, no capture of everything without no_ack and one replica, none of the
    JetStream or system API subjects without no_ack, none colliding with a later one."""
    given = bool(cfg.subjects)
    streamconfig.fill_subjects(cfg)
    if given:
        if cfg.mirror is not None:
            raise api_errors.JSMirrorWithSubjectsErr()
        seen = set()
        first_later = _first_later_collisions(cfg.subjects)
        for i, subject in enumerate(cfg.subjects):
            if not is_valid_subject(subject, True):
                raise _invalid("invalid subject")
            if subject in seen:
                raise _invalid("duplicate subjects detected")
            if subject == FULL_WILDCARD:
                if not cfg.no_ack:
                    raise _invalid("capturing all subjects requires no-ack to be true")
                if cfg.num_replicas != 1:
                    raise _invalid("capturing all subjects requires replicas of 1")
            if not cfg.no_ack:
                for space in JETSTREAM_SPACES:
                    if (subjects_collide(subject, space)
                            and not is_subset_match(subject, JETSTREAM_EVENTS)):
                        raise _invalid("subjects that overlap with jetstream api require "
                                       "no-ack to be true")
                if (subjects_collide(subject, SYSTEM_SPACE)
                        and not is_subset_match(subject, SYSTEM_ACCOUNT_EVENTS)):
                    raise _invalid("subjects that overlap with system api require no-ack to "
                                   "be true")
            later = first_later(i)
            if later is not None:
                raise _invalid(f'subject "{subject}" overlaps with "{later}"')
            seen.add(subject)
    if not cfg.subjects and not cfg.sources and cfg.mirror is None:
        raise _invalid("stream needs at least one configured subject or be a source/mirror")


def _first_later_collisions(subjects: list[str]):
    """A function of i: the first subject after subjects[i] that collides with it (None:
    none does). The valid subjects are looked up in a tree of them, so that a stream of
    many subjects is checked in about the time it takes to list them; an invalid one is
    compared directly (a subject is only asked about after every one before it passed,
    and the first invalid one ends the checks)."""
    tree = SubjectTree()
    invalid = []
    for index, subject in enumerate(subjects):
        if is_valid_subject(subject, True):
            tree.insert(subject, index)
        else:
            invalid.append(index)

    def first_later(i: int) -> str | None:
        subject = subjects[i]
        later = [j for j in tree.overlapping(subject) if j > i]
        later += [j for j in invalid if j > i and subjects_collide(subjects[j], subject)]
        return subjects[min(later)] if later else None
    return first_later


def _check_max_bytes(cfg: StreamConfig, rule: MaxBytesRule) -> None:
    """The account's rule on max_bytes: required, and at most the limit for its storage."""
    limit = rule.memory_limit if cfg.storage == "memory" else rule.file_limit
    if rule.required and cfg.max_bytes <= 0:
        raise api_errors.JSStreamMaxBytesRequired()
    if limit > 0 and cfg.max_bytes > limit:
        raise api_errors.JSStreamMaxStreamBytesExceeded()


def _check_subject_transform(cfg: StreamConfig) -> None:
    transform = cfg.subject_transform
    if transform is not None:
        _check_transforms_of([transform], api_errors.JSStreamTransformInvalidSource,
                             api_errors.JSStreamTransformInvalidDestination)


def _check_republish(cfg: StreamConfig, pedantic: bool) -> None:
    streamconfig.fill_republish(cfg, pedantic)
    republish = cfg.republish
    if republish is None:
        return
    if any(subjects_collide(republish.dest, subject) for subject in cfg.subjects):
        raise _invalid("stream configuration for republish destination forms a cycle")
    try:   # nats-server only needs the republish transform to build
        subjtransform.SubjectTransform(republish.src, republish.dest)
    except subjtransform.TransformError:
        raise _invalid("stream configuration for republish with transform from "
                       f"'{republish.src}' to '{republish.dest}' not valid") from None


# -- creating ----------------------------------------------------------------------------------
def check_create(config: StreamConfig, *, existing_streams: Iterable[StreamConfig] = (),
                 pedantic: bool = False,
                 max_bytes: MaxBytesRule = NO_MAX_BYTES_RULE) -> StreamConfig:
    """The create handler's rules, checkStreamCfg and addStream's replica rule, in
    nats-server's order; the configuration to store.  The name of the subject is the
    caller's to compare; whether the stream exists, and the other streams' subjects
    (``check_overlap``), come after this."""
    if "/" in config.name or "\\" in config.name:
        raise api_errors.JSStreamNameContainsPathSeparatorsErr()
    if config.sealed:
        raise _invalid("stream configuration for create can not be sealed")
    if config.mirror_direct and config.mirror is None:
        raise _invalid("stream has no mirror but does have mirror direct")
    cfg = check_config(config, existing_streams=existing_streams, pedantic=pedantic,
                       max_bytes=max_bytes)
    check_single_server(cfg)
    return cfg


def check_single_server(cfg: StreamConfig) -> None:
    """One server keeps one copy of a stream."""
    if cfg.num_replicas > 1:
        raise api_errors.JSStreamReplicasNotSupportedErr()


def check_overlap(cfg: StreamConfig, existing_streams: Iterable[StreamConfig]) -> None:
    """No subject of `cfg` (checked) may collide with one of another stream."""
    theirs = SubjectTree()
    for other in existing_streams:
        if other.name != cfg.name:
            for subject in other.subjects:
                theirs.insert(subject, subject)
    if theirs and any(next(theirs.overlapping(mine), None) is not None
                      for mine in cfg.subjects):
        raise api_errors.JSStreamSubjectOverlapErr()


def validate(config: StreamConfig, *, existing_streams: Iterable[StreamConfig] = (),
             pedantic: bool = False) -> StreamConfig:
    """Every create rule for a stream that does not exist yet (``check_create``, then
    ``check_overlap``); the configuration to store."""
    existing_streams = list(existing_streams)
    cfg = check_create(config, existing_streams=existing_streams, pedantic=pedantic)
    check_overlap(cfg, existing_streams)
    return cfg


# -- updating ----------------------------------------------------------------------------------
def check_update(old: StreamConfig, new: StreamConfig, *,
                 existing_streams: Iterable[StreamConfig] = (),
                 consumers: Mapping[str, object] | None = None,
                 pedantic: bool = False,
                 max_bytes: MaxBytesRule = NO_MAX_BYTES_RULE) -> StreamConfig:
    """configUpdateCheck and the rest of updateWithAdvisory's checks: may `new` (as
    requested) replace `old` (as stored)?  `consumers` are the stream's consumers'
    configurations by name (their inactive_threshold and max_ack_pending).  The
    configuration to store (``apply_update``'s)."""
    existing_streams = list(existing_streams)
    errors = api_errors
    old_cfg = streamconfig.normalize(old)
    cfg = check_config(new, existing_streams=existing_streams, pedantic=pedantic,
                       max_bytes=max_bytes)
    if cfg.name != old_cfg.name:
        raise _invalid("stream configuration name must match original")
    check_single_server(cfg)
    if cfg.storage != old_cfg.storage:
        raise _invalid("stream configuration update can not change storage type")
    if cfg.retention != old_cfg.retention and "workqueue" in (cfg.retention, old_cfg.retention):
        raise _invalid("stream configuration update can not change retention policy to/from workqueue")
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
    _check_discard_new_per_subject(cfg)
    if old_cfg.allow_msg_ttl and not cfg.allow_msg_ttl:
        raise _invalid("message TTL status can not be disabled")
    if cfg.allow_msg_counter != old_cfg.allow_msg_counter:
        raise _invalid("stream configuration update can not change message counter setting")
    if old_cfg.allow_msg_schedules and not cfg.allow_msg_schedules:
        raise _invalid("message schedules can not be disabled")
    if cfg.persist_mode != old_cfg.persist_mode:
        raise _invalid("stream configuration update can not change persist mode")
    cfg = apply_update(cfg)
    check_consumer_limits(old_cfg, cfg, consumers or {})
    check_overlap(cfg, existing_streams)
    return cfg


def check_consumer_limits(old: StreamConfig, new: StreamConfig,
                          consumers: Mapping[str, object]) -> None:
    """New consumer limits (a positive value that changed) must hold for every existing
    consumer; nats-server names the ones they do not (sorted) in a JSStreamUpdateErrF."""
    old_limits = old.consumer_limits or streamconfig.ConsumerLimits()
    new_limits = new.consumer_limits or streamconfig.ConsumerLimits()
    threshold, pending = new_limits.inactive_threshold, new_limits.max_ack_pending
    if not ((threshold > 0 and threshold != old_limits.inactive_threshold)
            or (pending > 0 and pending != old_limits.max_ack_pending)):
        return
    violating = sorted(
        name for name, consumer in consumers.items()
        if (threshold > 0 and consumer.inactive_threshold > threshold)
        or (pending > 0 and consumer.max_ack_pending > pending))
    if violating:
        raise api_errors.JSStreamUpdateErrF(
            err="change to limits violates consumers: " + ", ".join(violating))


def apply_update(cfg: StreamConfig) -> StreamConfig:
    """The configuration nats-server keeps after an accepted update (`cfg` as checked, or
    as requested): a republish without destination republishes everything, and a sealed
    stream gets no max_age, discard new, deny_delete and deny_purge, no roll-ups."""
    cfg = streamconfig.normalize(cfg)
    if cfg.republish is not None and not cfg.republish.dest:
        cfg.republish = msgspec.structs.replace(cfg.republish, dest=FULL_WILDCARD)
    if cfg.sealed:
        cfg.max_age = 0
        cfg.discard = "new"
        cfg.deny_delete = cfg.deny_purge = True
        cfg.allow_rollup_hdrs = False
    return cfg
