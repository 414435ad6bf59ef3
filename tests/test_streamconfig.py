"""Stream configuration: defaults, validation and update rules, checked against the answers
nats-server 2.15 gives for the same configurations (recorded in the tables below)."""

import json

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

import jsstore
from jsstore.stream import config as sc
from jsstore.stream import configchecks
from jsstore.stream.config import (ConsumerLimits, RePublish, StreamConfig, StreamSource,
                                   SubjectTransform, normalize, to_store_config)
from jsstore.stream.configchecks import check_update, validate
from jsstore.wire import apierrors as errors

SECOND = 1_000_000_000

# Configurations exactly as nats-server answered a create (server-added metadata removed).
NATS_ANSWERS = [
    '{"name":"A","subjects":["A"],"retention":"limits","max_consumers":-1,"max_msgs":-1,'
    '"max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"old",'
    '"storage":"file","num_replicas":1,"duplicate_window":120000000000,"compression":"none",'
    '"allow_direct":false,"mirror_direct":false,"sealed":false,"deny_delete":false,'
    '"deny_purge":false,"allow_rollup_hdrs":false,"consumer_limits":{},"allow_msg_ttl":false}',
    '{"name":"D","description":"hi","subjects":["D"],"retention":"limits","max_consumers":-1,'
    '"max_msgs":-1,"max_bytes":-1,"max_age":60000000000,"max_msgs_per_subject":-1,'
    '"max_msg_size":-1,"discard":"old","storage":"memory","num_replicas":1,'
    '"duplicate_window":60000000000,"compression":"s2","first_seq":5,"allow_direct":true,'
    '"mirror_direct":false,"sealed":false,"deny_delete":false,"deny_purge":false,'
    '"allow_rollup_hdrs":true,"consumer_limits":{},"allow_msg_ttl":true,'
    '"subject_delete_marker_ttl":1000000000,"allow_atomic":true,"metadata":{"k":"v"}}',
    '{"name":"E","retention":"limits","max_consumers":-1,"max_msgs":-1,"max_bytes":-1,'
    '"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"old","storage":"file",'
    '"num_replicas":1,"mirror":{"name":"A","opt_start_seq":3,"opt_start_time":'
    '"2024-01-01T00:00:00Z"},"compression":"none","allow_direct":false,"mirror_direct":false,'
    '"sealed":false,"deny_delete":false,"deny_purge":false,"allow_rollup_hdrs":false,'
    '"consumer_limits":{},"allow_msg_ttl":false}',
    '{"name":"S3","subjects":["s3.>"],"retention":"workqueue","max_consumers":-1,"max_msgs":-1,'
    '"max_bytes":-1,"max_age":0,"max_msgs_per_subject":5,"max_msg_size":-1,"discard":"new",'
    '"storage":"file","num_replicas":1,"no_ack":true,"duplicate_window":120000000000,'
    '"compression":"none","allow_direct":false,"mirror_direct":false,'
    '"discard_new_per_subject":true,"sealed":false,"deny_delete":false,"deny_purge":false,'
    '"allow_rollup_hdrs":false,"consumer_limits":{},"allow_msg_ttl":false}',
    '{"name":"F","subjects":["f.>"],"retention":"limits","max_consumers":-1,"max_msgs":-1,'
    '"max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"old",'
    '"storage":"file","num_replicas":1,"duplicate_window":120000000000,"compression":"none",'
    '"republish":{"src":">","dest":"rp.>"},"allow_direct":false,"mirror_direct":false,'
    '"sealed":false,"deny_delete":false,"deny_purge":false,"allow_rollup_hdrs":false,'
    '"consumer_limits":{},"allow_msg_ttl":false}',
    '{"name":"G","subjects":["g.>"],"retention":"limits","max_consumers":-1,"max_msgs":-1,'
    '"max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"old",'
    '"storage":"file","num_replicas":1,"duplicate_window":120000000000,"compression":"none",'
    '"subject_transform":{"src":"g.*","dest":"h.{{wildcard(1)}}"},"allow_direct":false,'
    '"mirror_direct":false,"sealed":false,"deny_delete":false,"deny_purge":false,'
    '"allow_rollup_hdrs":false,"consumer_limits":{"inactive_threshold":-1},'
    '"allow_msg_ttl":false}',
    '{"name":"S4","subjects":["S4"],"retention":"limits","max_consumers":-1,"max_msgs":-1,'
    '"max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"old",'
    '"storage":"file","num_replicas":1,"duplicate_window":120000000000,"compression":"none",'
    '"allow_direct":false,"mirror_direct":false,"sealed":false,"deny_delete":false,'
    '"deny_purge":false,"allow_rollup_hdrs":true,"consumer_limits":{},"allow_msg_ttl":false,'
    '"allow_msg_counter":true,"allow_msg_schedules":true,"persist_mode":"async"}',
]

# (request JSON, the configuration nats-server created from it)
NATS_DEFAULTS = [
    ({"name": "A"}, NATS_ANSWERS[0]),
    ({"name": "D", "storage": "memory", "max_age": 60 * SECOND, "description": "hi",
      "metadata": {"k": "v"}, "compression": "s2", "first_seq": 5, "allow_atomic": True,
      "allow_msg_ttl": True, "subject_delete_marker_ttl": SECOND, "allow_direct": True},
     NATS_ANSWERS[1]),
    ({"name": "E", "mirror": {"name": "A", "opt_start_seq": 3,
                              "opt_start_time": "2024-01-01T00:00:00Z"}}, NATS_ANSWERS[2]),
    ({"name": "S3", "subjects": ["s3.>"], "retention": "workqueue", "max_msgs_per_subject": 5,
      "discard": "new", "discard_new_per_subject": True, "no_ack": True}, NATS_ANSWERS[3]),
    ({"name": "F", "republish": {"dest": "rp.>"}, "subjects": ["f.>"]}, NATS_ANSWERS[4]),
    ({"name": "S2", "max_msgs": -5 + 5, "max_bytes": 0, "max_msgs_per_subject": 0,
      "max_msg_size": 0, "max_consumers": 0},
     NATS_ANSWERS[0].replace('"A"', '"S2"')),
]


def cfg_of(request: dict) -> StreamConfig:
    return sc.decode(json.dumps(request))


@pytest.mark.parametrize("answer", NATS_ANSWERS)
def test_json_round_trip_keeps_nats_keys_and_order(answer):
    cfg = sc.decode(answer)
    assert sc.encode(cfg).decode() == answer


@pytest.mark.parametrize("request_json,answer", NATS_DEFAULTS)
def test_normalize_gives_nats_defaults(request_json, answer):
    cfg = cfg_of(request_json)
    validate(cfg)
    assert sc.encode(normalize(cfg)).decode() == answer


def test_unset_fields_are_omitted_like_a_client_request():
    assert sc.encode(StreamConfig(name="X", subjects=["x"])) == b'{"name":"X","subjects":["x"]}'


def test_normalize_rules():
    cfg = normalize(StreamConfig(name="N", max_age=SECOND))
    assert cfg.duplicate_window == SECOND and cfg.subjects == ["N"]
    assert normalize(StreamConfig(name="N", max_age=3600 * SECOND)).duplicate_window == 120 * SECOND
    assert normalize(StreamConfig(name="N", mirror=StreamSource(name="O"))).subjects == []
    assert normalize(StreamConfig(name="N", mirror=StreamSource(name="O"))).duplicate_window == 0
    assert normalize(StreamConfig(name="N", sources=[StreamSource(name="O")])).subjects == []
    sdm = normalize(StreamConfig(name="N", subject_delete_marker_ttl=SECOND))
    assert sdm.allow_msg_ttl and sdm.allow_rollup_hdrs
    assert normalize(StreamConfig(name="N", allow_msg_schedules=True)).allow_rollup_hdrs
    assert normalize(StreamConfig(name="N", persist_mode="default")).persist_mode is None
    assert normalize(StreamConfig(name="N", republish=RePublish(dest="r.>"))).republish.src == ">"


def test_decode_rejects_unknown_enum_values():
    for bad in ('{"name":"C","retention":"bogus"}', '{"name":"C","storage":"bogus"}',
                '{"name":"C","discard":"x"}', '{"name":"C","compression":"zstd"}'):
        with pytest.raises(msgspec.ValidationError):
            sc.decode(bad)


# (request, error class, description) — each pair as nats-server 2.15 answered it
# on a server holding the streams of EXISTING.
EXISTING = [normalize(cfg_of({"name": "A"})), normalize(cfg_of({"name": "B", "subjects": ["b.>"]})),
            normalize(cfg_of({"name": "BIG", "subjects": ["big"], "max_msg_size": 1000}))]
INVALID_CREATES = [
    ({"name": "C", "num_replicas": 3}, errors.JSStreamReplicasNotSupportedErr,
     "replicas > 1 not supported in non-clustered mode"),
    ({"name": "C", "num_replicas": -1}, errors.JSReplicasCountCannotBeNegative,
     "replicas count cannot be negative"),
    ({"name": "C", "num_replicas": 6}, errors.JSStreamInvalidConfigF, "maximum replicas is 5"),
    ({"name": "C/D"}, errors.JSStreamNameContainsPathSeparatorsErr,
     "Stream name can not contain path separators"),
    ({"name": "C\\D"}, errors.JSStreamNameContainsPathSeparatorsErr,
     "Stream name can not contain path separators"),
    ({"name": "C.D"}, errors.JSStreamInvalidConfigF,
     "stream name is required and can not contain '.', '*', '>', '\\', '/'"),
    ({"name": "C D"}, errors.JSStreamInvalidConfigF,
     "stream name is required and can not contain '.', '*', '>', '\\', '/'"),
    ({"name": "N" * 256}, errors.JSStreamInvalidConfigF,
     "stream name is too long, maximum allowed is 255"),
    ({"name": "C", "description": "d" * 4097}, errors.JSStreamInvalidConfigF,
     "stream description is too long, maximum allowed is 4096"),
    ({"name": "C", "subjects": ["b.x"]}, errors.JSStreamSubjectOverlapErr,
     "subjects overlap with an existing stream"),
    ({"name": "C", "mirror": {"name": "A"}, "subjects": ["x"]}, errors.JSMirrorWithSubjectsErr,
     "stream mirrors can not contain subjects"),
    ({"name": "C", "mirror": {"name": "A"}, "sources": [{"name": "B"}]},
     errors.JSMirrorWithSourcesErr, "stream mirrors can not also contain other sources"),
    ({"name": "C", "duplicate_window": 5 * SECOND, "max_age": SECOND},
     errors.JSStreamInvalidConfigF, "duplicates window can not be larger then max age"),
    ({"name": "C", "allow_msg_counter": True, "discard": "new"}, errors.JSStreamInvalidConfigF,
     "counter stream cannot use discard new"),
    ({"name": "C", "allow_msg_counter": True, "retention": "workqueue"},
     errors.JSStreamInvalidConfigF, "counter stream can only use limits retention"),
    ({"name": "C", "allow_msg_counter": True, "allow_msg_ttl": True},
     errors.JSStreamInvalidConfigF, "counter stream cannot use message TTLs"),
    ({"name": "H", "subjects": ["h.>"], "allow_msg_counter": True, "allow_msg_schedules": True},
     errors.JSStreamInvalidConfigF, "counter stream cannot use message schedules"),
    ({"name": "C", "allow_msg_schedules": True, "discard": "new"},
     errors.JSStreamInvalidConfigF, "message scheduling cannot use discard new"),
    ({"name": "C", "mirror": {"name": "A"}, "allow_msg_counter": True},
     errors.JSMirrorWithCountersErr, "stream mirrors can not also calculate counters"),
    ({"name": "C", "mirror": {"name": "A"}, "allow_atomic": True},
     errors.JSMirrorWithAtomicPublishErr, "stream mirrors can not also use atomic publishing"),
    ({"name": "C", "mirror": {"name": "A"}, "allow_msg_schedules": True},
     errors.JSMirrorWithMsgSchedulesErr, "stream mirrors can not also schedule messages"),
    ({"name": "C", "sources": [{"name": "A"}], "allow_msg_schedules": True},
     errors.JSSourceWithMsgSchedulesErr, "stream source can not also schedule messages"),
    ({"name": "C", "subject_delete_marker_ttl": 100, "allow_msg_ttl": True},
     errors.JSStreamInvalidConfigF, "subject delete marker TTL must be at least 1 second"),
    ({"name": "S11", "subjects": ["s11"], "subject_delete_marker_ttl": -1},
     errors.JSStreamInvalidConfigF, "subject delete marker TTL must not be negative"),
    ({"name": "C", "subjects": ["a..b"]}, errors.JSStreamInvalidConfigF, "invalid subject"),
    ({"name": "C", "subjects": ["x", "x"]}, errors.JSStreamInvalidConfigF,
     'subject "x" overlaps with "x"'),
    ({"name": "C", "subjects": ["x.*", "x.y"]}, errors.JSStreamInvalidConfigF,
     'subject "x.*" overlaps with "x.y"'),
    ({"name": "C", "subjects": [">"]}, errors.JSStreamInvalidConfigF,
     "capturing all subjects requires no-ack to be true"),
    ({"name": "H", "subjects": ["$JS.API.>"]}, errors.JSStreamInvalidConfigF,
     "subjects that overlap with jetstream api require no-ack to be true"),
    ({"name": "H", "subjects": ["$SYS.X"]}, errors.JSStreamInvalidConfigF,
     "subjects that overlap with system api require no-ack to be true"),
    ({"name": "C", "deny_purge": True, "allow_rollup_hdrs": True}, errors.JSStreamInvalidConfigF,
     "roll-ups require the purge permission"),
    ({"name": "C", "discard_new_per_subject": True}, errors.JSStreamInvalidConfigF,
     "discard new per subject requires discard new policy to be set"),
    ({"name": "C", "discard_new_per_subject": True, "discard": "new"},
     errors.JSStreamInvalidConfigF, "discard new per subject requires max msgs per subject > 0"),
    ({"name": "C", "max_age": 1000}, errors.JSStreamInvalidConfigF,
     "max age needs to be >= 100ms"),
    ({"name": "S10", "max_age": -1}, errors.JSStreamInvalidConfigF,
     "max age can not be negative"),
    ({"name": "C", "duplicate_window": 1000}, errors.JSStreamInvalidConfigF,
     "duplicates window needs to be >= 100ms"),
    ({"name": "S9", "duplicate_window": -5}, errors.JSStreamInvalidConfigF,
     "duplicates window can not be negative"),
    ({"name": "C", "sealed": True}, errors.JSStreamInvalidConfigF,
     "stream configuration for create can not be sealed"),
    ({"name": "E", "sources": [{"name": "A"}, {"name": "A"}]}, errors.JSSourceDuplicateDetected,
     "duplicate source configuration detected"),
    ({"name": "E", "mirror": {"name": "A"}, "first_seq": 4}, errors.JSMirrorWithFirstSeqErr,
     "stream mirrors can not have first sequence configured"),
    ({"name": "F", "republish": {"src": ">", "dest": "b.x"}, "subjects": ["f.>"]},
     errors.JSStreamInvalidConfigF,
     "stream configuration for republish with transform from '>' to 'b.x' not valid"),
    ({"name": "S15", "subjects": ["s15.>"], "republish": {"src": "s15.>", "dest": "s15.x"}},
     errors.JSStreamInvalidConfigF, "stream configuration for republish destination forms a cycle"),
    ({"name": "H", "subjects": ["h.>"], "subject_transform": {"src": "h.*",
                                                             "dest": "h.{{wildcard(2)}}"}},
     errors.JSStreamTransformInvalidDestination,
     "stream transform: invalid mapping destination: wildcard index out of range in "
     "{{wildcard(2)}}: [2]"),
    ({"name": "H", "subjects": ["h.>"], "placement": {"cluster": "x", "preferred": "s"}},
     errors.JSStreamInvalidConfigF, "preferred server not permitted in placement"),
    ({"name": "H", "subjects": ["h.>"], "persist_mode": "async", "allow_atomic": True},
     errors.JSStreamInvalidConfigF, "async persist mode is not supported with atomic batch publish"),
    ({"name": "S7", "sources": [{"name": "S4", "filter_subject": "x",
                                 "subject_transforms": [{"src": "a", "dest": "b"}]}]},
     errors.JSSourceMultipleFiltersNotAllowed,
     "source with multiple subject transforms cannot also have a single subject filter"),
    ({"name": "S12", "subjects": ["s12"], "sources": [{"name": "x.y"}]},
     errors.JSSourceInvalidStreamName, "sourced stream name is invalid"),
    ({"name": "S13", "mirror": {"name": "x*"}}, errors.JSMirrorInvalidStreamName,
     "mirrored stream name is invalid"),
    ({"name": "S18", "mirror": {"name": "S4", "subject_transforms": [
        {"src": "a.>", "dest": "b.>"}, {"src": "a.b", "dest": "c"}]}},
     errors.JSMirrorOverlappingSubjectFilters, "mirror subject filters can not overlap"),
    ({"name": "M", "mirror": {"name": "BIG"}, "max_msg_size": 10},
     errors.JSMirrorMaxMessageSizeTooBigErr, "stream mirror must have max message size >= source"),
    ({"name": "M", "sources": [{"name": "BIG"}], "max_msg_size": 10},
     errors.JSSourceMaxMessageSizeTooBigErr, "stream source must have max message size >= target"),
]


@pytest.mark.parametrize("request_json,error_class,description", INVALID_CREATES)
def test_invalid_create(request_json, error_class, description):
    with pytest.raises(errors.ApiError) as caught:
        validate(cfg_of(request_json), existing_streams=EXISTING)
    assert type(caught.value) is error_class
    assert caught.value.description == description


def test_valid_creates_pass():
    for request in ({"name": "C", "allow_msg_schedules": True},
                    {"name": "S14", "subjects": ["s14"], "allow_msg_counter": True,
                     "max_msgs_per_subject": 1},
                    {"name": "EV", "subjects": ["$JS.EVENT.ADVISORY.>"]},
                    {"name": "M", "mirror": {"name": "A"}},
                    {"name": "G", "subjects": ["g.>"],
                     "subject_transform": {"src": "g.*", "dest": "h.$1"}},
                    {"name": "X", "sources": [{"name": "A"}, {"name": "B", "filter_subject": "b.1"}]}):
        validate(cfg_of(request), existing_streams=EXISTING)
    # Capturing everything is allowed with no_ack, and only when no other stream exists.
    capture_all = cfg_of({"name": "ALL", "subjects": [">"], "no_ack": True})
    validate(capture_all)
    with pytest.raises(errors.JSStreamSubjectOverlapErr):
        validate(capture_all, existing_streams=EXISTING)


def test_cycle_through_sources_is_detected():
    one = normalize(cfg_of({"name": "ONE", "subjects": ["one"], "sources": [{"name": "TWO"}]}))
    two = cfg_of({"name": "TWO", "subjects": ["two"], "sources": [{"name": "ONE"}]})
    with pytest.raises(errors.JSStreamInvalidConfigF) as caught:
        validate(two, existing_streams=[one])
    assert caught.value.description == "detected cycle"


S3 = {"name": "S3", "subjects": ["s3.>"], "retention": "workqueue", "max_msgs_per_subject": 5,
      "discard": "new", "discard_new_per_subject": True, "no_ack": True}

# (old, change to the request, error class or None, description) — nats-server's answers.
UPDATES = [
    (S3, {"retention": "limits"}, errors.JSStreamInvalidConfigF,
     "stream configuration update can not change retention policy to/from workqueue"),
    (S3, {"storage": "memory"}, errors.JSStreamInvalidConfigF,
     "stream configuration update can not change storage type"),
    (S3, {"max_consumers": 4}, None, ""),
    (S3, {"first_seq": 9}, None, ""),
    (S3, {"allow_msg_ttl": True}, None, ""),
    (S3, {"allow_msg_counter": True}, errors.JSStreamInvalidConfigF,
     "counter stream cannot use discard new"),
    (S3, {"allow_msg_schedules": True}, errors.JSStreamInvalidConfigF,
     "message scheduling cannot use discard new"),
    (S3, {"num_replicas": 3}, errors.JSStreamReplicasNotSupportedErr,
     "replicas > 1 not supported in non-clustered mode"),
    (S3, {"compression": "s2", "description": "new", "max_age": 5 * SECOND,
          "allow_atomic": True, "deny_delete": True, "deny_purge": True}, None, ""),
    (S3, {"mirror": {"name": "A"}}, errors.JSMirrorWithSubjectsErr,
     "stream mirrors can not contain subjects"),
    ({**S3, "deny_delete": True}, {"deny_delete": False}, errors.JSStreamInvalidConfigF,
     "stream configuration update can not cancel deny message deletes"),
    ({**S3, "deny_purge": True}, {"deny_purge": False}, errors.JSStreamInvalidConfigF,
     "stream configuration update can not cancel deny purge"),
    ({**S3, "allow_msg_ttl": True}, {"allow_msg_ttl": False}, errors.JSStreamInvalidConfigF,
     "message TTL status can not be disabled"),
    ({"name": "S4", "allow_msg_counter": True}, {"allow_msg_counter": False},
     errors.JSStreamInvalidConfigF,
     "stream configuration update can not change message counter setting"),
    ({"name": "S5"}, {"allow_msg_schedules": True}, None, ""),
    ({"name": "S5", "allow_msg_schedules": True}, {"allow_msg_schedules": False},
     errors.JSStreamInvalidConfigF, "message schedules can not be disabled"),
    ({"name": "S6", "mirror": {"name": "S4"}}, {"mirror": None, "max_age": SECOND}, None, ""),
    ({"name": "S6", "mirror": {"name": "S4"}}, {"mirror": {"name": "S5"}},
     errors.JSStreamMirrorNotUpdatableErr, "stream mirror configuration can not be updated"),
    ({"name": "S6"}, {"mirror": {"name": "S4"}, "subjects": []},
     errors.JSStreamMirrorNotUpdatableErr, "stream mirror configuration can not be updated"),
    ({"name": "S1", "subject_delete_marker_ttl": SECOND}, {}, None, ""),
    ({"name": "Z", "sealed": False}, {"sealed": True}, None, ""),
    ({"name": "Z"}, {"name": "Y"}, errors.JSStreamInvalidConfigF,
     "stream configuration name must match original"),
]


@pytest.mark.parametrize("old,change,error_class,description", UPDATES)
def test_update_rules(old, change, error_class, description):
    old_cfg = normalize(cfg_of(old))
    new_request = {**old, **change}
    if old.get("subject_delete_marker_ttl"):
        new_request["subject_delete_marker_ttl"] = old["subject_delete_marker_ttl"]
    new_cfg = cfg_of({k: v for k, v in new_request.items() if v is not None})
    if error_class is None:
        check_update(old_cfg, new_cfg)
        return
    with pytest.raises(errors.ApiError) as caught:
        check_update(old_cfg, new_cfg)
    assert type(caught.value) is error_class
    assert caught.value.description == description


def test_unseal_is_refused_and_sealing_applies_nats_adjustments():
    request = StreamConfig(name="Z", sealed=True, max_age=5 * SECOND, allow_rollup_hdrs=True)
    check_update(normalize(StreamConfig(name="Z")), request)
    sealed = configchecks.apply_update(request)
    assert (sealed.max_age, sealed.discard, sealed.deny_delete, sealed.deny_purge,
            sealed.allow_rollup_hdrs) == (0, "new", True, True, False)
    with pytest.raises(errors.JSStreamInvalidConfigF) as caught:
        check_update(sealed, StreamConfig(name="Z", deny_delete=True, deny_purge=True))
    assert caught.value.description == "stream configuration update can not unseal a sealed stream"


def test_update_subject_overlap_with_other_stream():
    with pytest.raises(errors.JSStreamSubjectOverlapErr):
        check_update(normalize(StreamConfig(name="Q")),
                     StreamConfig(name="Q", subjects=["b.*"]), existing_streams=EXISTING)


def test_to_store_config():
    cfg = cfg_of({"name": "T", "subjects": ["t.>"], "max_msgs": 10, "max_age": 2 * SECOND,
                  "discard": "new", "max_msgs_per_subject": 2, "discard_new_per_subject": True,
                  "storage": "memory", "compression": "s2", "first_seq": 7,
                  "allow_msg_ttl": True, "retention": "interest"})
    store = to_store_config(cfg)
    assert (store.name, store.subjects, store.max_msgs, store.max_bytes, store.max_age,
            store.discard, store.max_msgs_per_subject, store.discard_new_per_subject,
            store.storage, store.compression, store.first_seq, store.allow_msg_ttl,
            store.retention, store.duplicate_window, store.max_consumers) == (
        "T", ["t.>"], 10, -1, 2 * SECOND, "new", 2, True, "memory", "s2", 7, True,
        "interest", 2 * SECOND, -1)


def test_check_transform():
    assert configchecks.check_transform("a.*.*", "b.$2.{{wildcard(1)}}") is None
    assert configchecks.check_transform("a.>", "b.>") is None
    # as nats-server 2.15 words them (its stream transform errors add a "stream transform: " prefix)
    assert configchecks.check_transform("a.*", "b.>") == "invalid subject"
    assert configchecks.check_transform("a.*", "b..c") == "invalid mapping destination: invalid transform"
    assert configchecks.check_transform("a.*", "b.{{nope(1)}}") == "invalid mapping destination: unknown function in {{nope(1)}}"
    assert configchecks.check_transform("a..b", "c") == "invalid subject"


# ---- property tests ----

limits = st.one_of(st.none(), st.integers(min_value=-3, max_value=10**12))
configs = st.builds(
    StreamConfig,
    name=st.text(alphabet="ABCxyz_-0", min_size=1, max_size=8),
    subjects=st.lists(st.sampled_from(["a", "a.b", "a.*", "b.>", "c.d.e"]), max_size=3),
    retention=st.sampled_from([None, "limits", "interest", "workqueue"]),
    max_msgs=limits, max_bytes=limits, max_msgs_per_subject=limits, max_msg_size=limits,
    max_consumers=limits,
    max_age=st.one_of(st.none(), st.integers(min_value=0, max_value=10**13)),
    duplicate_window=st.integers(min_value=0, max_value=10**12),
    discard=st.sampled_from([None, "old", "new"]),
    storage=st.sampled_from([None, "file", "memory"]),
    allow_msg_ttl=st.sampled_from([None, False, True]),
    subject_delete_marker_ttl=st.sampled_from([0, SECOND, 5 * SECOND]),
    allow_msg_schedules=st.booleans(),
    consumer_limits=st.one_of(st.none(), st.builds(ConsumerLimits,
                                                   max_ack_pending=st.integers(0, 100))),
    subject_transform=st.one_of(st.none(), st.just(SubjectTransform(src="a.*", dest="z.$1"))),
)


@settings(max_examples=300, deadline=None)
@given(configs)
def test_normalize_is_idempotent_and_fills_every_nats_field(cfg):
    once = normalize(cfg)
    assert normalize(once) == once
    encoded = json.loads(sc.encode(once))
    for key in ("name", "retention", "max_consumers", "max_msgs", "max_bytes", "max_age",
                "max_msgs_per_subject", "max_msg_size", "discard", "storage", "num_replicas",
                "compression", "allow_direct", "mirror_direct", "sealed", "deny_delete",
                "deny_purge", "allow_rollup_hdrs", "consumer_limits", "allow_msg_ttl"):
        assert key in encoded
    for key in ("max_msgs", "max_bytes", "max_msgs_per_subject", "max_msg_size", "max_consumers"):
        assert encoded[key] != 0
        given = getattr(cfg, key)
        assert encoded[key] == (given if given and given > 0 else -1)   # negative -> -1
    assert once.subjects == (cfg.subjects or [cfg.name])
    if cfg.duplicate_window == 0:
        max_age = cfg.max_age or 0
        expected = max_age if 0 < max_age < 120 * SECOND else 120 * SECOND
        assert once.duplicate_window == expected
    if cfg.subject_delete_marker_ttl:
        assert once.allow_msg_ttl and once.allow_rollup_hdrs


@settings(max_examples=300, deadline=None)
@given(configs)
def test_json_round_trip_of_any_config(cfg):
    for value in (cfg, normalize(cfg)):
        assert sc.decode(sc.encode(value)) == value


@settings(max_examples=300, deadline=None)
@given(configs)
def test_validate_accepts_or_raises_an_api_error(cfg):
    """validate either passes or raises a generated API error, and a valid config survives
    an update to itself."""
    try:
        validate(cfg)
    except errors.ApiError as error:
        assert error.err_code and error.description
        return
    normalized = normalize(cfg)
    check_update(normalized, cfg)
    if normalized.max_age and cfg.duplicate_window:
        assert cfg.duplicate_window <= normalized.max_age
    assert not (normalized.deny_purge and normalized.allow_rollup_hdrs)


# ---- checks a JSON request can not reach (an embedded caller's values) ----

@pytest.mark.parametrize("field,value,description", [
    ("retention", "bogus", "invalid retention"),
    ("discard", "all", "invalid discard policy"),
    ("compression", "zstd", "invalid compression"),
    ("storage", "disk", "invalid storage type"),
])
def test_policies_outside_nats_values_are_refused_in_nats_order(field, value, description):
    with pytest.raises(errors.JSStreamInvalidConfigF) as caught:
        configchecks.check_config(msgspec.structs.replace(StreamConfig(name="P"), **{field: value}))
    assert caught.value.description == description


def test_check_config_returns_what_nats_server_stores():
    origin = normalize(StreamConfig(name="O", subjects=["o"], allow_direct=True))
    mirror = configchecks.check_config(StreamConfig(name="M", mirror=StreamSource(name="O")),
                                       existing_streams=[origin])
    assert mirror.mirror_direct is True and mirror.subjects == [] and mirror.duplicate_window == 0
    markers = configchecks.check_config(StreamConfig(name="D", subject_delete_marker_ttl=SECOND,
                                                     deny_purge=True))
    assert (markers.allow_msg_ttl, markers.allow_rollup_hdrs, markers.deny_purge) == (True, True, False)
    assert markers == normalize(markers)
    implicit = configchecks.check_config(StreamConfig(
        name="T", subjects=["t"], subject_transform=SubjectTransform(src="t", dest="u"),
        republish=RePublish(src=">", dest=">")))
    assert (implicit.republish.src, implicit.republish.dest) == ("u", "u")


def test_update_consumer_limits_name_the_consumers_sorted():
    class Consumer:
        def __init__(self, inactive_threshold, max_ack_pending):
            self.inactive_threshold, self.max_ack_pending = inactive_threshold, max_ack_pending
    old = normalize(StreamConfig(name="L", subjects=["l"]))
    new = StreamConfig(name="L", subjects=["l"], consumer_limits=ConsumerLimits(max_ack_pending=10))
    consumers = {"Z": Consumer(0, 1000), "A": Consumer(0, 1000), "N": Consumer(0, 0)}
    with pytest.raises(errors.JSStreamUpdateErrF) as caught:
        check_update(old, new, consumers=consumers)
    assert caught.value.description == "change to limits violates consumers: A, Z"
    # limits that did not change, or that are not set, are not checked again
    check_update(normalize(new), new, consumers=consumers)
    check_update(old, StreamConfig(name="L", subjects=["l"], consumer_limits=ConsumerLimits()),
                 consumers=consumers)


def test_embedded_pedantic_create_and_update():
    with jsstore.open() as js:
        with pytest.raises(errors.JSPedanticErrF) as caught:
            js.add_stream(name="P", subjects=["p"], max_age=SECOND, pedantic=True)
        assert caught.value.description == "pedantic mode: duplicate window cannot be bigger than max age"
        js.add_stream(name="P", subjects=["p"], max_age=SECOND, duplicate_window=SECOND,
                      pedantic=True)
        with pytest.raises(errors.JSPedanticErrF):
            js.update_stream(name="P", subjects=["p"], max_age=SECOND, pedantic=True)
        with pytest.raises(errors.JSStreamInvalidConfigF) as caught:
            js.update_stream(name="NOPE", max_age=-1)
        assert caught.value.description == "max age can not be negative"
