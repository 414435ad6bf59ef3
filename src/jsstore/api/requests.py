"""Every JSON request body of the ``$JS.API`` as the Go type nats-server decodes it into.

nats-server decodes these bodies with its unmarshalRequest (a strict ``json.Decoder``:
unknown members refused, values after the first merged in, ``at offset N`` on syntax
errors) and answers ``JSInvalidJSONErr`` with Go's text when it fails; `decode` does the
same through `jsstore.gocompat.json` and builds the handler's request object from the
fields the body set. The types here name what Go's type errors name: the struct
(``JSApiMsgGetRequest``), the field's Go type (``uint64``, ``time.Duration``,
``[]*server.StreamSource``).

The consumer configuration's Go type is `jsstore.consumer.config.CONSUMER_CONFIG`, the
CONSUMER.CREATE body's `jsstore.consumer.create.CREATE_REQUEST`; pull requests and ack
bodies are read with ``json.Unmarshal`` where they are parsed.
"""

from __future__ import annotations

import msgspec

from jsstore.gocompat import json as gojson
from jsstore.gocompat.times import parse_go_time, parse_time_ns
from jsstore.wire import apierrors as api_errors

STRING, BOOL, INT, INT32, INT64, UINT64, DURATION = (
    gojson.STRING_TYPE, gojson.BOOL, gojson.INT, gojson.INT32, gojson.INT64, gojson.UINT64,
    gojson.DURATION)
_STRINGS = gojson.slice_of(STRING)


def _checked_time(text: str) -> str:
    """A time.Time field kept as the text given, once Go's RFC 3339 parser accepts it."""
    parse_go_time(text)
    return text


TIME_TEXT = gojson.time_type(_checked_time)              # kept as given
TIME_NS = gojson.time_type(parse_time_ns)                # as Unix ns
_POLICY_ERROR = "can not unmarshal %q"

# -- the stream configuration (server.StreamConfig) ----------------------------------------------
SUBJECT_TRANSFORM = gojson.struct("server.SubjectTransformConfig", {"src": STRING, "dest": STRING})
EXTERNAL_STREAM = gojson.struct("server.ExternalStream", {"api": STRING, "deliver": STRING})
STREAM_SOURCE = gojson.struct("server.StreamSource", {
    "name": STRING, "opt_start_seq": UINT64, "opt_start_time": TIME_TEXT,
    "filter_subject": STRING, "subject_transforms": gojson.slice_of(SUBJECT_TRANSFORM),
    "external": EXTERNAL_STREAM,
})
STREAM_CONFIG_FIELDS = {
    "name": STRING, "description": STRING, "subjects": _STRINGS,
    "retention": gojson.enum({p: p for p in ("limits", "interest", "workqueue")}, _POLICY_ERROR),
    "max_consumers": INT, "max_msgs": INT64, "max_bytes": INT64, "max_age": DURATION,
    "max_msgs_per_subject": INT64, "max_msg_size": INT32,
    "discard": gojson.enum({"old": "old", "new": "new"}, _POLICY_ERROR),
    "storage": gojson.enum({"file": "file", "memory": "memory"}, _POLICY_ERROR),
    "num_replicas": INT, "no_ack": BOOL, "duplicate_window": DURATION,   # no template_owner
    "placement": gojson.struct("server.Placement", {
        "cluster": STRING, "tags": _STRINGS, "preferred": STRING}),
    "mirror": STREAM_SOURCE,
    "sources": gojson.slice_of(STREAM_SOURCE, "[]*server.StreamSource"),
    # "lz4" is jsstore's own algorithm (a storage extension nats-server does not have)
    "compression": gojson.text_enum({"none": "none", "s2": "s2", "lz4": "lz4"},
                                    "unknown compression algorithm"),
    "first_seq": UINT64, "subject_transform": SUBJECT_TRANSFORM,
    "republish": gojson.struct("server.RePublish", {
        "src": STRING, "dest": STRING, "headers_only": BOOL}),
    "allow_direct": BOOL, "mirror_direct": BOOL, "discard_new_per_subject": BOOL,
    "sealed": BOOL, "deny_delete": BOOL, "deny_purge": BOOL, "allow_rollup_hdrs": BOOL,
    "consumer_limits": gojson.struct("server.StreamConsumerLimits", {
        "inactive_threshold": DURATION, "max_ack_pending": INT}),
    "allow_msg_ttl": BOOL, "subject_delete_marker_ttl": DURATION, "allow_msg_counter": BOOL,
    "allow_atomic": BOOL, "allow_msg_schedules": BOOL,
    "persist_mode": gojson.enum({"": "default", "default": "default", "async": "async"},
                                _POLICY_ERROR),
    "metadata": gojson.map_of(STRING),
}
STREAM_CONFIG = gojson.struct("server.StreamConfig", STREAM_CONFIG_FIELDS)
# STREAM.CREATE / STREAM.UPDATE: the configuration and the pedantic flag
STREAM_CONFIG_REQUEST = gojson.struct("server.StreamConfigRequest",
                                      STREAM_CONFIG_FIELDS | {"pedantic": BOOL})

# -- the other bodies -------------------------------------------------------------------------
_PAGED = {"offset": INT}                                  # the embedded ApiPagedRequest
STREAM_INFO = gojson.struct("server.JSApiStreamInfoRequest", _PAGED | {
    "deleted_details": BOOL, "subjects_filter": STRING})
STREAM_NAMES = gojson.struct("server.JSApiStreamNamesRequest", _PAGED | {"subject": STRING})
STREAM_LIST = gojson.struct("server.JSApiStreamListRequest", _PAGED | {"subject": STRING})
STREAM_PURGE = gojson.struct("server.JSApiStreamPurgeRequest", {
    "filter": STRING, "seq": UINT64, "keep": UINT64})
MSG_GET = gojson.struct("server.JSApiMsgGetRequest", {
    "seq": UINT64, "last_by_subj": STRING, "next_by_subj": STRING, "batch": INT,
    "max_bytes": INT, "start_time": TIME_NS, "multi_last": _STRINGS, "up_to_seq": UINT64,
    "up_to_time": TIME_NS, "no_hdr": BOOL})
MSG_DELETE = gojson.struct("server.JSApiMsgDeleteRequest", {"seq": UINT64, "no_erase": BOOL})
SNAPSHOT = gojson.struct("server.JSApiStreamSnapshotRequest", {
    "deliver_subject": STRING, "no_consumers": BOOL, "chunk_size": INT, "window_size": INT,
    "jsck": BOOL})
STREAM_STATE = gojson.struct("server.StreamState", {
    "messages": UINT64, "bytes": UINT64, "first_seq": UINT64, "first_ts": TIME_TEXT,
    "last_seq": UINT64, "last_ts": TIME_TEXT, "num_subjects": INT,
    "subjects": gojson.map_of(UINT64), "num_deleted": INT,
    "deleted": gojson.slice_of(UINT64),
    "lost": gojson.struct("server.LostStreamData", {
        "msgs": gojson.slice_of(UINT64), "bytes": UINT64}),
    "consumer_count": INT})
RESTORE = gojson.struct("server.JSApiStreamRestoreRequest", {
    "config": STREAM_CONFIG, "state": STREAM_STATE})
CONSUMERS = gojson.struct("server.JSApiConsumersRequest", _PAGED)
CONSUMER_PAUSE = gojson.struct("server.JSApiConsumerPauseRequest", {"pause_until": TIME_NS})
CONSUMER_UNPIN = gojson.struct("server.JSApiConsumerUnpinRequest", {"group": STRING})
CONSUMER_RESET = gojson.struct("server.JSApiConsumerResetRequest", {"seq": UINT64})


def decode_fields(payload: bytes, target: gojson.GoType) -> dict:
    """The fields a body sets, decoded as nats-server's unmarshalRequest does;
    JSInvalidJSONErr with Go's text when it fails."""
    try:
        return gojson.decode_request(payload, target)
    except gojson.GoJSONError as exc:
        raise api_errors.JSInvalidJSONErr(err=exc) from None


def without_nils(value):
    """Decoded fields without the ones set to nil (None), which hold Go's zero value: the
    request objects' defaults."""
    if isinstance(value, dict):
        return {key: without_nils(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nils(item) for item in value]
    return value


def decode(payload: bytes, target: gojson.GoType, request_type: type):
    """A body decoded into `target` and converted to `request_type` (a msgspec Struct
    whose fields keep the JSON names; fields it does not have are dropped)."""
    return msgspec.convert(without_nils(decode_fields(payload, target)), request_type)
