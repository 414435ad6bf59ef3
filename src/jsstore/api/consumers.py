"""The consumer part of the JetStream wire API: ``$JS.API.CONSUMER.*`` answered in process.

    CONSUMER.CREATE.<stream>[.<consumer>[.<filter>]]   CONSUMER.DURABLE.CREATE.<stream>.<durable>
    CONSUMER.INFO.<stream>.<consumer>                  CONSUMER.DELETE.<stream>.<consumer>
    CONSUMER.NAMES.<stream>   CONSUMER.LIST.<stream>   CONSUMER.PAUSE.<stream>.<consumer>
    CONSUMER.UNPIN.<stream>.<consumer>

``ConsumerApi(js).resolve(subject)`` names the handler for a subject (None: not one of
these); ``answer`` runs it and writes nats-server's JSON (the response ``type`` first,
then the result or the error).  ``CONSUMER.MSG.NEXT`` (pull requests) is not a JSON
request: the router hands it to the consumer directly.  ``CONSUMER.RESET`` is served by
the consumer too (``reset``): nats-server subscribes it per consumer, so a missing
consumer goes unanswered, and it is neither counted nor audited as an API request.
"""

from __future__ import annotations

from typing import Callable

import msgspec

from jsstore.api import requests
from jsstore.api.streams import is_empty_request, is_json_object_or_array
from jsstore.consumer import create as consumercreate
from jsstore.consumer.config import wire_config
from jsstore.gocompat import json as gojson
from jsstore.gocompat.durations import time_sub
from jsstore.gocompat.times import ZERO_TIME, rfc3339_nano
from jsstore.jetstream.consumers import ConsumerInfo, ConsumerResetInfo
from jsstore.wire import apierrors as api_errors
from jsstore.wire.api import TYPE_PREFIX, api_level_too_high

CREATE_TYPE = TYPE_PREFIX + "consumer_create_response"
INFO_TYPE = TYPE_PREFIX + "consumer_info_response"
DELETE_TYPE = TYPE_PREFIX + "consumer_delete_response"
NAMES_TYPE = TYPE_PREFIX + "consumer_names_response"
LIST_TYPE = TYPE_PREFIX + "consumer_list_response"
PAUSE_TYPE = TYPE_PREFIX + "consumer_pause_response"
UNPIN_TYPE = TYPE_PREFIX + "consumer_unpin_response"
RESET_TYPE = TYPE_PREFIX + "consumer_reset_response"
NAMES_LIMIT = 1024                  # JSApiNamesLimit
LIST_LIMIT = 256                    # JSApiListLimit
PREFIX = "$JS.API.CONSUMER."


# CONSUMER.CREATE / CONSUMER.INFO: the response type first, then the consumer's info
ConsumerInfoResponse = msgspec.defstruct(
    "ConsumerInfoResponse",
    [("type", str)] + [(f.name, f.type, msgspec.NODEFAULT if f.required else f.default)
                       for f in msgspec.structs.fields(ConsumerInfo)],
    omit_defaults=True, kw_only=True)


# CONSUMER.RESET: the response type, the consumer's info, then reset_seq (always written)
ResetResponse = msgspec.defstruct(
    "ResetResponse",
    [("type", str)] + [(f.name, f.type, msgspec.NODEFAULT if f.required else f.default)
                       for f in msgspec.structs.fields(ConsumerResetInfo)],
    omit_defaults=True, kw_only=True)


class ResetError(msgspec.Struct):
    """A failed CONSUMER.RESET still carries reset_seq (0)."""
    type: str
    error: dict
    reset_seq: int = 0


class ErrorResponse(msgspec.Struct):
    type: str
    error: dict


class NamesError(msgspec.Struct):
    type: str
    error: dict
    total: int = 0
    offset: int = 0
    limit: int = 0
    consumers: list = []        # nats-server writes an empty list


class PauseError(msgspec.Struct):
    """A failed CONSUMER.PAUSE still carries the (zero) pause fields."""
    type: str
    error: dict
    paused: bool = False
    pause_until: str = ZERO_TIME


class NamesResponse(msgspec.Struct):
    type: str
    total: int
    offset: int
    limit: int
    consumers: list[str]


class ListResponse(msgspec.Struct):
    type: str
    total: int
    offset: int
    limit: int
    consumers: list[ConsumerInfo]


class DeleteResponse(msgspec.Struct):
    type: str
    success: bool = True


class PauseResponse(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    paused: bool                # always written (Go has no omitempty on it)
    pause_until: str
    pause_remaining: int = 0


class UnpinResponse(msgspec.Struct):
    type: str


class PagedRequest(msgspec.Struct):
    offset: int = 0


def _info_fields(info: ConsumerInfo) -> dict:
    """The info's fields, its config as the wire shows it."""
    fields = {f: getattr(info, f) for f in info.__struct_fields__}
    fields["config"] = wire_config(info.config)
    return fields


class ConsumerApi:
    """Routes ``$JS.API.CONSUMER.*`` subjects of one embedded JetStream."""

    def __init__(self, js):
        self.js = js
        # prefix -> (response type, handler(tokens, payload), how many name tokens)
        self._routes: list[tuple[str, str, Callable, int]] = [
            ("DURABLE.CREATE.", CREATE_TYPE, self.create, 2),
            ("CREATE.", CREATE_TYPE, self.create, 0),
            ("INFO.", INFO_TYPE, self.info, 2),
            ("DELETE.", DELETE_TYPE, self.delete, 2),
            ("NAMES.", NAMES_TYPE, self.names, 1),
            ("LIST.", LIST_TYPE, self.listing, 1),
            ("PAUSE.", PAUSE_TYPE, self.pause, 2),
            ("UNPIN.", UNPIN_TYPE, self.unpin, 2),
        ]

    def resolve(self, subject: str) -> tuple[str, Callable, list[str]] | None:
        """(response type, handler, subject tokens after the prefix), or None."""
        if not subject.startswith(PREFIX):
            return None
        rest = subject[len(PREFIX):]
        for prefix, response_type, handler, count in self._routes:
            if not rest.startswith(prefix):
                continue
            tokens = rest[len(prefix):].split(".")
            if any(not t for t in tokens):
                return None
            if count and len(tokens) != count:
                return None
            if not count and not 1 <= len(tokens):
                return None
            return response_type, handler, tokens
        return None

    def answer(self, resolved, payload: bytes, subject: str) -> bytes:
        response_type, handler, tokens = resolved
        try:
            return gojson.encode(handler(response_type, tokens, bytes(payload or b""), subject))
        except api_errors.ApiError as exc:
            return gojson.encode(self.error_response(response_type, exc))

    @staticmethod
    def error_response(response_type: str, exc: api_errors.ApiError) -> msgspec.Struct:
        if response_type in (NAMES_TYPE, LIST_TYPE):
            return NamesError(type=response_type, error=exc.to_dict())
        if response_type == PAUSE_TYPE:
            return PauseError(type=response_type, error=exc.to_dict())
        return ErrorResponse(type=response_type, error=exc.to_dict())

    # -- create ---------------------------------------------------------------------------
    def create(self, response_type: str, tokens: list[str], payload: bytes, subject: str):
        """CONSUMER.CREATE.<stream>[.<consumer>[.<filter>]] and
        CONSUMER.DURABLE.CREATE.<stream>.<durable>."""
        target = consumercreate.parse_create_subject(subject)
        if target is None:
            raise api_errors.JSInvalidJSONErr(err="bad create subject")
        request = consumercreate.decode_request(payload)
        info = self.js.create_consumer(target, request)
        return ConsumerInfoResponse(type=response_type, **_info_fields(info))

    # -- read -----------------------------------------------------------------------------
    def info(self, response_type: str, tokens: list[str], payload: bytes, subject: str):
        if not is_empty_request(payload):
            raise api_errors.JSNotEmptyRequestErr()
        info = self.js.consumer_info(tokens[0], tokens[1])
        return ConsumerInfoResponse(type=response_type, **_info_fields(info))

    def _offset(self, payload: bytes) -> int:
        if not is_json_object_or_array(payload):
            return 0
        return max(requests.decode(payload, requests.CONSUMERS, PagedRequest).offset, 0)

    def names(self, response_type: str, tokens: list[str], payload: bytes, subject: str):
        offset = self._offset(payload)
        names = self.js.consumer_names(tokens[0])
        offset = min(offset, len(names))
        return NamesResponse(type=response_type, total=len(names), offset=offset,
                             limit=NAMES_LIMIT, consumers=names[offset:offset + NAMES_LIMIT])

    def listing(self, response_type: str, tokens: list[str], payload: bytes, subject: str):
        offset = self._offset(payload)
        infos = self.js.consumers_info(tokens[0])
        offset = min(offset, len(infos))
        page = [msgspec.structs.replace(i, config=wire_config(i.config, dynamic=False))
                for i in infos[offset:offset + LIST_LIMIT]]
        return ListResponse(type=response_type, total=len(infos), offset=offset,
                            limit=LIST_LIMIT, consumers=page)

    # -- change ---------------------------------------------------------------------------
    def delete(self, response_type: str, tokens: list[str], payload: bytes, subject: str):
        if not is_empty_request(payload):
            raise api_errors.JSNotEmptyRequestErr()
        self.js.delete_consumer(tokens[0], tokens[1])
        return DeleteResponse(type=response_type)

    def pause(self, response_type: str, tokens: list[str], payload: bytes, subject: str):
        until = None        # no time, or Go's zero time: resume
        if is_json_object_or_array(payload):
            until = requests.decode_fields(payload, requests.CONSUMER_PAUSE).get("pause_until")
        if until is not None and until < 0:
            until = None    # before 1970 (the zero time among them): taken as no time
        info = self.js.pause_consumer(tokens[0], tokens[1], until)
        now = self.js.clock()
        return PauseResponse(type=response_type, paused=info.paused,
                             pause_until=ZERO_TIME if until is None else rfc3339_nano(until),
                             pause_remaining=time_sub(until, now) if info.paused else 0)

    def reset(self, consumer, payload: bytes, hdr: bytes | None) -> bytes:
        """CONSUMER.RESET.<stream>.<consumer> of a consumer in hand (the lock held): an
        optional ``{"seq": N}`` read with json.Unmarshal (any non-empty body is decoded;
        null, {} and seq 0 reset to the ack floor).  The caller sends the answer, then
        lets the consumer deliver."""
        try:
            if api_level_too_high(hdr):
                raise api_errors.JSRequiredApiLevelErr()
            seq = 0
            if payload:
                try:
                    seq = gojson.unmarshal(payload, requests.CONSUMER_RESET).get("seq") or 0
                except gojson.GoJSONError as exc:
                    raise api_errors.JSInvalidJSONErr(err=exc) from None
            info = self.js.consumers.reset_locked(consumer, seq)
        except api_errors.ApiError as exc:
            return gojson.encode(ResetError(type=RESET_TYPE, error=exc.to_dict()))
        return gojson.encode(ResetResponse(type=RESET_TYPE, **_info_fields(info)))

    def unpin(self, response_type: str, tokens: list[str], payload: bytes, subject: str):
        try:    # json.Unmarshal here, not the strict request decoder
            group = gojson.unmarshal(payload, requests.CONSUMER_UNPIN).get("group", "")
        except gojson.GoJSONError as exc:
            raise api_errors.JSInvalidJSONErr(err=exc) from None
        if not group:
            raise api_errors.JSInvalidJSONErr(err="consumer group not specified")
        self.js.unpin_consumer(tokens[0], tokens[1], group)
        return UnpinResponse(type=response_type)
