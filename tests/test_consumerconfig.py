"""Consumer configuration and CONSUMER.CREATE checks (jsstore.consumer.config, checks and
create): unit tests. The same rules against a real nats-server are
test_consumercreate_differential.py."""

from __future__ import annotations

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
    ("$JS.API.CONSUMER.CREATE.*", ("ephemeral", "*", "", "")),   # a literal "*" name
    ("$JS.API.CONSUMER.CREATE.S.", None),
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
