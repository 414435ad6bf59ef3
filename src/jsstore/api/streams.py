"""The stream part of the JetStream wire API: ``$JS.API.*`` requests answered in process.

``StreamApi(js).request(subject, payload)`` answers as nats-server does: JSON bytes with the
response ``type`` and either the result or nats-server's error object; ``None`` for a
subject no handler serves (nats-server does not answer those at all).  The handlers sit
on the embedded ``JetStream`` methods, which carry the checks and raise the API errors.

What differs from a real server's answers: no ``cluster`` object in STREAM.INFO (a single
embedded store has no server name to report as leader).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import msgspec

from jsstore._core.storage.subjects import filters_overlap
from jsstore.api import requests, schemas
from jsstore.gocompat import json as gojson
from jsstore.gocompat.times import rfc3339_nano
from jsstore.store.contract import StreamState
from jsstore.stream import configchecks
from jsstore.stream.config import StreamConfig
from jsstore.wire import apierrors as api_errors


def go_time(ts_ns: int) -> str:
    """RFC 3339 with nanoseconds; Go's zero time for 0 (no message)."""
    return rfc3339_nano(ts_ns) if ts_ns else schemas.GO_ZERO_TIME


def is_empty_request(payload: bytes) -> bool:
    """nats-server's isEmptyRequest: no body, or a JSON object without members."""
    return gojson.is_empty_object(payload)


def is_json_object_or_array(payload: bytes) -> bool:
    """nats-server's isJSONObjectOrArray: whether the body, after JSON white space, starts
    like an object or an array (some handlers decode only those and ignore any other
    body)."""
    return payload.lstrip(gojson.WHITESPACE)[:1] in (b"{", b"[")


def required_api_level(config: StreamConfig) -> int:
    """The JetStream API level a stream's features need (nats-server's _nats.req.level):
    1 for per-message TTLs and subject delete markers (2.11), 2 for counters, atomic
    batches, schedules and async persistence (2.12)."""
    if (config.allow_msg_counter or config.allow_atomic or config.allow_msg_schedules
            or config.persist_mode == "async"):
        return 2
    if config.allow_msg_ttl or config.subject_delete_marker_ttl > 0:
        return 1
    return 0


def wire_config(config: StreamConfig, *, dynamic: bool = True) -> StreamConfig:
    """The configuration as nats-server answers it: its metadata gains `_nats.req.level`
    (stored with the stream) and, unless in a STREAM.LIST page, `_nats.level` and
    `_nats.ver`; keys sorted as Go writes a map."""
    metadata = {key: value for key, value in config.metadata.items()
                if not key.startswith("_nats.")}
    metadata["_nats.req.level"] = str(required_api_level(config))
    if dynamic:
        metadata["_nats.level"] = str(schemas.API_LEVEL)
        metadata["_nats.ver"] = schemas.SERVER_VERSION
    return msgspec.structs.replace(config, metadata=dict(sorted(metadata.items())))


def state_body(state: StreamState, *, details: bool = True) -> schemas.StreamStateBody:
    """nats-server's JSON form of a stream state; without details (as create and update
    answer) no deleted sequences and no per-subject counts."""
    if not details:
        state.deleted = None
        state.subjects = None
    lost = None
    if state.lost is not None and (state.lost.msgs or state.lost.bytes):
        lost = schemas.LostData(msgs=list(state.lost.msgs) or None, bytes=state.lost.bytes)
    return schemas.StreamStateBody(
        messages=state.messages, bytes=state.bytes, first_seq=state.first_seq,
        first_ts=go_time(state.first_ts), last_seq=state.last_seq,
        last_ts=go_time(state.last_ts), num_subjects=state.num_subjects,
        subjects=dict(sorted(state.subjects.items())) if state.subjects else None,
        num_deleted=state.num_deleted, deleted=state.deleted or None, lost=lost,
        consumer_count=state.consumer_count)


def _subject_page(subjects: dict[str, int], offset: int) -> dict[str, int] | None:
    """One page of per-subject counts, by subject, as STREAM.INFO pages them."""
    if offset == 0 and len(subjects) <= schemas.MAX_SUBJECT_DETAILS:
        return subjects
    names = sorted(subjects)
    offset = min(offset, len(names))
    page = names[offset:offset + schemas.MAX_SUBJECT_DETAILS]
    return {name: subjects[name] for name in page} or None


class StreamApi:
    """Routes ``$JS.API.*`` subjects of one embedded JetStream to the stream handlers."""

    def __init__(self, js):
        self.js = js                # the embedded JetStream answering the requests
        self.total = 0              # requests answered, for the account info "api" stats
        self.errors = 0             # of those, answered with an error
        self._count_lock = threading.Lock()
        # (subject prefix, response type, handler(name, payload)); a prefix ending in "."
        # takes the stream name as the rest of the subject
        self._routes: dict[str, tuple[str, Callable]] = {
            "STREAM.CREATE.": (schemas.STREAM_CREATE_TYPE, self.stream_create),
            "STREAM.UPDATE.": (schemas.STREAM_UPDATE_TYPE, self.stream_update),
            "STREAM.INFO.": (schemas.STREAM_INFO_TYPE, self.stream_info),
            "STREAM.DELETE.": (schemas.STREAM_DELETE_TYPE, self.stream_delete),
            "STREAM.PURGE.": (schemas.STREAM_PURGE_TYPE, self.stream_purge),
            "STREAM.MSG.GET.": (schemas.MSG_GET_TYPE, self.msg_get),
            "STREAM.MSG.DELETE.": (schemas.MSG_DELETE_TYPE, self.msg_delete),
        }
        self._fixed: dict[str, tuple[str, Callable]] = {
            "INFO": (schemas.ACCOUNT_INFO_TYPE, self.account_info),
            "STREAM.NAMES": (schemas.STREAM_NAMES_TYPE, self.stream_names),
            "STREAM.LIST": (schemas.STREAM_LIST_TYPE, self.stream_list),
        }

    def resolve(self, subject: str) -> tuple[str, Callable, str] | None:
        """(response type, handler, stream name) for a subject these handlers serve."""
        if not subject.startswith(schemas.API_PREFIX):
            return None
        rest = subject[len(schemas.API_PREFIX):]
        fixed = self._fixed.get(rest)
        if fixed is not None:
            return fixed[0], fixed[1], ""
        # no prefix is a prefix of another; the name is one token (nats-server's
        # subscription is "<prefix>*"), and a published "*" or ">" token is a literal name
        for prefix, (response_type, handler) in self._routes.items():
            if rest.startswith(prefix):
                name = rest[len(prefix):]
                if name and "." not in name:
                    return response_type, handler, name
                return None
        return None

    def request(self, subject: str, payload: bytes = b"") -> bytes | None:
        """The JSON answer to one API request; None when no handler serves the subject."""
        resolved = self.resolve(subject)
        if resolved is None:
            return None
        return self.answer(resolved, payload)

    def answer(self, resolved: tuple[str, Callable, str], payload: bytes) -> bytes:
        """The JSON answer of a resolved request."""
        response_type, handler, name = resolved
        payload = bytes(payload or b"")
        try:
            response = handler(response_type, name, payload)
        except api_errors.ApiError as exc:
            self.count(error=True)
            return gojson.encode(self.error_response(response_type, exc))
        self.count(error=False)
        return gojson.encode(response)

    def count(self, *, error: bool) -> None:
        """One more request answered (for the account info's "api" totals)."""
        with self._count_lock:
            self.total += 1
            self.errors += error

    @staticmethod
    def error_response(response_type: str, exc: api_errors.ApiError) -> msgspec.Struct:
        """The error answer in the shape the response type has."""
        if response_type == schemas.STREAM_INFO_TYPE:
            return schemas.StreamInfoPagedError(type=response_type, error=exc.to_dict())
        if response_type == schemas.STREAM_NAMES_TYPE:
            return schemas.PagedListError(type=response_type, error=exc.to_dict())
        if response_type == schemas.STREAM_LIST_TYPE:
            return schemas.ListError(type=response_type, error=exc.to_dict())
        if response_type == schemas.STREAM_PURGE_TYPE:
            return schemas.PurgeError(type=response_type, error=exc.to_dict())
        return schemas.ErrorResponse(type=response_type, error=exc.to_dict())

    # -- account ------------------------------------------------------------------------
    def account_info(self, response_type: str, _name: str, _payload: bytes):
        info = self.js.account_info()
        limits = info.limits
        return schemas.AccountInfoResponse(
            type=response_type, memory=info.memory, storage=info.storage,
            reserved_memory=info.reserved_memory, reserved_storage=info.reserved_storage,
            streams=info.streams, consumers=info.consumers,
            limits=schemas.AccountLimitsBody(
                max_memory=limits.max_memory, max_storage=limits.max_storage,
                max_streams=limits.max_streams, max_consumers=limits.max_consumers,
                max_ack_pending=limits.max_ack_pending,
                memory_max_stream_bytes=limits.memory_max_stream_bytes,
                storage_max_stream_bytes=limits.storage_max_stream_bytes,
                max_bytes_required=limits.max_bytes_required),
            domain=self.js.domain, api=schemas.ApiStats(level=schemas.API_LEVEL, total=self.total,
                                 errors=self.errors))

    def _cluster(self) -> dict | None:
        """A single server's cluster info: itself as the leader (None embedded)."""
        name = self.js.server_name
        return {"leader": name} if name else None

    # -- stream configuration -----------------------------------------------------------
    @staticmethod
    def _request(payload: bytes) -> tuple[StreamConfig, bool]:
        """The configuration and the pedantic flag of a CREATE/UPDATE body (an empty body
        is an empty configuration, without a name)."""
        fields = requests.without_nils(
            requests.decode_fields(payload, requests.STREAM_CONFIG_REQUEST))
        pedantic = bool(fields.pop("pedantic", False))
        return msgspec.convert(fields, StreamConfig), pedantic

    def stream_create(self, response_type: str, name: str, payload: bytes):
        config, pedantic = self._request(payload)
        if config.name != name:
            raise api_errors.JSStreamMismatchErr()
        info = self.js.add_stream(config, pedantic=pedantic)
        return schemas.StreamCreateResponse(
            type=response_type, config=wire_config(info.config), created=info.created,
            state=state_body(info.state, details=False), mirror=info.mirror,
            sources=info.sources, ts=go_time(time.time_ns()), did_create=True)

    def stream_update(self, response_type: str, name: str, payload: bytes):
        """nats-server checks the new configuration on its own before it compares its
        name with the subject's and looks the stream up."""
        config, pedantic = self._request(payload)
        with self.js.lock:
            configchecks.check_config(
                config, existing_streams=self.js.other_stream_configs_locked(config.name),
                pedantic=pedantic)
        if config.name != name:
            raise api_errors.JSStreamMismatchErr()
        info = self.js.update_stream(config, pedantic=pedantic)
        return schemas.StreamUpdateResponse(
            type=response_type, config=wire_config(info.config), created=info.created,
            state=state_body(info.state, details=False), domain=self.js.domain,
            mirror=info.mirror, sources=info.sources, ts=go_time(time.time_ns()))

    def stream_info(self, response_type: str, name: str, payload: bytes):
        request = schemas.StreamInfoRequest()
        if is_json_object_or_array(payload):
            request = requests.decode(payload, requests.STREAM_INFO, schemas.StreamInfoRequest)
        info = self.js.stream_info(name, subjects_filter=request.subjects_filter or None,
                                   deleted_details=request.deleted_details)
        total = offset = limit = 0
        state = info.state
        if state.subjects:
            total, offset, limit = len(state.subjects), request.offset, schemas.MAX_SUBJECT_DETAILS
            state.subjects = _subject_page(state.subjects, max(request.offset, 0))
        else:
            state.subjects = None
        return schemas.StreamInfoResponse(
            type=response_type, total=total, offset=offset, limit=limit, config=wire_config(info.config),
            created=info.created, state=state_body(state), domain=self.js.domain,
            cluster=self._cluster(), mirror=info.mirror, sources=info.sources, ts=go_time(time.time_ns()))

    def stream_delete(self, response_type: str, name: str, payload: bytes):
        if not is_empty_request(payload):
            raise api_errors.JSNotEmptyRequestErr()
        self.js.delete_stream(name)
        return schemas.SuccessResponse(type=response_type)

    def stream_purge(self, response_type: str, name: str, payload: bytes):
        request = schemas.StreamPurgeRequest()
        if is_json_object_or_array(payload):
            request = requests.decode(payload, requests.STREAM_PURGE, schemas.StreamPurgeRequest)
            if request.seq > 0 and request.keep > 0:
                raise api_errors.JSBadRequestErr()
        purged = self.js.purge_stream(name, filter=request.filter or None, seq=request.seq,
                                      keep=request.keep)
        return schemas.StreamPurgeResponse(type=response_type, success=True, purged=purged)

    # -- listing ------------------------------------------------------------------------
    def _filtered_names(self, payload: bytes,
                        target: gojson.GoType = requests.STREAM_NAMES) -> tuple[list[str], int]:
        """Names of the streams (sorted) whose subjects overlap the request's filter, and
        the page offset; a body that is not a JSON object or array is ignored."""
        request = schemas.StreamNamesRequest()
        if is_json_object_or_array(payload):
            request = requests.decode(payload, target, schemas.StreamNamesRequest)
        names = self.js.stream_names()
        if request.subject:
            names = [name for name in names
                     if any(filters_overlap(request.subject, captured)
                            for captured in self._subjects_of(name))]
        return names, min(max(request.offset, 0), len(names))

    def _subjects_of(self, name: str) -> list[str]:
        try:
            return self.js.stream_info(name).config.subjects
        except api_errors.JSStreamNotFoundErr:   # deleted meanwhile
            return []

    def stream_names(self, response_type: str, _name: str, payload: bytes):
        names, offset = self._filtered_names(payload)
        page = names[offset:offset + schemas.NAMES_LIMIT]
        return schemas.StreamNamesResponse(type=response_type, total=len(names), offset=offset,
                                           limit=schemas.NAMES_LIMIT, streams=page or None)

    def stream_list(self, response_type: str, _name: str, payload: bytes):
        names, offset = self._filtered_names(payload, requests.STREAM_LIST)
        infos = []
        now = go_time(time.time_ns())
        for name in names[offset:]:
            try:
                info = self.js.stream_info(name)
            except api_errors.JSStreamNotFoundErr:
                continue
            infos.append(schemas.StreamInfoBody(config=wire_config(info.config, dynamic=False), created=info.created,
                                                state=state_body(info.state),
                                                domain=self.js.domain, mirror=info.mirror, sources=info.sources,
                                                ts=now))
            if len(infos) >= schemas.LIST_LIMIT:
                break
        return schemas.StreamListResponse(type=response_type, total=len(names), offset=offset,
                                          limit=schemas.LIST_LIMIT, streams=infos)

    # -- messages -----------------------------------------------------------------------
    def msg_get(self, response_type: str, name: str, payload: bytes):
        if is_empty_request(payload):
            raise api_errors.JSBadRequestErr()
        request = requests.decode(payload, requests.MSG_GET, schemas.MsgGetRequest)
        if request.start_time is not None and (request.seq > 0 or request.last_by_subj):
            raise api_errors.JSBadRequestErr()
        msg = self.js.get_msg(name, request.seq, last_by_subject=request.last_by_subj or None,
                              next_by_subject=request.next_by_subj or None)
        return schemas.MsgGetResponse(type=response_type, message=schemas.StoredMsgBody(
            subject=msg.subject, seq=msg.seq, hdrs=msg.hdr or b"", data=msg.data,
            time=go_time(msg.time)))

    def msg_delete(self, response_type: str, name: str, payload: bytes):
        if is_empty_request(payload):
            raise api_errors.JSBadRequestErr()
        request = requests.decode(payload, requests.MSG_DELETE, schemas.MsgDeleteRequest)
        self.js.delete_msg(name, request.seq, no_erase=request.no_erase)
        return schemas.SuccessResponse(type=response_type)
