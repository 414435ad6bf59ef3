"""Consumer configuration and CONSUMER.CREATE checks (jsstore.consumer.config and
jsstore.consumer.create): unit tests, and a comparison with a real nats-server that sends
the same create requests to both and compares the answers (error objects byte for byte,
the config object of a success with its key order)."""

from __future__ import annotations

import asyncio
import json

import msgspec
import pytest

from jsstore.consumer import checks as consumer_checks
from jsstore.consumer import config as cc
from jsstore.consumer import create as ccreate
from jsstore.gocompat.durations import SECOND
from jsstore.wire import apierrors as api_errors
from jsstore.stream.config import ConsumerLimits, StreamConfig

STREAM = StreamConfig(name="S", subjects=["foo.>", "bar"])
WORKQUEUE = StreamConfig(name="W", subjects=["w.>"], retention="workqueue")
LIMITED = StreamConfig(name="L", subjects=["l.>"], consumer_limits=ConsumerLimits(
    max_ack_pending=50, inactive_threshold=10 * SECOND))


def normalized(stream: StreamConfig = STREAM, **fields) -> cc.ConsumerConfig:
    return cc.normalize(cc.ConsumerConfig(**fields), stream)


def error_of(call, *args, **kwargs) -> api_errors.ApiError:
    with pytest.raises(api_errors.ApiError) as info:
        call(*args, **kwargs)
    return info.value


# -- encoding ------------------------------------------------------------------------------
def test_encode_writes_go_field_order_and_always_written_fields():
    cfg = cc.ConsumerConfig(durable_name="D", ack_policy="explicit", filter_subject="foo.<x>",
                            metadata={"b": "1", "a": "2"}, deliver_subject="d")
    assert cc.encode(cfg) == (
        b'{"durable_name":"D","deliver_policy":"all","ack_policy":"explicit",'
        b'"filter_subject":"foo.\\u003cx\\u003e","replay_policy":"instant",'
        b'"deliver_subject":"d","num_replicas":0,"metadata":{"a":"2","b":"1"}}')


def test_encode_omits_priority_policy_none_and_empty_lists():
    cfg = cc.ConsumerConfig(priority_policy="none", backoff=[], filter_subjects=[])
    assert b"priority" not in cc.encode(cfg)
    assert b"backoff" not in cc.encode(cfg)


def test_wire_config_adds_answer_metadata_sorted_and_keeps_stored_level():
    cfg = cc.with_static_metadata(cc.ConsumerConfig(
        priority_timeout=-1, metadata={"z": "1", "_nats.foo": "x", "_nats.ver": "old"}))
    assert cfg.metadata == {"z": "1", "_nats.foo": "x", "_nats.req.level": "1"}
    wire = cc.wire_config(cc.normalize(cfg, STREAM))
    assert list(wire.metadata.items()) == [
        ("_nats.foo", "x"), ("_nats.level", "5"), ("_nats.req.level", "1"),
        ("_nats.ver", "2.15.1"), ("z", "1")]


@pytest.mark.parametrize("fields, level", [
    ({}, 0), ({"pause_until": "0001-01-01T00:00:00Z"}, 0),
    ({"pause_until": "2099-01-01T00:00:00Z"}, 1), ({"priority_groups": ["g"]}, 1),
    ({"priority_policy": "prioritized"}, 1), ({"ack_policy": "flow_control"}, 4)])
def test_required_api_level(fields, level):
    assert cc.required_api_level(cc.ConsumerConfig(**fields)) == level


def test_to_dict_and_from_dict_round_trip():
    cfg = normalized(durable_name="D", ack_policy="explicit", backoff=[SECOND, 2 * SECOND])
    assert cc.from_dict(cc.to_dict(cfg) | {"Created": "x"}) == cfg


# -- defaults ------------------------------------------------------------------------------
def test_pull_defaults():
    cfg = normalized(ack_policy="explicit")
    assert (cfg.deliver_policy, cfg.replay_policy, cfg.num_replicas) == ("all", "instant", 0)
    assert (cfg.ack_wait, cfg.max_deliver, cfg.max_waiting, cfg.max_ack_pending) == (
        30 * SECOND, -1, 512, 1000)


def test_push_and_ack_none_defaults():
    cfg = normalized(deliver_subject="d")
    assert (cfg.ack_wait, cfg.max_waiting, cfg.max_ack_pending) == (0, 0, 0)


def test_backoff_sets_ack_wait_and_negative_values_are_reset():
    cfg = normalized(backoff=[7, 9], ack_wait=5, max_deliver=-5, max_ack_pending=-9,
                     max_batch=-1, idle_heartbeat=-1, priority_timeout=-1)
    assert (cfg.ack_wait, cfg.max_deliver, cfg.max_ack_pending) == (7, -1, -1)
    assert (cfg.max_batch, cfg.idle_heartbeat, cfg.priority_timeout) == (0, 0, 0)


def test_stream_consumer_limits_and_server_limits_are_defaults():
    cfg = normalized(LIMITED, ack_policy="explicit")
    assert (cfg.max_ack_pending, cfg.inactive_threshold) == (50, 10 * SECOND)
    limits = cc.ServerLimits(max_ack_pending=300, account_max_ack_pending=200,
                             max_request_batch=10)
    cfg = cc.normalize(cc.ConsumerConfig(ack_policy="all"), STREAM, limits=limits)
    assert (cfg.max_ack_pending, cfg.max_batch) == (200, 10)


def test_pinned_client_and_flow_control_defaults():
    assert normalized(priority_policy="pinned_client").priority_timeout == 120 * SECOND
    cfg = normalized(ack_policy="flow_control", deliver_subject="d")
    assert (cfg.flow_control, cfg.idle_heartbeat, cfg.max_ack_pending) == (True, SECOND, 1000)


def test_times_are_written_as_go_writes_them():
    cfg = normalized(opt_start_time="2024-01-01T00:00:00,500+00:00",
                     pause_until="2099-01-01T1:00:00.100000000+05:30")
    assert cfg.opt_start_time == "2024-01-01T00:00:00.5Z"
    assert cfg.pause_until == "2099-01-01T01:00:00.1+05:30"


@pytest.mark.parametrize("fields, text", [
    ({"max_deliver": -5}, "max_deliver must be set to -1"),
    ({"max_waiting": -1}, "max_waiting must not be negative"),
    ({"max_ack_pending": -5}, "max_ack_pending must be set to -1"),
    ({"max_expires": -1}, "max_expires must not be negative"),
    ({"inactive_threshold": -1}, "inactive_threshold must not be negative"),
    ({"ack_policy": "explicit", "backoff": [5]}, "first backoff value has to equal batch AckWait"),
])
def test_pedantic_refuses_to_default(fields, text):
    exc = error_of(cc.normalize, cc.ConsumerConfig(**fields), STREAM, pedantic=True)
    assert isinstance(exc, api_errors.JSPedanticErrF)
    assert exc.description == "pedantic mode: " + text


def test_pedantic_needs_the_stream_limits_set_and_leaves_flow_control_alone():
    exc = error_of(cc.normalize, cc.ConsumerConfig(), LIMITED, pedantic=True)
    assert "max_ack_pending must be set if it's configured" in exc.description
    cfg = cc.normalize(cc.ConsumerConfig(ack_policy="flow_control", deliver_subject="d"),
                       STREAM, pedantic=True)
    assert (cfg.flow_control, cfg.idle_heartbeat) == (False, 0)


# -- checkConsumerCfg ----------------------------------------------------------------------
@pytest.mark.parametrize("fields, error, description", [
    ({"name": "a.b"}, api_errors.JSStreamInvalidConfigF,
     "consumer name can not contain '.', '*', '>', '\\', '/'"),
    ({"durable_name": "a b"}, api_errors.JSStreamInvalidConfigF,
     "consumer durable name can not contain '.', '*', '>', '\\', '/'"),
    ({"num_replicas": -1}, api_errors.JSReplicasCountCannotBeNegative, None),
    ({"num_replicas": 3}, api_errors.JSConsumerReplicasExceedsStream, None),
    ({"backoff": [1, -2]}, api_errors.JSConsumerBackOffNegativeErr, None),
    ({"ack_policy": "explicit", "ack_wait": -1}, api_errors.JSConsumerAckWaitNegativeErr, None),
    ({"ack_policy": "flow_control"}, api_errors.JSConsumerAckFCRequiresPushErr, None),
    ({"ack_policy": "flow_control", "deliver_subject": "d", "max_ack_pending": -1},
     api_errors.JSConsumerAckFCRequiresMaxAckPendingErr, None),
    ({"backoff": [1, 2, 3], "max_deliver": 2}, api_errors.JSConsumerMaxDeliverBackoffErr, None),
    ({"description": "x" * 4097}, api_errors.JSConsumerDescriptionTooLongErrF,
     "consumer description is too long, maximum allowed is 4096"),
    ({"deliver_subject": "d.*"}, api_errors.JSConsumerDeliverToWildcardsErr, None),
    ({"deliver_subject": "d..x"}, api_errors.JSConsumerInvalidDeliverSubject, None),
    ({"deliver_subject": "foo.x"}, api_errors.JSConsumerDeliverCycleErr, None),
    ({"deliver_subject": "d", "max_waiting": 3}, api_errors.JSConsumerPushMaxWaitingErr, None),
    ({"deliver_subject": "d", "max_ack_pending": 3},
     api_errors.JSConsumerMaxPendingAckPolicyRequiredErr, None),
    ({"deliver_subject": "d", "idle_heartbeat": 5}, api_errors.JSConsumerSmallHeartbeatErr, None),
    ({"rate_limit_bps": 1}, api_errors.JSConsumerPullWithRateLimitErr, None),
    ({"idle_heartbeat": SECOND}, api_errors.JSConsumerHBRequiresPushErr, None),
    ({"flow_control": True}, api_errors.JSConsumerFCRequiresPushErr, None),
    ({"max_expires": 5}, api_errors.JSConsumerMaxRequestExpiresTooSmall, None),
    ({"direct": True}, api_errors.JSConsumerDirectRequiresPushErr, None),
    ({"filter_subject": "foo.a", "filter_subjects": ["bar"]},
     api_errors.JSConsumerDuplicateFilterSubjects, None),
    ({"filter_subject": "foo..a"}, api_errors.JSStreamInvalidConfigF, "invalid subject"),
    ({"filter_subjects": ["foo.a", ""]}, api_errors.JSConsumerEmptyFilter, None),
    ({"filter_subjects": ["foo.a", "foo.*"]}, api_errors.JSConsumerOverlappingSubjectFilters,
     None),
    ({"deliver_policy": "new", "opt_start_seq": 4}, api_errors.JSConsumerInvalidPolicyErrF,
     "consumer delivery policy is deliver new, but optional start sequence is also set"),
    ({"deliver_policy": "last_per_subject"}, api_errors.JSConsumerInvalidPolicyErrF,
     "consumer delivery policy is deliver last per subject, but optional filter subject "
     "is not set"),
    ({"deliver_policy": "by_start_sequence"}, api_errors.JSConsumerInvalidPolicyErrF,
     "consumer delivery policy is deliver by start sequence, but optional start sequence "
     "is not set"),
    ({"deliver_policy": "by_start_time", "opt_start_seq": 1,
      "opt_start_time": "2024-01-01T00:00:00Z"}, api_errors.JSConsumerInvalidPolicyErrF,
     "consumer delivery policy is deliver by start time, but optional start start sequence "
     "is also set"),
    ({"sample_freq": "5%%"}, api_errors.JSConsumerInvalidSamplingErrF,
     'failed to parse consumer sampling configuration: strconv.Atoi: parsing "5%": '
     'invalid syntax'),
    ({"sample_freq": "-1"}, api_errors.JSConsumerInvalidSamplingErrF,
     "failed to parse consumer sampling configuration: <nil>"),
    ({"deliver_subject": "d", "flow_control": True},
     api_errors.JSConsumerWithFlowControlNeedsHeartbeats, None),
    ({"durable_name": "a", "name": "b"}, api_errors.JSConsumerCreateDurableAndNameMismatch, None),
    ({"metadata": {"k": "v" * (128 * 1024)}}, api_errors.JSConsumerMetadataLengthErrF,
     "consumer metadata exceeds maximum size of 128KB"),
    ({"priority_policy": "overflow"}, api_errors.JSConsumerPriorityPolicyWithoutGroup, None),
    ({"priority_policy": "overflow", "priority_groups": ["a" * 17]},
     api_errors.JSConsumerInvalidGroupNameErr, None),
    ({"priority_groups": ["g"]}, api_errors.JSConsumerPriorityGroupWithPolicyNone, None),
    ({"priority_timeout": 5}, api_errors.JSConsumerPinnedTTLWithoutPriorityPolicyNone, None),
    ({"ack_policy": "sometimes"}, api_errors.JSConsumerAckPolicyInvalidErr, None),
    ({"deliver_policy": "soon"}, api_errors.JSInvalidJSONErr,
     'invalid JSON: can not unmarshal "\\"soon\\""'),
])
def test_validate_errors(fields, error, description):
    cfg = cc.normalize(cc.ConsumerConfig(**fields), STREAM)
    exc = error_of(consumer_checks.validate, cfg, STREAM)
    assert type(exc) is error
    if description is not None:
        assert exc.description == description


def test_validate_stream_and_server_limits():
    exc = error_of(consumer_checks.validate, normalized(LIMITED, inactive_threshold=11 * SECOND), LIMITED)
    assert exc.description == "consumer inactive threshold exceeds system limit of 10s"
    exc = error_of(consumer_checks.validate, normalized(LIMITED, max_ack_pending=51), LIMITED)
    assert exc.description == "consumer max ack pending exceeds system limit of 50"
    limits = cc.ServerLimits(max_request_batch=10)
    exc = error_of(consumer_checks.validate, normalized(max_batch=11), STREAM, limits=limits)
    assert exc.description == "consumer max request batch exceeds server limit of 10"


def test_validate_workqueue_pull_needs_acks_and_replicas_must_match():
    exc = error_of(consumer_checks.validate, normalized(WORKQUEUE), WORKQUEUE)
    assert isinstance(exc, api_errors.JSConsumerPullRequiresAckErr)
    interest = StreamConfig(name="I", subjects=["i"], retention="interest", num_replicas=3)
    exc = error_of(consumer_checks.validate, normalized(interest, num_replicas=2), interest)
    assert isinstance(exc, api_errors.JSConsumerReplicasShouldMatchStream)
    consumer_checks.validate(normalized(interest, num_replicas=2), interest, recovering=True)


def test_valid_configurations_pass():
    for fields in ({}, {"durable_name": "D", "ack_policy": "explicit", "backoff": [1, 2],
                        "max_deliver": 3, "filter_subjects": ["foo.*.x", "foo.a.*"]},
                   {"deliver_subject": "d", "idle_heartbeat": SECOND, "flow_control": True,
                    "ack_policy": "flow_control"},
                   {"priority_policy": "pinned_client", "priority_groups": ["a-b/c=d_e"]},
                   {"deliver_policy": "by_start_time", "opt_start_time": "2024-01-01T00:00:00Z"},
                   {"sample_freq": "+50%"}):
        consumer_checks.validate(normalized(**fields), STREAM)


# -- beside other consumers ----------------------------------------------------------------
def test_max_consumers_counts_only_limitable_consumers():
    stream = StreamConfig(name="M", subjects=["m"], max_consumers=1)
    direct = normalized(stream, deliver_subject="d", direct=True)
    consumer_checks.check_new_consumer(normalized(stream), stream, [direct])
    exc = error_of(consumer_checks.check_new_consumer, normalized(stream), stream, [normalized(stream)])
    assert isinstance(exc, api_errors.JSMaximumConsumersLimitErr)
    consumer_checks.check_new_consumer(normalized(stream, sourcing=True), stream, [normalized(stream)])
    exc = error_of(consumer_checks.check_new_consumer, normalized(), STREAM, [normalized()],
                   limits=cc.ServerLimits(account_max_consumers=1))
    assert isinstance(exc, api_errors.JSMaximumConsumersLimitErr)


def test_workqueue_rules():
    explicit = dict(ack_policy="explicit")
    first = normalized(WORKQUEUE, filter_subject="w.*.x", **explicit)
    for fields, error in (({"ack_policy": "all"}, api_errors.JSConsumerWQRequiresExplicitAckErr),
                          ({"deliver_policy": "new", **explicit},
                           api_errors.JSConsumerWQConsumerNotDeliverAllErr),
                          (explicit, api_errors.JSConsumerWQMultipleUnfilteredErr),
                          ({"filter_subject": "w.a.*", **explicit},
                           api_errors.JSConsumerWQConsumerNotUniqueErr)):
        exc = error_of(consumer_checks.check_new_consumer, normalized(WORKQUEUE, **fields), WORKQUEUE, [first])
        assert type(exc) is error
    consumer_checks.check_new_consumer(normalized(WORKQUEUE, filter_subject="w.q", **explicit), WORKQUEUE,
                          [first])
    consumer_checks.check_workqueue_update(normalized(WORKQUEUE, **explicit), WORKQUEUE, "B", [first])


def test_durable_name_length():
    consumer_checks.check_new_consumer(normalized(durable_name="d" * 255), STREAM, [])
    exc = error_of(consumer_checks.check_new_consumer, normalized(durable_name="d" * 256), STREAM, [])
    assert exc.description == "consumer name is too long, maximum allowed is 255"


# -- updates -------------------------------------------------------------------------------
def stored(**fields) -> cc.ConsumerConfig:
    return cc.with_ephemeral_threshold(cc.with_static_metadata(normalized(**fields)))


@pytest.mark.parametrize("old, new, text", [
    ({"ack_policy": "explicit"}, {"ack_policy": "all"}, "ack policy can not be updated"),
    ({}, {"deliver_policy": "new"}, "deliver policy can not be updated"),
    ({}, {"mem_storage": True}, "storage type can not be updated"),
    ({"deliver_subject": "d"}, {"deliver_subject": "d", "direct": True},
     "direct can not be updated"),
    ({}, {"sourcing": True}, "sourcing can not be updated"),
    ({"deliver_policy": "by_start_time", "opt_start_time": "2024-01-01T00:00:00Z"},
     {"deliver_policy": "by_start_time", "opt_start_time": "2024-01-01T00:00:01Z"},
     "start time can not be updated"),
    ({}, {"replay_policy": "original"}, "replay policy can not be updated"),
    ({"deliver_subject": "d", "idle_heartbeat": SECOND}, {"deliver_subject": "d"},
     "heart beats can not be updated"),
    ({}, {"deliver_subject": "d"}, "can not update pull consumer to push based"),
    ({"deliver_subject": "d"}, {}, "can not update push consumer to pull based"),
    ({}, {"max_waiting": 7}, "max waiting can not be updated"),
])
def test_check_update_refusals(old, new, text):
    exc = error_of(consumer_checks.check_update, stored(name="C", **old), normalized(name="C", **new))
    assert isinstance(exc, api_errors.JSConsumerCreateErrF)
    assert (exc.code, exc.description) == (500, text)


def test_check_update_allows_the_rest_and_same_start_instant():
    old = stored(name="C", deliver_policy="by_start_time",
                 opt_start_time="2024-01-01T02:00:00+02:00", deliver_subject="d")
    new = normalized(name="C", deliver_policy="by_start_time", description="x",
                     opt_start_time="2024-01-01T00:00:00Z", deliver_subject="e", max_deliver=4)
    consumer_checks.check_update(old, new)
    exc = error_of(consumer_checks.check_update, old, new, deliver_subject_has_interest=True)
    assert isinstance(exc, api_errors.JSConsumerNameExistErr)


def test_same_config_and_apply_update():
    old = stored(durable_name="D", pause_until="2099-01-01T02:00:00+02:00")
    again = cc.normalize(cc.ConsumerConfig(durable_name="D", pause_until=old.pause_until,
                                           metadata={"_nats.req.level": "0"}), STREAM)
    assert consumer_checks.same_config(again, old)
    assert not consumer_checks.same_config(msgspec.structs.replace(again, description="x"), old)
    assert consumer_checks.apply_update(old, again).pause_until == "2099-01-01T00:00:00Z"
    ephemeral = stored(name="N")
    assert not consumer_checks.same_config(normalized(name="N"), ephemeral)   # 5 s stored, 0 asked
    assert consumer_checks.apply_update(ephemeral, normalized(name="N")).inactive_threshold == 5 * SECOND




# -- the request -----------------------------------------------------------------------------
@pytest.mark.parametrize("subject, parts", [
    ("$JS.API.CONSUMER.CREATE.S", ("ephemeral", "S", "", "")),
    ("$JS.API.CONSUMER.CREATE.S.C", ("named", "S", "C", "")),
    ("$JS.API.CONSUMER.CREATE.S.C.foo.*", ("named", "S", "C", "foo.*")),
    ("$JS.API.CONSUMER.DURABLE.CREATE.S.D", ("durable", "S", "D", "")),
    ("$JS.API.CONSUMER.DURABLE.CREATE.S.D.x", None),
    ("$JS.API.CONSUMER.CREATE.*", None),
    ("$JS.API.CONSUMER.INFO.S.C", None),
])
def test_parse_create_subject(subject, parts):
    target = ccreate.parse_create_subject(subject)
    assert (None if target is None else
            (target.form, target.stream, target.consumer, target.filter)) == parts


@pytest.mark.parametrize("body, text", [
    (b"{", "unexpected EOF"),
    (b"[]", "json: cannot unmarshal array into Go value of type server.CreateConsumerRequest"),
    (b"{x", "invalid character 'x' looking for beginning of object key string at offset 2"),
    (b'{"stream_name":"S"} x', "invalid character 'x' looking for beginning of value at offset 21"),
    (b'{"config":{"ack_wait":"1s"}, x}',
     "invalid character 'x' looking for beginning of object key string at offset 30"),
    (b'{"config":{"name":"a\x01"}}', "invalid character '\\x01' in string at offset 21"),
    (b'{"config":{"name":"a\\q"}}', "invalid escape sequence `\\q` in string at offset 22"),
    (b'{"config":{"max_deliver":1.x}}', "invalid character 'x' in numeric literal at offset 28"),
    (b'{"config":{"max_deliver":01}}',
     "invalid character '1' after object key:value pair at offset 27"),
    (b'{"config":{"flow_control":tru}}',
     "invalid character '}' in literal true (expecting 'e') at offset 30"),
    ("\u00ef{}".encode(), "invalid character '\u00ef' looking for beginning of value at offset 2"),
    (b'{"foo":1}', 'json: unknown field "foo"'),
    (b'{"config":{"ack_policy":"bad"}}', 'can not unmarshal "\\"bad\\""'),
    (b'{"config":{"ack_policy":  [ 1, 2 ] }}', 'can not unmarshal "[ 1, 2 ]"'),
    (b'{"config":{"priority_policy":null}}', "unknown priority policy: null"),
    (b'{"action":1}', "unknown consumer action: 1"),
    (b'{"config":{"ack_wait":"1s","opt_start_seq":-1,"ack_policy":"x"}}',
     "json: cannot unmarshal string into Go struct field "
     "CreateConsumerRequest.config.ack_wait of type time.Duration"),
    (b'{"config":{"opt_start_seq":-0}}', "json: cannot unmarshal number -0 into Go struct "
                                         "field CreateConsumerRequest.config.opt_start_seq "
                                         "of type uint64"),
    (b'{"config":{"backoff":["1s"]}}', "json: cannot unmarshal string into "
                                       "CreateConsumerRequest.config.backoff.0 of type "
                                       "time.Duration"),
    (b'{"config":{"metadata":{"a":1}}}', "json: cannot unmarshal number into Go struct field "
                                         "CreateConsumerRequest.config.metadata.a of type "
                                         "string"),
    (b'{"config":{"opt_start_time":true}}', "json: cannot unmarshal bool into Go struct field "
                                            "CreateConsumerRequest.config.opt_start_time of "
                                            "type time.Time"),
    (b'{"config":{"pause_until":"2024-13-01T00:00:00Z"}}',
     'parsing time "2024-13-01T00:00:00Z": month out of range'),
])
def test_decode_request_errors(body, text):
    exc = error_of(ccreate.decode_request, body)
    assert isinstance(exc, api_errors.JSInvalidJSONErr)
    assert exc.description == "invalid JSON: " + text


def test_decode_request_merges_values_and_matches_keys_without_case():
    request = ccreate.decode_request(
        b'{"stream_name":"S","config":{"Durable_Name":"D","metadata":{"a":"b"}}} '
        b'{"config":{"metadata":{"c":null},"backoff":[null,5]},"action":"create"}')
    assert (request.stream_name, request.action) == ("S", "create")
    assert request.config.durable_name == "D"
    assert request.config.metadata == {"a": "b", "c": ""}
    assert request.config.backoff == [0, 5]
    assert ccreate.decode_request(b"  ") == ccreate.CreateConsumerRequest()


def test_decode_config_ignores_unknown_keys():
    cfg = cc.decode(b'{"durable_name":"D","Created":"x","ack_policy":"all"}')
    assert (cfg.durable_name, cfg.ack_policy) == ("D", "all")


def test_plan_names_and_existing_consumers():
    plan = ccreate.plan_create("$JS.API.CONSUMER.CREATE.S", b'{"stream_name":"S"}',
                               stream=STREAM, consumers={})
    assert (plan.name, plan.exists, plan.config.inactive_threshold) == ("", False, 5 * SECOND)
    body = b'{"stream_name":"S","config":{"durable_name":"D"},"action":"update"}'
    exc = error_of(ccreate.plan_create, "$JS.API.CONSUMER.CREATE.S.D", body, stream=STREAM,
                   consumers={})
    assert isinstance(exc, api_errors.JSConsumerDoesNotExist)
    exc = error_of(ccreate.plan_create, "$JS.API.CONSUMER.CREATE.S.D", body, stream=None,
                   consumers={})
    assert isinstance(exc, api_errors.JSStreamNotFoundErr)
    existing = {"D": stored(durable_name="D", name="D", pause_until="2099-01-01T00:00:00Z")}
    plan = ccreate.plan_create("$JS.API.CONSUMER.CREATE.S.D", body, stream=STREAM,
                               consumers=existing)
    assert plan.exists and plan.config.pause_until == "2099-01-01T00:00:00Z"


def test_subject_checks_name_the_config():
    request = ccreate.parse_create_request(b'{"stream_name":"S","config":{"name":"Y"}}')
    assert ccreate.check_create_subject("S", "X", "", request).config.name == "X"
    request = ccreate.parse_create_request(b'{"stream_name":"S","config":{"durable_name":"D"}}')
    assert ccreate.check_durable_subject("S", "D", request).config.name == "D"
    request = ccreate.parse_create_request(b'{"stream_name":"S","config":{"durable_name":"D"}}')
    exc = error_of(ccreate.check_create_subject, "S", "", "", request)
    assert isinstance(exc, api_errors.JSConsumerEphemeralWithDurableNameErr)
    request = ccreate.parse_create_request(b'{"stream_name":"S","config":{"num_replicas":3}}')
    exc = error_of(ccreate.check_create_subject, "S", "X", "", request)
    assert isinstance(exc, api_errors.JSStreamReplicasNotSupportedErr)


def test_create_error_response_shape():
    assert ccreate.create_error_response(api_errors.JSConsumerDoesNotExist()) == (
        b'{"type":"io.nats.jetstream.api.v1.consumer_create_response","error":'
        b'{"code":400,"err_code":10149,"description":"consumer does not exist"}}')
    assert ccreate.store_failed_error().to_dict() == {
        "code": 500, "err_code": 10012, "description": "error creating store for consumer"}


# -- against a real nats-server --------------------------------------------------------------
CREATE = "$JS.API.CONSUMER.CREATE."
DURABLE = "$JS.API.CONSUMER.DURABLE.CREATE."
SEC = 1_000_000_000

STREAMS = [
    {"name": "S", "subjects": ["foo.>", "bar"]},
    {"name": "L", "subjects": ["l.>"],
     "consumer_limits": {"max_ack_pending": 50, "inactive_threshold": 10 * SEC}},
    {"name": "W", "subjects": ["w.>"], "retention": "workqueue"},
    {"name": "M", "subjects": ["m.>"], "max_consumers": 1},
    {"name": "I", "subjects": ["i.>"], "retention": "interest"},
    {"name": "V", "subjects": ["v.>"], "retention": "workqueue"},
]


def req(stream: str = "S", config: dict | None = None, **extra) -> dict:
    return {"stream_name": stream, "config": config or {}, **extra}


# (subject, body): a dict is sent as compact JSON, bytes as they are.  The steps run in
# order on one server, so later steps see the consumers earlier ones made.
STEPS: list[tuple[str, object]] = [
    # defaults of every kind
    (CREATE + "S", req()),
    (CREATE + "S", req(config={"name": "N1"})),
    (CREATE + "S.C1", req(config={"durable_name": "C1", "ack_policy": "explicit"})),
    (CREATE + "S.C2", req(config={"deliver_subject": "dx"})),
    (CREATE + "S.C3", req(config={"priority_policy": "pinned_client", "priority_groups": ["g"]})),
    (CREATE + "S.C4", req(config={"ack_policy": "flow_control", "deliver_subject": "dy"})),
    (CREATE + "S.C5", req(config={"priority_policy": "prioritized", "priority_groups": ["g"]})),
    (CREATE + "S.C6", req(config={"pause_until": "2099-01-01T02:00:00+02:00"})),
    (CREATE + "S.C7", req(config={"backoff": [SEC, 2 * SEC], "max_deliver": 5})),
    (CREATE + "S.C8", req(config={"ack_policy": "all"})),
    (CREATE + "S.C9", req(config={"ack_policy": "explicit", "backoff": [1000, 2000],
                                  "ack_wait": 5})),
    (CREATE + "S.C10", req(config={"max_deliver": -5, "max_waiting": -3, "max_ack_pending": -7,
                                   "max_batch": -1, "max_expires": -1, "max_bytes": -1,
                                   "inactive_threshold": -1, "priority_timeout": -1})),
    (CREATE + "S.C11", req(config={"deliver_policy": "undefined", "replay_policy": "original",
                                   "filter_subjects": ["foo.a", "foo.b"]})),
    (CREATE + "S.C12", req(config={"deliver_policy": "by_start_time",
                                   "opt_start_time": "2024-01-01T00:00:00,500000+00:00"})),
    (CREATE + "S.C13", req(config={"deliver_policy": "by_start_time",
                                   "opt_start_time": "2024-01-01T1:00:00.1234567891-05:30"})),
    (CREATE + "S.C14", req(config={"metadata": {"b": "1", "a": "<&>", "_nats.foo": "x"},
                                   "description": "a<b>&\u2028"})),
    (CREATE + "S.C15", req(config={"deliver_subject": "z", "deliver_group": "g",
                                   "headers_only": True, "rate_limit_bps": 2 ** 64 - 1,
                                   "sample_freq": "+5%", "mem_storage": True,
                                   "idle_heartbeat": SEC, "num_replicas": 1})),
    (CREATE + "S.C16", req(config={"max_batch": 5, "max_bytes": 100, "max_expires": 5_000_000,
                                   "inactive_threshold": 90061000000001})),
    (CREATE + "S.C17.foo.*", req(config={"filter_subject": "foo.*"})),
    (CREATE + "S.C18", req(config={"deliver_subject": "dd", "direct": True})),
    (CREATE + "S.C19", req(config={"sourcing": True})),
    (CREATE + "S.C20", req(config={"filter_subject": "baz.>", "filter_subjects": [],
                                   "backoff": [], "metadata": {}})),
    (CREATE + "S.C21", req(config={"priority_policy": "none", "priority_groups": [],
                                   "pause_until": "0001-01-01T00:00:00Z"})),
    (CREATE + "S.C22", req(config={"ack_policy": "flow_control", "deliver_subject": "q",
                                   "flow_control": True, "idle_heartbeat": SEC},
                           pedantic=True)),
    (CREATE + "S.C23", req(config={"filter_subjects": ["foo.z"]})),
    (CREATE + "S.C24", req(config={"deliver_group": "g", "headers_only": True, "max_batch": 2})),
    (CREATE + "S.C25", req(config={"deliver_subject": "x25", "max_batch": 5, "max_bytes": 7,
                                   "max_expires": 1})),
    (CREATE + "S." + "d" * 255, req(config={"durable_name": "d" * 255})),
    (DURABLE + "S.D1", req(config={"durable_name": "D1", "name": "Q"})),
    (CREATE + "S.X16", req(config={"DURABLE_NAME": "X16"})),
    (CREATE + "S.X18", req(config=None) | {"config": None}),
    (CREATE + "S.J48", b'{"stream_name":"S","config":{"metadata":{"a":null},"backoff":[null,5]}}'),
    (CREATE + "S.J58", b'{"stream_name":"S","config":{"metadata":{"a":"b"},"metadata":{"c":"d"},'
                       b'"opt_start_time":"2024-01-01T00:00:00Z","opt_start_time":null}}'),
    (CREATE + "S.A3", b'{"stream_name":"S"} {"config":{"description":"two"}}'),
    (CREATE + "S.L1", b'  {"stream_name":"S","config":{"name":"ignored"}}  '),
    (CREATE + "L.U49", req("L")),
    (CREATE + "L.U50", req("L", {"ack_policy": "explicit", "durable_name": "U50"})),
    (CREATE + "L.U53", req("L", {"max_ack_pending": -1})),
    (CREATE + "I.I1", req("I", {"ack_policy": "explicit", "num_replicas": 1})),
    # invalid JSON
    (CREATE + "S", b""),
    (CREATE + "S", b"   "),
    (CREATE + "S", b"null"),
    (CREATE + "S", b"{"),
    (CREATE + "S", b"[]"),
    (CREATE + "S", b"123x"),
    (CREATE + "S", b'"abc"x'),
    (CREATE + "S", b"{}[]"),
    (CREATE + "S", b"nullx"),
    (CREATE + "S", b"+1"),
    (CREATE + "S.J", b"{x"),
    (CREATE + "S.J", b'{"stream_name":"S"} x'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"ack_wait":"1s"}, x}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"durable_name":"a\x01"}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"durable_name":"a\\q"}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"durable_name":"a\\u12g4"}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"durable_name":"a\\u12'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"max_deliver":-x}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"max_deliver":1.x}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"backoff":[1e+}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"max_deliver":01}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"flow_control":tru}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"flow_control":nul}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config" {}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{} "a":1}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"backoff":[1 2]}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"backoff":[1,]}}'),
    (CREATE + "S.J", b'{"stream_name":"S",}'),
    (CREATE + "S.J", "\u00ef{}".encode()),
    (CREATE + "S.J", req(foo=1)),
    (CREATE + "S.J", req(config={"DurableName": "J"})),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"foo\\u0001":1}}'),
    (CREATE + "S.J", req(config={"ack_policy": "bad"})),
    (CREATE + "S.J", req(config={"ack_policy": None})),
    (CREATE + "S.J", req(config={"deliver_policy": "bad"})),
    (CREATE + "S.J", req(config={"replay_policy": "bad"})),
    (CREATE + "S.J", req(config={"priority_policy": "bad"})),
    (CREATE + "S.J", req(action="bad")),
    (CREATE + "S.J", req(action=None)),
    (CREATE + "S.J", req(action=1)),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"ack_policy":"expl\\u0069cit"}}'),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"ack_policy":  [ 1, 2 ] }}'),
    (CREATE + "S.J", req(config={"ack_wait": "1s"})),
    (CREATE + "S.J", req(config={"ack_wait": 1.5})),
    (CREATE + "S.J", req(config={"max_deliver": 99999999999999999999})),
    (CREATE + "S.J", req(config={"opt_start_seq": -1})),
    (CREATE + "S.J", b'{"stream_name":"S","config":{"opt_start_seq":-0}}'),
    (CREATE + "S.J", req(config={"opt_start_seq": -1, "ack_policy": "x"})),
    (CREATE + "S.J", req(config={"ack_policy": "x", "ack_wait": "1s"})),
    (CREATE + "S.J", req(config={"metadata": {"a": 1}})),
    (CREATE + "S.J", req(config={"metadata": []})),
    (CREATE + "S.J", req(config={"backoff": ["1s"]})),
    (CREATE + "S.J", req(config={"backoff": {}})),
    (CREATE + "S.J", req(config={"filter_subjects": "foo.a"})),
    (CREATE + "S.J", req(config={"priority_groups": [1]})),
    (CREATE + "S.J", req(config={"flow_control": 1})),
    (CREATE + "S.J", req(config={"durable_name": True})),
    (CREATE + "S.J", {"stream_name": 1, "config": {}}),
    (CREATE + "S.J", req(config=[]) | {"config": []}),
    (CREATE + "S.J", req(pedantic="yes")),
    (CREATE + "S.J", req(config={"opt_start_time": 1})),
    (CREATE + "S.J", req(config={"pause_until": []})),
    (CREATE + "S.J", req(config={"opt_start_time": "bad"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-13-01T00:00:00Z"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-02-30T00:00:00Z"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01 00:00:00Z"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01T24:00:00Z"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01T00:00:60Z"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01T00:00:00Zjunk"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01T00:00:00+25:00"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01T00:00:00.Z"})),
    (CREATE + "S.J", req(config={"opt_start_time": "2024-01-01T00:00:00+0100"})),
    (CREATE + "S.J", req(config={"pause_until": "\u00e9"})),
    # the subject forms
    (CREATE + "S", req("T")),
    (CREATE + "T", req("T")),
    (CREATE + "S", req(config={"durable_name": "D"})),
    (CREATE + "S", req(config={"name": "a.b"})),
    (CREATE + "S", req(config={"name": "a b"})),
    (CREATE + "S", req(config={"name": "a/b", "durable_name": "x"})),
    (CREATE + "S.X", req(config={"durable_name": "D"})),
    (CREATE + "S.X", req("T", {"num_replicas": 3})),
    (CREATE + "S.a/b", req()),
    (CREATE + "S.a\\b", req("T")),
    (CREATE + "S.a\\b", req()),
    (CREATE + "S.F1.foo.x", req()),
    (CREATE + "S.F3.foo.x", req(config={"filter_subjects": ["foo.x"]})),
    (CREATE + "S.F6.foo.y", req(config={"filter_subject": "foo.x"})),
    (CREATE + "S.F7.foo.y", req(config={"filter_subject": "foo.x", "num_replicas": 3})),
    (DURABLE + "S.D2", req()),
    (DURABLE + "S.D2", req(config={"durable_name": "D3"})),
    (DURABLE + "S.D2", req("T", {"durable_name": "D2"})),
    (DURABLE + "S.a/b", req(config={"durable_name": "a/b"})),
    (DURABLE + "S.D4.x", req(config={"durable_name": "D4"})),
    (CREATE + "S.R3", req(config={"num_replicas": 3, "deliver_policy": "by_start_sequence"})),
    (CREATE + "T.R3", req("T", {"num_replicas": 3})),
    (CREATE + "S.R4", req(config={"num_replicas": -1})),
    (CREATE + "S." + "e" * 256, req(config={"durable_name": "e" * 256})),
    # checkConsumerCfg
    (CREATE + "S.U", req(config={"deliver_policy": "last_per_subject"})),
    (CREATE + "S.U", req(config={"deliver_policy": "new", "opt_start_seq": 5})),
    (CREATE + "S.U", req(config={"deliver_policy": "last",
                                 "opt_start_time": "2024-01-01T00:00:00Z"})),
    (CREATE + "S.U", req(config={"deliver_policy": "by_start_sequence"})),
    (CREATE + "S.U", req(config={"deliver_policy": "by_start_time"})),
    (CREATE + "S.U", req(config={"deliver_policy": "by_start_time", "opt_start_seq": 5,
                                 "opt_start_time": "2024-01-01T00:00:00Z"})),
    (CREATE + "S.U", req(config={"filter_subjects": ["foo.a", "foo.*"]})),
    (CREATE + "S.U", req(config={"filter_subjects": ["foo.a", ""]})),
    (CREATE + "S.U", req(config={"filter_subject": "foo..a"})),
    (CREATE + "S.U", req(config={"filter_subject": "foo.a", "filter_subjects": ["foo.b"]})),
    (CREATE + "S.U", req(config={"deliver_subject": "foo.x"})),
    (CREATE + "S.U", req(config={"deliver_subject": "bar"})),
    (CREATE + "S.U", req(config={"deliver_subject": "d.*"})),
    (CREATE + "S.U", req(config={"deliver_subject": "d..x"})),
    (CREATE + "S.U", req(config={"deliver_subject": "dd", "max_waiting": 5})),
    (CREATE + "S.U", req(config={"deliver_subject": "dd", "idle_heartbeat": 5_000_000})),
    (CREATE + "S.U", req(config={"deliver_subject": "dd", "max_ack_pending": 5})),
    (CREATE + "S.U", req(config={"deliver_subject": "dd", "flow_control": True})),
    (CREATE + "S.U", req(config={"rate_limit_bps": 5})),
    (CREATE + "S.U", req(config={"idle_heartbeat": 5 * SEC})),
    (CREATE + "S.U", req(config={"flow_control": True})),
    (CREATE + "S.U", req(config={"max_expires": 500})),
    (CREATE + "S.U", req(config={"sample_freq": "abc"})),
    (CREATE + "S.U", req(config={"sample_freq": "-5%"})),
    (CREATE + "S.U", req(config={"sample_freq": "%"})),
    (CREATE + "S.U", req(config={"sample_freq": "99999999999999999999%"})),
    (CREATE + "S.U", req(config={"priority_policy": "overflow"})),
    (CREATE + "S.U", req(config={"priority_policy": "overflow", "priority_groups": [""]})),
    (CREATE + "S.U", req(config={"priority_policy": "overflow",
                                 "priority_groups": ["this-is-too-long-x"]})),
    (CREATE + "S.U", req(config={"priority_groups": ["g"]})),
    (CREATE + "S.U", req(config={"priority_timeout": 5})),
    (CREATE + "S.U", req(config={"priority_policy": "overflow", "priority_groups": ["g"],
                                 "deliver_subject": "dd"})),
    (CREATE + "S.U", req(config={"backoff": [1, 2, 3], "max_deliver": 2})),
    (CREATE + "S.U", req(config={"backoff": [1, -2]})),
    (CREATE + "S.U", req(config={"ack_policy": "explicit", "ack_wait": -1})),
    (CREATE + "S.U", req(config={"direct": True})),
    (CREATE + "S.U", req(config={"durable_name": "U", "direct": True, "deliver_subject": "dd"})),
    (CREATE + "S.U", req(config={"ack_policy": "flow_control"})),
    (CREATE + "S.U", req(config={"ack_policy": "flow_control", "deliver_subject": "dd",
                                 "max_ack_pending": -1})),
    (CREATE + "S.U", req(config={"ack_policy": "flow_control", "deliver_subject": "q",
                                 "idle_heartbeat": 5 * SEC, "ack_wait": 7, "max_deliver": 4})),
    (CREATE + "S.U", req(config={"ack_policy": "flow_control", "deliver_subject": "dd"},
                         pedantic=True)),
    (CREATE + "S.U", req(config={"ack_policy": "flow_control", "deliver_subject": "dd",
                                 "flow_control": True}, pedantic=True)),
    (CREATE + "S.U", req(config={"ack_policy": "flow_control", "deliver_subject": "dd",
                                 "flow_control": True, "idle_heartbeat": SEC,
                                 "max_ack_pending": 10, "max_deliver": 3}, pedantic=True)),
    (CREATE + "S.U", req(config={"description": "x" * 4097})),
    (CREATE + "S.U", req(config={"metadata": {"k": "v" * (128 * 1024)}})),
    (CREATE + "L.U", req("L", {"max_ack_pending": 60})),
    (CREATE + "L.U", req("L", {"inactive_threshold": 20 * SEC})),
    # pedantic
    (CREATE + "S.P", req(config={"ack_policy": "explicit", "backoff": [1000], "ack_wait": 5},
                         pedantic=True)),
    (CREATE + "S.P", req(config={"max_deliver": -5}, pedantic=True)),
    (CREATE + "S.P", req(config={"max_waiting": -5}, pedantic=True)),
    (CREATE + "S.P", req(config={"max_ack_pending": -5}, pedantic=True)),
    (CREATE + "S.P", req(config={"max_batch": -1}, pedantic=True)),
    (CREATE + "S.P", req(config={"max_bytes": -1}, pedantic=True)),
    (CREATE + "S.P", req(config={"idle_heartbeat": -1}, pedantic=True)),
    (CREATE + "S.P", req(config={"priority_timeout": -5}, pedantic=True)),
    (CREATE + "L.P", req("L", pedantic=True)),
    (CREATE + "L.P", req("L", {"max_ack_pending": 20}, pedantic=True)),
    (CREATE + "S.P", req(config={"ack_policy": "explicit", "backoff": [1000],
                                 "ack_wait": 1000}, pedantic=True)),
    # work queues and the stream's maximum
    (CREATE + "W.W1", req("W")),
    (CREATE + "W.W2", req("W", {"ack_policy": "all"})),
    (CREATE + "W.W3", req("W", {"ack_policy": "explicit", "deliver_policy": "new"})),
    (CREATE + "W.W4", req("W", {"ack_policy": "all", "deliver_subject": "ww"})),
    (CREATE + "W.A", req("W", {"durable_name": "A", "ack_policy": "explicit",
                               "filter_subject": "w.*.x"})),
    (CREATE + "W.B", req("W", {"durable_name": "B", "ack_policy": "explicit",
                               "filter_subject": "w.a.*"})),
    (CREATE + "W.B", req("W", {"durable_name": "B", "ack_policy": "explicit",
                               "filter_subject": "w.q"})),
    (CREATE + "W.B", req("W", {"durable_name": "B", "ack_policy": "explicit",
                               "filter_subject": "w.q.x"})),
    (CREATE + "W.C", req("W", {"durable_name": "C", "ack_policy": "explicit"})),
    (CREATE + "W.C", req("W", {"durable_name": "C", "ack_policy": "explicit",
                               "filter_subjects": ["w.c", "w.d"]})),
    (CREATE + "W.B", req("W", {"durable_name": "B", "ack_policy": "explicit"})),
    (CREATE + "W.E", req("W", {"durable_name": "E", "ack_policy": "explicit",
                               "filter_subject": "w.e"})),
    (CREATE + "W.G", req("W", {"ack_policy": "flow_control", "deliver_subject": "gg",
                               "filter_subject": "w.g"})),
    (CREATE + "V.S1", req("V", {"sourcing": True, "ack_policy": "explicit"})),
    (CREATE + "V.A", req("V", {"ack_policy": "explicit", "filter_subject": "v.a"})),
    (CREATE + "V.B", req("V", {"ack_policy": "explicit", "filter_subject": "v.b"})),
    (CREATE + "V.D1", req("V", {"direct": True, "deliver_subject": "vd",
                                "ack_policy": "explicit"})),
    (CREATE + "V.A", req("V", {"ack_policy": "explicit", "filter_subject": "v.a2"})),
    (CREATE + "V.A", req("V", {"ack_policy": "explicit", "filter_subject": "v.*"})),
    (CREATE + "M.M1", req("M")),
    (CREATE + "M.M2", req("M")),
    (CREATE + "M.M2", req("M", {"ack_policy": "bad"})),
    (CREATE + "M.M3", req("M", {"sourcing": True})),
    (CREATE + "M.M4", req("M", {"direct": True, "deliver_subject": "mm"})),
    (CREATE + "M.M1", req("M", {"description": "up"})),
    # actions and updates
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "pause_until": "2099-01-01T02:00:00+02:00"})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "pause_until": "2099-01-01T02:00:00+02:00"}, action="create")),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit"},
                         action="create")),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "description": "x"}, action="create")),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "metadata": {"_nats.req.level": "0"}}, action="create")),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "description": "upd", "pause_until": "2098-01-01T00:00:00Z"},
                         action="update")),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "all"}, action="update")),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "deliver_policy": "new"})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "deliver_subject": "dd"})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "max_waiting": 7})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "mem_storage": True})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "replay_policy": "original"})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "sourcing": True})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "filter_subject": "foo.x", "max_deliver": 5,
                                 "ack_wait": 7 * SEC, "max_ack_pending": 3})),
    (CREATE + "S.D", req(config={"durable_name": "D", "ack_policy": "explicit",
                                 "backoff": [1, 2, 3], "max_deliver": 2}, action="update")),
    (CREATE + "S.E", req(config={"durable_name": "E"}, action="update")),
    (CREATE + "S.E", req(config={"durable_name": "E", "deliver_policy": "new",
                                 "opt_start_seq": 4}, action="update")),
    (CREATE + "S.N", req(config={"name": "N"})),
    (CREATE + "S.N", req(config={"name": "N"}, action="create")),
    (CREATE + "S.N", req(config={"name": "N", "inactive_threshold": 5 * SEC}, action="create")),
    (CREATE + "S.N", req(config={"name": "N", "description": "d2"})),
    (CREATE + "S.N", req(config={"name": "N", "inactive_threshold": 7 * SEC})),
    (CREATE + "S.P1", req(config={"deliver_subject": "pp", "idle_heartbeat": SEC})),
    (CREATE + "S.P1", req(config={"deliver_subject": "pp2", "idle_heartbeat": SEC})),
    (CREATE + "S.P1", req(config={"deliver_subject": "pp2", "idle_heartbeat": 2 * SEC})),
    (CREATE + "S.P1", req()),
    (CREATE + "S.P1", req(config={"deliver_subject": "pp2", "idle_heartbeat": SEC,
                                  "flow_control": True})),
    (CREATE + "S.P1", req(config={"deliver_subject": "pp2", "idle_heartbeat": SEC,
                                  "direct": True})),
    (CREATE + "S.P1", req(config={"deliver_subject": "pp2", "idle_heartbeat": SEC,
                                  "deliver_policy": "by_start_time",
                                  "opt_start_time": "2020-01-01T00:00:00Z"})),
    (CREATE + "S.T1", req(config={"deliver_policy": "by_start_time",
                                  "opt_start_time": "2020-01-01T02:00:00+02:00"})),
    (CREATE + "S.T1", req(config={"deliver_policy": "by_start_time",
                                  "opt_start_time": "2020-01-01T00:00:00Z",
                                  "description": "same instant"})),
    (CREATE + "S.T1", req(config={"deliver_policy": "by_start_time",
                                  "opt_start_time": "2020-01-01T00:00:01Z"})),
    (CREATE + "S", req(config={"name": "L2", "pause_until": "2099-01-01T00:00:00Z"})),
    (CREATE + "S", req(config={"name": "L2", "description": "upd"})),
]


def _ordered(data: bytes):
    """JSON with its objects as lists of (key, value) pairs, so that key order counts."""
    return json.loads(data, object_pairs_hook=list)


def _body(payload: object) -> bytes:
    if isinstance(payload, bytes):
        return payload
    return json.dumps(payload, separators=(",", ":")).encode()


LIMITS_CONFIG = """
jetstream { limits { max_ack_pending: 100, max_request_batch: 10 } }
accounts { A {
    jetstream { max_ack_pending: 20, max_consumers: 2 }
    users: [{user: a, password: a}]
} }
"""
LIMITS = cc.ServerLimits(max_ack_pending=100, max_request_batch=10, account_max_ack_pending=20,
                         account_max_consumers=2)
LIMITS_STREAMS = [{"name": "S", "subjects": ["s.>"]},
                  {"name": "B", "subjects": ["b.>"], "max_consumers": 1}]
LIMITS_STEPS: list[tuple[str, object]] = [
    (CREATE + "S.A", req(config={"ack_policy": "explicit"})),
    (CREATE + "S.B", req(config={"max_batch": 11})),
    (CREATE + "S.B", req(config={"max_ack_pending": 21})),
    (CREATE + "S.B", req(config={"max_ack_pending": 101})),
    (CREATE + "S.B", req(pedantic=True)),
    (CREATE + "S.B", req(config={"deliver_subject": "x", "ack_policy": "all"})),
    (CREATE + "S.C", req(config={"max_batch": 3}, pedantic=True)),
    (CREATE + "S.C", req(config={"sourcing": True})),
    (CREATE + "B.A", req("B", {"max_batch": 10})),
    (CREATE + "B.B", req("B")),
    (CREATE + "B.C", req("B")),
]


async def _run_server_side(url: str, streams: list[dict], steps: list,
                           **options) -> list[tuple[object, bytes | None]]:
    """The raw answers of nats-server: the stream creations, then every step's (None when
    nothing answers)."""
    nats = pytest.importorskip("nats")
    nc = await nats.connect(url, **options)
    answers = []
    try:
        for stream in streams:
            msg = await nc.request(f"$JS.API.STREAM.CREATE.{stream['name']}", _body(stream),
                                   timeout=2)
            answers.append((stream, msg.data))
        for subject, payload in steps:
            try:
                msg = await nc.request(subject, _body(payload), timeout=1)
                answers.append(((subject, payload), msg.data))
            except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
                answers.append(((subject, payload), None))
    finally:
        await nc.close()
    return answers


def _differences(answers: list, stream_count: int,
                 limits: cc.ServerLimits = cc.NO_LIMITS) -> list[str]:
    """Run every step through plan_create against the stream configurations nats-server
    answered and the consumers it made so far, and describe each answer that differs."""
    streams: dict[str, StreamConfig] = {}
    consumers: dict[str, dict[str, cc.ConsumerConfig]] = {}
    for stream, data in answers[:stream_count]:
        streams[stream["name"]] = msgspec.convert(json.loads(data)["config"], StreamConfig)
        consumers[stream["name"]] = {}
    mismatches = []
    for number, ((subject, payload), real) in enumerate(answers[stream_count:], 1):
        target = ccreate.parse_create_subject(subject)
        stream_name = target.stream if target is not None else ""
        label = f"step {number}: {subject} {_body(payload)[:200]!r}"
        try:
            plan = ccreate.plan_create(subject, _body(payload), stream=streams.get(stream_name),
                                       consumers=consumers.get(stream_name, {}), limits=limits)
        except api_errors.ApiError as exc:
            mine = ccreate.create_error_response(exc)
            if real != mine:
                mismatches.append(f"{label}\n  nats-server: {real!r}\n  jsstore:     {mine!r}")
            continue
        if plan is None or real is None:
            if not (plan is None and real is None):
                mismatches.append(f"{label}\n  nats-server: {real!r}\n  jsstore: {plan!r}")
            continue
        answer = json.loads(real)
        if "error" in answer:
            mismatches.append(f"{label}\n  nats-server: {real!r}\n  jsstore: success")
            continue
        mine = cc.encode(cc.wire_config(plan.config))
        theirs = json.dumps(answer["config"], separators=(",", ":")).encode()
        if _ordered(mine) != _ordered(theirs) or (plan.name and plan.name != answer["name"]):
            mismatches.append(f"{label}\n  nats-server: {answer['name']} {theirs!r}\n"
                              f"  jsstore:     {plan.name} {mine!r}")
        # keep what the server stored, so that later steps start from the same state
        consumers[stream_name][answer["name"]] = cc.decode(theirs)
    return mismatches


def test_differential_steps_cover_enough():
    assert len(STEPS) + len(LIMITS_STEPS) >= 60


@pytest.mark.natsserver
def test_create_requests_match_nats_server(tmp_path):
    natsserver = pytest.importorskip("natsserver")
    natsserver.require_nats_server()
    with natsserver.nats_server(tmp_path / "nats") as server:
        answers = asyncio.run(_run_server_side(server.url, STREAMS, STEPS))
    mismatches = _differences(answers, len(STREAMS))
    assert not mismatches, "answers differ:\n" + "\n".join(mismatches)


@pytest.mark.natsserver
def test_create_requests_match_nats_server_with_server_and_account_limits(tmp_path):
    natsserver = pytest.importorskip("natsserver")
    natsserver.require_nats_server()
    config = tmp_path / "limits.conf"
    config.write_text(LIMITS_CONFIG)
    with natsserver.nats_server(tmp_path / "nats", ["-c", str(config)]) as server:
        answers = asyncio.run(_run_server_side(server.url, LIMITS_STREAMS, LIMITS_STEPS,
                                               user="a", password="a"))
    mismatches = _differences(answers, len(LIMITS_STREAMS), LIMITS)
    assert not mismatches, "answers differ:\n" + "\n".join(mismatches)
