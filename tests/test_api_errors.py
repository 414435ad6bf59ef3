"""JetStream API errors: the data file, the generated classes and the generator.

REFERENCE_LINES is nats-server's error table in its one-line form (constant, HTTP-like code,
err_code, description as a quoted literal), kept here as the independent oracle that the data
file errors.json and the classes generated from it are checked against.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import pickle
from pathlib import Path

import pytest

import jsstore.api
from jsstore.wire import apierrors as api_errors
from jsstore.wire.apierrors import (ERRORS_BY_CODE, ApiError, JSClusterNoPeersErrF,
                                    JSConsumerBadDurableNameErr, JSInvalidJSONErr,
                                    JSRestoreSubscribeFailedErrF, JSStreamCreateErrF,
                                    JSStreamExternalDelPrefixOverlapsErrF, JSStreamNotFoundErr,
                                    JSStreamWrongLastMsgIDErrF, JSStreamWrongLastSequenceErrF)

REPO_ROOT = Path(__file__).resolve().parent.parent
GENERATOR_PATH = REPO_ROOT / "tools" / "gen_api_errors.py"
DATA_PATH = REPO_ROOT / "src" / "jsstore" / "wire" / "apierrors.json"
GENERATED_PATH = REPO_ROOT / "src" / "jsstore" / "wire" / "apierrors.py"

REFERENCE_LINES = """\
JSClusterPeerNotMemberErr 400 10040 'peer not a member'
JSConsumerEphemeralWithDurableInSubjectErr 400 10019 'consumer expected to be ephemeral but detected a durable name set in subject'
JSStreamExternalDelPrefixOverlapsErrF 400 10022 'stream external delivery prefix {prefix} overlaps with stream subject {subject}'
JSAccountResourcesExceededErr 400 10002 'resource limits exceeded for account'
JSClusterNotAvailErr 503 10008 'JetStream system temporarily unavailable'
JSStreamSubjectOverlapErr 400 10065 'subjects overlap with an existing stream'
JSStreamWrongLastSequenceErrF 400 10071 'wrong last sequence: {seq}'
JSTemplateNameNotMatchSubjectErr 400 10073 'template name in subject does not match request'
JSClusterNoPeersErrF 400 10005 '{err}'
JSConsumerEphemeralWithDurableNameErr 400 10020 'consumer expected to be ephemeral but a durable name was set in request'
JSInsufficientResourcesErr 503 10023 'insufficient resources'
JSMirrorMaxMessageSizeTooBigErr 400 10030 'stream mirror must have max message size >= source'
JSStreamTemplateDeleteErrF 500 10067 '{err}'
JSBadRequestErr 400 10003 'bad request'
JSClusterUnSupportFeatureErr 503 10036 'not currently supported in clustered mode'
JSConsumerNotFoundErr 404 10014 'consumer not found'
JSSourceMaxMessageSizeTooBigErr 400 10046 'stream source must have max message size >= target'
JSStreamAssignmentErrF 500 10048 '{err}'
JSStreamMessageExceedsMaximumErr 400 10054 'message size exceeds maximum allowed'
JSStreamTemplateCreateErrF 500 10066 '{err}'
JSInvalidJSONErr 400 10025 'invalid JSON: {err}'
JSStreamInvalidExternalDeliverySubjErrF 400 10024 'stream external delivery prefix {prefix} must not contain wildcards'
JSStreamRestoreErrF 500 10062 'restore failed: {err}'
JSClusterIncompleteErr 503 10004 'incomplete results'
JSNoAccountErr 503 10035 'account not found'
JSRaftGeneralErrF 500 10041 '{err}'
JSRestoreSubscribeFailedErrF 500 10042 'JetStream unable to subscribe to restore snapshot {subject}: {err}'
JSStreamDeleteErrF 500 10050 '{err}'
JSStreamExternalApiOverlapErrF 400 10021 'stream external api prefix {prefix} must not overlap with {subject}'
JSMirrorWithSubjectsErr 400 10034 'stream mirrors can not contain subjects'
JSMirrorWithFirstSeqErr 400 10143 'stream mirrors can not have first sequence configured'
JSNotEnabledErr 503 10076 'JetStream not enabled'
JSNotEnabledForAccountErr 503 10039 'JetStream not enabled for account'
JSSequenceNotFoundErrF 400 10043 'sequence {seq} not found'
JSStreamMirrorNotUpdatableErr 400 10055 'stream mirror configuration can not be updated'
JSStreamSequenceNotMatchErr 503 10063 'expected stream sequence does not match'
JSStreamWrongLastMsgIDErrF 400 10070 'wrong last msg ID: {id}'
JSTempStorageFailedErr 500 10072 'JetStream unable to open temp storage for restore'
JSStorageResourcesExceededErr 500 10047 'insufficient storage resources available'
JSStreamMismatchErr 400 10056 'stream name in subject does not match request'
JSStreamNotMatchErr 400 10060 'expected stream does not match'
JSMirrorConsumerSetupFailedErrF 500 10029 '{err}'
JSNotEmptyRequestErr 400 10038 'expected an empty request payload'
JSStreamNameExistErr 400 10058 'stream name already in use with a different configuration'
JSClusterTagsErr 400 10011 'tags placement not supported for operation'
JSMaximumConsumersLimitErr 400 10026 'maximum consumers limit reached'
JSSourceConsumerSetupFailedErrF 500 10045 '{err}'
JSConsumerCreateErrF 500 10012 '{err}'
JSConsumerDurableNameNotInSubjectErr 400 10016 'consumer expected to be durable but no durable name set in subject'
JSStreamLimitsErrF 500 10053 '{err}'
JSStreamReplicasNotUpdatableErr 400 10061 'Replicas configuration can not be updated'
JSStreamTemplateNotFoundErr 404 10068 'template not found'
JSClusterNotAssignedErr 500 10007 'JetStream cluster not assigned to this server'
JSClusterNotLeaderErr 500 10009 'JetStream cluster can not handle request'
JSConsumerNameExistErr 400 10013 'consumer name already in use'
JSMirrorWithSourcesErr 400 10031 'stream mirrors can not also contain other sources'
JSStreamNotFoundErr 404 10059 'stream not found'
JSClusterRequiredErr 503 10010 'JetStream clustering support required'
JSConsumerDurableNameNotSetErr 400 10018 'consumer expected to be durable but a durable name was not set'
JSMaximumStreamsLimitErr 400 10027 'maximum number of streams reached'
JSMirrorWithStartSeqAndTimeErr 400 10032 'stream mirrors can not have both start seq and start time configured'
JSStreamSnapshotErrF 500 10064 'snapshot failed: {err}'
JSStreamUpdateErrF 500 10069 '{err}'
JSClusterNotActiveErr 500 10006 'JetStream not in clustered mode'
JSConsumerDurableNameNotMatchSubjectErr 400 10017 'consumer name in subject does not match durable name in request'
JSMemoryResourcesExceededErr 500 10028 'insufficient memory resources available'
JSMirrorWithSubjectFiltersErr 400 10033 'stream mirrors can not contain filtered subjects'
JSStreamCreateErrF 500 10049 '{err}'
JSClusterServerNotMemberErr 400 10044 'server is not a member of the cluster'
JSNoMessageFoundErr 404 10037 'no message found'
JSSnapshotDeliverSubjectInvalidErr 400 10015 'deliver subject not valid'
JSStreamGeneralErrorF 500 10051 '{err}'
JSStreamInvalidConfigF 500 10052 '{err}'
JSStreamReplicasNotSupportedErr 500 10074 'replicas > 1 not supported in non-clustered mode'
JSStreamMsgDeleteFailedF 500 10057 '{err}'
JSPeerRemapErr 503 10075 'peer remap failed'
JSStreamStoreFailedF 503 10077 '{err}'
JSConsumerConfigRequiredErr 400 10078 'consumer config required'
JSConsumerDeliverToWildcardsErr 400 10079 'consumer deliver subject has wildcards'
JSConsumerPushMaxWaitingErr 400 10080 'consumer in push mode can not set max waiting'
JSConsumerDeliverCycleErr 400 10081 'consumer deliver subject forms a cycle'
JSConsumerMaxPendingAckPolicyRequiredErr 400 10082 'consumer requires ack policy for max ack pending'
JSConsumerSmallHeartbeatErr 400 10083 'consumer idle heartbeat needs to be >= 100ms'
JSConsumerPullRequiresAckErr 400 10084 'consumer in pull mode requires explicit ack policy on workqueue stream'
JSConsumerPullNotDurableErr 400 10085 'consumer in pull mode requires a durable name'
JSConsumerPullWithRateLimitErr 400 10086 'consumer in pull mode can not have rate limit set'
JSConsumerMaxWaitingNegativeErr 400 10087 'consumer max waiting needs to be positive'
JSConsumerHBRequiresPushErr 400 10088 'consumer idle heartbeat requires a push based consumer'
JSConsumerFCRequiresPushErr 400 10089 'consumer flow control requires a push based consumer'
JSConsumerDirectRequiresPushErr 400 10090 'consumer direct requires a push based consumer'
JSConsumerDirectRequiresEphemeralErr 400 10091 'consumer direct requires an ephemeral consumer'
JSConsumerOnMappedErr 400 10092 'consumer direct on a mapped consumer'
JSConsumerFilterNotSubsetErr 400 10093 'consumer filter subject is not a valid subset of the interest subjects'
JSConsumerInvalidPolicyErrF 400 10094 '{err}'
JSConsumerInvalidSamplingErrF 400 10095 'failed to parse consumer sampling configuration: {err}'
JSStreamInvalidErr 500 10096 'stream not valid'
JSConsumerWQRequiresExplicitAckErr 400 10098 'workqueue stream requires explicit ack'
JSConsumerWQMultipleUnfilteredErr 400 10099 'multiple non-filtered consumers not allowed on workqueue stream'
JSConsumerWQConsumerNotUniqueErr 400 10100 'filtered consumer not unique on workqueue stream'
JSConsumerWQConsumerNotDeliverAllErr 400 10101 'consumer must be deliver all on workqueue stream'
JSConsumerNameTooLongErrF 400 10102 'consumer name is too long, maximum allowed is {max}'
JSConsumerBadDurableNameErr 400 10103 "durable name can not contain '.', '*', '>'"
JSConsumerStoreFailedErrF 500 10104 'error creating store for consumer: {err}'
JSConsumerExistingActiveErr 400 10105 'consumer already exists and is still active'
JSConsumerReplacementWithDifferentNameErr 400 10106 'consumer replacement durable config not the same'
JSConsumerDescriptionTooLongErrF 400 10107 'consumer description is too long, maximum allowed is {max}'
JSStreamHeaderExceedsMaximumErr 400 10097 'header size exceeds maximum allowed of 64k'
JSConsumerWithFlowControlNeedsHeartbeats 400 10108 'consumer with flow control also needs heartbeats'
JSStreamSealedErr 400 10109 'invalid operation on sealed stream'
JSStreamPurgeFailedF 500 10110 '{err}'
JSStreamRollupFailedF 500 10111 '{err}'
JSConsumerInvalidDeliverSubject 400 10112 'invalid push consumer deliver subject'
JSStreamMaxBytesRequired 400 10113 'account requires a stream config to have max bytes set'
JSConsumerMaxRequestBatchNegativeErr 400 10114 'consumer max request batch needs to be > 0'
JSConsumerMaxRequestExpiresTooSmall 400 10115 'consumer max request expires needs to be >= 1ms'
JSConsumerMaxDeliverBackoffErr 400 10116 'max deliver is required to be > length of backoff values'
JSStreamInfoMaxSubjectsErr 500 10117 'subject details would exceed maximum allowed'
JSStreamOfflineErr 500 10118 'stream is offline'
JSConsumerOfflineErr 500 10119 'consumer is offline'
JSNoLimitsErr 400 10120 'no JetStream default or applicable tiered limit present'
JSConsumerMaxPendingAckExcessErrF 400 10121 'consumer max ack pending exceeds system limit of {limit}'
JSStreamMaxStreamBytesExceeded 400 10122 'stream max bytes exceeds account limit max stream bytes'
JSStreamMoveAndScaleErr 400 10123 'can not move and scale a stream in a single update'
JSStreamMoveInProgressErr 400 10124 'stream move already in progress'
JSConsumerMaxRequestBatchExceededF 400 10125 'consumer max request batch exceeds server limit of {limit}'
JSConsumerReplicasExceedsStream 400 10126 'consumer config replica count exceeds parent stream'
JSConsumerNameContainsPathSeparatorsErr 400 10127 'Consumer name can not contain path separators'
JSStreamNameContainsPathSeparatorsErr 400 10128 'Stream name can not contain path separators'
JSStreamReconfigureNotInProgressErr 400 10129 'stream reconfiguration not in progress'
JSStreamNameExistRestoreFailedErr 400 10130 'stream name already in use, cannot restore'
JSConsumerCreateFilterSubjectMismatchErr 400 10131 'Consumer create request did not match filtered subject from create subject'
JSConsumerCreateDurableAndNameMismatch 400 10132 'Consumer Durable and Name have to be equal if both are provided'
JSReplicasCountCannotBeNegative 400 10133 'replicas count cannot be negative'
JSConsumerReplicasShouldMatchStream 400 10134 "consumer config replicas must match interest retention stream's replicas"
JSConsumerMetadataLengthErrF 400 10135 'consumer metadata exceeds maximum size of {limit}'
JSConsumerDuplicateFilterSubjects 400 10136 'consumer cannot have both FilterSubject and FilterSubjects specified'
JSConsumerMultipleFiltersNotAllowed 400 10137 'consumer with multiple subject filters cannot use subject based API'
JSConsumerOverlappingSubjectFilters 400 10138 'consumer subject filters cannot overlap'
JSConsumerEmptyFilter 400 10139 'consumer filter in FilterSubjects cannot be empty'
JSSourceDuplicateDetected 400 10140 'duplicate source configuration detected'
JSSourceInvalidStreamName 400 10141 'sourced stream name is invalid'
JSMirrorInvalidStreamName 400 10142 'mirrored stream name is invalid'
JSSourceMultipleFiltersNotAllowed 400 10144 'source with multiple subject transforms cannot also have a single subject filter'
JSSourceInvalidSubjectFilter 400 10145 'source transform source: {err}'
JSSourceInvalidTransformDestination 400 10146 'source transform: {err}'
JSSourceOverlappingSubjectFilters 400 10147 'source filters can not overlap'
JSConsumerAlreadyExists 400 10148 'consumer already exists'
JSConsumerDoesNotExist 400 10149 'consumer does not exist'
JSMirrorMultipleFiltersNotAllowed 400 10150 'mirror with multiple subject transforms cannot also have a single subject filter'
JSMirrorInvalidSubjectFilter 400 10151 'mirror transform source: {err}'
JSMirrorOverlappingSubjectFilters 400 10152 'mirror subject filters can not overlap'
JSConsumerInactiveThresholdExcess 400 10153 'consumer inactive threshold exceeds system limit of {limit}'
JSMirrorInvalidTransformDestination 400 10154 'mirror transform: {err}'
JSStreamTransformInvalidSource 400 10155 'stream transform source: {err}'
JSStreamTransformInvalidDestination 400 10156 'stream transform: {err}'
JSPedanticErrF 400 10157 'pedantic mode: {err}'
JSStreamDuplicateMessageConflict 409 10158 'duplicate message id is in process'
JSConsumerPriorityPolicyWithoutGroup 400 10159 'Setting PriorityPolicy requires at least one PriorityGroup to be set'
JSConsumerInvalidPriorityGroupErr 400 10160 'Provided priority group does not exist for this consumer'
JSConsumerEmptyGroupName 400 10161 'Group name cannot be an empty string'
JSConsumerInvalidGroupNameErr 400 10162 'Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters'
JSStreamExpectedLastSeqPerSubjectNotReady 503 10163 'expected last sequence per subject temporarily unavailable'
JSStreamWrongLastSequenceConstantErr 400 10164 'wrong last sequence'
JSMessageTTLInvalidErr 400 10165 'invalid per-message TTL'
JSMessageTTLDisabledErr 400 10166 'per-message TTL is disabled'
JSStreamTooManyRequests 429 10167 'too many requests'
JSMessageIncrDisabledErr 400 10168 'message counters is disabled'
JSMessageIncrMissingErr 400 10169 'message counter increment is missing'
JSMessageIncrPayloadErr 400 10170 'message counter has payload'
JSMessageIncrInvalidErr 400 10171 'message counter increment is invalid'
JSMessageCounterBrokenErr 400 10172 'message counter is broken'
JSMirrorWithCountersErr 400 10173 'stream mirrors can not also calculate counters'
JSAtomicPublishDisabledErr 400 10174 'atomic publish is disabled'
JSAtomicPublishMissingSeqErr 400 10175 'atomic publish sequence is missing'
JSAtomicPublishIncompleteBatchErr 400 10176 'atomic publish batch is incomplete'
JSAtomicPublishUnsupportedHeaderBatchErr 400 10177 'atomic publish unsupported header used: {header}'
JSConsumerPushWithPriorityGroupErr 400 10178 'priority groups can not be used with push consumers'
JSAtomicPublishInvalidBatchIDErr 400 10179 'atomic publish batch ID is invalid'
JSStreamMinLastSeqErr 412 10180 'min last sequence'
JSConsumerAckPolicyInvalidErr 400 10181 'consumer ack policy invalid'
JSConsumerReplayPolicyInvalidErr 400 10182 'consumer replay policy invalid'
JSConsumerAckWaitNegativeErr 400 10183 'consumer ack wait needs to be positive'
JSConsumerBackOffNegativeErr 400 10184 'consumer backoff needs to be positive'
JSRequiredApiLevelErr 412 10185 'JetStream minimum api level required'
JSMirrorWithMsgSchedulesErr 400 10186 'stream mirrors can not also schedule messages'
JSSourceWithMsgSchedulesErr 400 10187 'stream source can not also schedule messages'
JSMessageSchedulesDisabledErr 400 10188 'message schedules is disabled'
JSMessageSchedulesPatternInvalidErr 400 10189 'message schedules pattern is invalid'
JSMessageSchedulesTargetInvalidErr 400 10190 'message schedules target is invalid'
JSMessageSchedulesTTLInvalidErr 400 10191 'message schedules invalid per-message TTL'
JSMessageSchedulesRollupInvalidErr 400 10192 'message schedules invalid rollup'
JSStreamExpectedLastSeqPerSubjectInvalid 400 10193 'missing sequence for expected last sequence per subject'
JSStreamOfflineReasonErrF 500 10194 'stream is offline: {err}'
JSConsumerOfflineReasonErrF 500 10195 'consumer is offline: {err}'
JSConsumerPriorityGroupWithPolicyNone 400 10196 'consumer can not have priority groups when policy is none'
JSConsumerPinnedTTLWithoutPriorityPolicyNone 400 10197 'PinnedTTL cannot be set when PriorityPolicy is none'
JSMirrorWithAtomicPublishErr 400 10198 'stream mirrors can not also use atomic publishing'
JSAtomicPublishTooLargeBatchErrF 400 10199 'atomic publish batch is too large: {size}'
JSAtomicPublishInvalidBatchCommitErr 400 10200 'atomic publish batch commit is invalid'
JSAtomicPublishContainsDuplicateMessageErr 400 10201 'atomic publish batch contains duplicate message id'
JSClusterServerMemberChangeInflightErr 400 10202 'cluster member change is in progress'
JSMessageSchedulesSourceInvalidErr 400 10203 'message schedules source is invalid'
JSConsumerInvalidResetErr 400 10204 'invalid reset: {err}'
JSBatchPublishDisabledErr 400 10205 'batch publish is disabled'
JSBatchPublishInvalidPatternErr 400 10206 'batch publish pattern is invalid'
JSBatchPublishInvalidBatchIDErr 400 10207 'batch publish ID is invalid'
JSBatchPublishUnknownBatchIDErr 400 10208 'batch publish ID unknown'
JSMirrorWithBatchPublishErr 400 10209 'stream mirrors can not also use batch publishing'
JSAtomicPublishTooManyInflight 429 10210 'atomic publish too many inflight'
JSBatchPublishTooManyInflight 429 10211 'batch publish too many inflight'
JSMessageSchedulesSchedulerInvalidErr 400 10212 'message schedules invalid scheduler'
JSMirrorDurableConsumerCfgInvalid 400 10213 'stream mirror consumer config is invalid'
JSMirrorConsumerRequiresAckFCErr 400 10214 'stream mirror consumer requires flow control ack policy'
JSSourceDurableConsumerCfgInvalid 400 10215 'stream source consumer config is invalid'
JSSourceDurableConsumerDuplicateDetected 400 10216 'duplicate stream source consumer detected'
JSSourceConsumerRequiresAckFCErr 400 10217 'stream source consumer requires flow control ack policy'
JSConsumerAckFCRequiresPushErr 400 10218 'flow control ack policy requires a push based consumer'
JSConsumerAckFCRequiresFCErr 400 10219 'flow control ack policy requires flow control'
JSConsumerAckFCRequiresMaxAckPendingErr 400 10220 'flow control ack policy requires max ack pending'
JSConsumerAckFCRequiresNoAckWaitErr 400 10221 'flow control ack policy requires unset ack wait'
JSConsumerAckFCRequiresNoMaxDeliverErr 400 10222 'flow control ack policy requires unset max deliver'
JSMessageSchedulesTimeZoneInvalidErr 400 10223 'message schedules time zone is invalid'
JSClusterRescueErr 400 10224 'JetStream system rescue not applied: {err}'
JSConsumerStreamIdentityMismatchF 400 10225 "consumer's stream identity does not match: {msg}"
JSStreamReconfigureInProgressErr 400 10226 'stream reconfiguration already in progress'
JSMessageSourceHdrNotAllowedErr 400 10227 'message stream source header is not allowed'
"""


def parse_reference() -> list[tuple[str, int, int, str]]:
    """(constant, code, err_code, description) of every reference line, in line order."""
    rows = []
    for line in REFERENCE_LINES.splitlines():
        constant, code, err_code, quoted = line.split(" ", 3)
        rows.append((constant, int(code), int(err_code), ast.literal_eval(quoted)))
    return rows


REFERENCE = parse_reference()


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_api_errors", GENERATOR_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator():
    return load_generator()


def example_value(name: str) -> str:
    return f"<{name} value>"


# ---------------------------------------------------------------- data file

def test_reference_table_is_complete_and_unique():
    assert len(REFERENCE) == 226
    assert len({row[0] for row in REFERENCE}) == len(REFERENCE)
    assert len({row[2] for row in REFERENCE}) == len(REFERENCE)


def test_data_file_holds_every_reference_line_exactly():
    entries = json.loads(DATA_PATH.read_text(encoding="utf-8"))
    assert all(set(entry) == {"constant", "code", "error_code", "description"}
               for entry in entries)
    in_file = sorted((entry["constant"], entry["code"], entry["error_code"], entry["description"])
                     for entry in entries)
    assert in_file == sorted(REFERENCE)


def test_data_file_order_is_by_error_code():
    entries = json.loads(DATA_PATH.read_text(encoding="utf-8"))
    codes = [entry["error_code"] for entry in entries]
    assert codes == sorted(codes)


# ---------------------------------------------------------------- generated classes

@pytest.mark.parametrize("constant, code, err_code, description", REFERENCE,
                         ids=[row[0] for row in REFERENCE])
def test_every_reference_error_has_its_class(constant, code, err_code, description):
    error_class = getattr(api_errors, constant)
    assert error_class.__name__ == constant
    assert issubclass(error_class, ApiError) and issubclass(error_class, Exception)
    assert error_class.code == code
    assert error_class.err_code == err_code
    assert error_class.template == description
    assert ERRORS_BY_CODE[err_code] is error_class
    assert constant in api_errors.__all__

    # Construct it with a distinct value per placeholder; the description is the reference
    # text with each placeholder replaced.
    arguments = {name: example_value(name) for name in error_class.placeholders}
    expected = description
    for name, value in arguments.items():
        assert "{" + name + "}" in description
        expected = expected.replace("{" + name + "}", value)
    assert "{" not in expected
    error = error_class(**arguments)
    assert error.description == expected
    assert error.to_dict() == {"code": code, "err_code": err_code, "description": expected}
    assert str(error) == f"{expected} ({err_code})"


def test_errors_by_code_has_exactly_the_reference_codes():
    assert sorted(ERRORS_BY_CODE) == sorted(row[2] for row in REFERENCE)
    assert len(set(ERRORS_BY_CODE.values())) == len(REFERENCE)


def test_package_reexports_the_base_and_the_table():
    assert jsstore.api.ApiError is ApiError
    assert jsstore.api.ERRORS_BY_CODE is ERRORS_BY_CODE


# ---------------------------------------------------------------- templates

def test_template_arguments_are_formatted():
    assert JSStreamWrongLastSequenceErrF(seq=5).description == "wrong last sequence: 5"
    assert JSStreamWrongLastMsgIDErrF(id="order-7").description == "wrong last msg ID: order-7"
    error = JSStreamExternalDelPrefixOverlapsErrF(prefix="dlv", subject="orders.>")
    assert error.description == (
        "stream external delivery prefix dlv overlaps with stream subject orders.>")
    assert error.arguments == {"prefix": "dlv", "subject": "orders.>"}
    assert JSStreamExternalDelPrefixOverlapsErrF.placeholders == ("prefix", "subject")
    error = JSRestoreSubscribeFailedErrF(subject="$JS.SNAPSHOT.RESTORE.X", err="timeout")
    assert error.description == (
        "JetStream unable to subscribe to restore snapshot $JS.SNAPSHOT.RESTORE.X: timeout")


def test_whole_description_placeholder_and_exception_arguments():
    assert JSStreamCreateErrF(err="no space left").description == "no space left"
    assert JSInvalidJSONErr(err=ValueError("bad token")).description == "invalid JSON: bad token"
    # An ApiError argument is printed as nats-server prints an error: "text (err_code)".
    nested = JSStreamCreateErrF(err=JSStreamNotFoundErr())
    assert nested.description == "stream not found (10059)"


def test_argument_values_are_not_expanded_again():
    error = JSRestoreSubscribeFailedErrF(subject="{err}", err="{subject}")
    assert error.description == "JetStream unable to subscribe to restore snapshot {err}: {subject}"


def test_booleans_print_like_nats_server():
    assert JSClusterNoPeersErrF(err=True).description == "true"
    assert JSClusterNoPeersErrF(err=False).description == "false"


def test_description_without_placeholders_is_the_template():
    error = JSConsumerBadDurableNameErr()
    assert error.description == "durable name can not contain '.', '*', '>'"
    assert error.arguments == {}
    assert JSConsumerBadDurableNameErr.placeholders == ()


# ---------------------------------------------------------------- bad arguments

def test_missing_template_argument_raises_type_error():
    with pytest.raises(TypeError, match="seq"):
        JSStreamWrongLastSequenceErrF()
    with pytest.raises(TypeError, match="subject"):
        JSStreamExternalDelPrefixOverlapsErrF(prefix="p")


def test_unknown_template_argument_raises_type_error():
    with pytest.raises(TypeError, match="sequence"):
        JSStreamWrongLastSequenceErrF(seq=1, sequence=2)
    with pytest.raises(TypeError, match="takes no template arguments"):
        JSStreamNotFoundErr(name="ORDERS")


def test_positional_template_argument_raises_type_error():
    with pytest.raises(TypeError):
        JSStreamWrongLastSequenceErrF(5)
    with pytest.raises(TypeError):
        JSStreamNotFoundErr("stream not found")


def test_none_as_template_argument_raises_type_error():
    with pytest.raises(TypeError, match="None"):
        JSStreamCreateErrF(err=None)


def test_base_class_can_not_be_raised_directly():
    with pytest.raises(TypeError, match="base class"):
        ApiError()


# ---------------------------------------------------------------- behaviour

def test_to_dict_is_the_response_error_object():
    error = JSStreamNotFoundErr()
    assert error.to_dict() == {"code": 404, "err_code": 10059, "description": "stream not found"}
    assert json.dumps({"error": error.to_dict()}) == (
        '{"error": {"code": 404, "err_code": 10059, "description": "stream not found"}}')
    # nats-server omits an empty description (omitempty).
    assert JSStreamCreateErrF(err="").to_dict() == {"code": 500, "err_code": 10049}


def test_errors_raise_and_catch_as_exceptions():
    with pytest.raises(ApiError) as caught:
        raise JSStreamWrongLastSequenceErrF(seq=9)
    assert isinstance(caught.value, JSStreamWrongLastSequenceErrF)
    assert caught.value.args == ("wrong last sequence: 9",)
    assert repr(caught.value) == "JSStreamWrongLastSequenceErrF(seq=9)"


def test_unless_keeps_an_existing_api_error():
    original = JSStreamNotFoundErr()
    assert JSStreamCreateErrF.unless(original, err=original) is original
    made = JSStreamCreateErrF.unless(OSError("disk full"), err=OSError("disk full"))
    assert type(made) is JSStreamCreateErrF
    assert made.description == "disk full"


def test_errors_survive_pickling():
    for error in (JSStreamNotFoundErr(),
                  JSStreamExternalDelPrefixOverlapsErrF(prefix="a", subject="b.>")):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error)
        assert copy.description == error.description
        assert copy.arguments == error.arguments


# ---------------------------------------------------------------- generator

def test_generated_module_is_up_to_date(generator):
    entries = generator.load_entries(DATA_PATH)
    assert GENERATED_PATH.read_text(encoding="utf-8") == generator.render(entries)
    assert generator.main(["--check"]) == 0


def test_generated_module_says_it_is_generated():
    head = GENERATED_PATH.read_text(encoding="utf-8").splitlines()[:3]
    assert "GENERATED" in head[0] and "do not edit" in head[0]
    assert "gen_api_errors.py" in head[1] and "errors.json" in head[1]


def test_check_mode_detects_a_stale_module_and_write_mode_fixes_it(generator, tmp_path,
                                                                   monkeypatch):
    stale = tmp_path / "errors.py"
    stale.write_text("# stale\n", encoding="utf-8")
    monkeypatch.setattr(generator, "OUTPUT_PATH", stale)
    assert generator.main(["--check"]) == 1
    assert stale.read_text(encoding="utf-8") == "# stale\n"
    assert generator.main([]) == 0
    assert stale.read_text(encoding="utf-8") == GENERATED_PATH.read_text(encoding="utf-8")
    assert generator.main(["--check"]) == 0


def test_a_new_entry_is_generated_into_a_working_class(generator):
    entries = [{"constant": "JSExampleErrF", "code": 409, "error_code": 65000,
                "description": "example {first} and {second} and {first}"}]
    namespace: dict = {}
    exec(compile(generator.render(generator.validate_entries(entries)), "<generated>", "exec"),
         namespace)
    error = namespace["JSExampleErrF"](first=1, second="two")
    assert error.description == "example 1 and two and 1"
    assert error.to_dict() == {"code": 409, "err_code": 65000,
                               "description": "example 1 and two and 1"}
    assert namespace["ERRORS_BY_CODE"] == {65000: namespace["JSExampleErrF"]}


GOOD_ENTRY = {"constant": "JSGoodErr", "code": 400, "error_code": 60000, "description": "good"}


@pytest.mark.parametrize("bad_entries, message", [
    ({"constant": "JSGoodErr"}, "list"),
    ([{"constant": "JSGoodErr", "code": 400, "error_code": 60000}], "keys"),
    ([GOOD_ENTRY, dict(GOOD_ENTRY, error_code=60001)], "duplicate constant"),
    ([GOOD_ENTRY, dict(GOOD_ENTRY, constant="JSOtherErr")], "duplicate error_code"),
    ([dict(GOOD_ENTRY, constant="not an identifier")], "identifier"),
    ([dict(GOOD_ENTRY, constant="StreamErr")], "identifier"),
    ([dict(GOOD_ENTRY, code="400")], "code"),
    ([dict(GOOD_ENTRY, code=99)], "code"),
    ([dict(GOOD_ENTRY, error_code=0)], "error_code"),
    ([dict(GOOD_ENTRY, description="")], "description"),
    ([dict(GOOD_ENTRY, description="bad {brace")], "brace"),
    ([dict(GOOD_ENTRY, description="bad {two words}")], "brace"),
    ([dict(GOOD_ENTRY, description="bad {class}")], "placeholder"),
    ([dict(GOOD_ENTRY, description="bad {self}")], "placeholder"),
])
def test_generator_rejects_bad_data(generator, bad_entries, message):
    with pytest.raises(ValueError, match=message):
        generator.validate_entries(bad_entries)
