"""CONSUMER.CREATE requests as nats-server 2.15 checks them, up to the configuration it
stores and answers.

Subjects (``parse_create_subject``):

* ``$JS.API.CONSUMER.CREATE.<stream>``                    legacy ephemeral (or named by
  the body's ``name``);
* ``$JS.API.CONSUMER.CREATE.<stream>.<consumer>``          named (durable when the body
  sets ``durable_name``);
* ``$JS.API.CONSUMER.CREATE.<stream>.<consumer>.<filter>`` named, the rest of the subject
  being the one filter subject;
* ``$JS.API.CONSUMER.DURABLE.CREATE.<stream>.<durable>``   legacy durable.

``plan_create`` runs nats-server's handler and ``addConsumerWithAction`` in their order:

1. ``decode_request``: the body as nats-server's strict Go decoder reads it (an empty body
   is an empty request; unknown keys, type errors, bad enum values and times are
   JSInvalidJSONErr with Go's texts; several JSON values in a row merge);
2. the body's ``stream_name`` against the subject (JSStreamMismatchErr);
3. path separators in the consumer name (JSConsumerNameContainsPathSeparatorsErr);
4. the form's own rules, ``check_legacy_durable`` / ``check_named`` /
   ``check_legacy_ephemeral``: durable name present and equal to the subject's, the
   subject's name given to the config, no durable on the legacy ephemeral subject, the
   subject's filter equal to ``filter_subject`` and not combined with ``filter_subjects``;
5. ``check_single_server``: num_replicas > 1 (JSStreamReplicasNotSupportedErr);
6. the stream must exist (JSStreamNotFoundErr);
7. an existing consumer of that name keeps its ``pause_until``;
8. ``consumerconfig.with_static_metadata``, ``normalize`` (pedantic), ``validate``;
9. an existing consumer: the ``create`` action needs the same configuration
   (JSConsumerAlreadyExists), the work-queue partition check, ``check_update`` and
   ``apply_update``; otherwise the ``update`` action fails (JSConsumerDoesNotExist), then
   ``check_new_consumer`` and the ephemeral inactive threshold.

What nats-server then does with the store (a failure answers ``store_failed_error()``)
is the consumer engine's part.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Mapping, NamedTuple

import msgspec

from jsstore.consumer import config as cc
from jsstore.stream import config as streamconfig
from jsstore.wire import apierrors as api_errors
from jsstore.wire import api as wire_api

CONSUMER_CREATE_TYPE = wire_api.TYPE_PREFIX + "consumer_create_response"
CREATE_PREFIX = "$JS.API.CONSUMER.CREATE."
DURABLE_CREATE_PREFIX = "$JS.API.CONSUMER.DURABLE.CREATE."

Action = Literal["", "create", "update"]


class CreateConsumerRequest(msgspec.Struct, omit_defaults=True):
    """nats-server's CreateConsumerRequest body."""
    stream_name: str = ""
    config: cc.ConsumerConfig = msgspec.field(default_factory=cc.ConsumerConfig)
    action: Action = ""
    pedantic: bool = False


def _quote_rune(rune: int | None) -> str:
    """Go's strconv.QuoteRune, as its JSON decoder names an unexpected character."""
    return "'" + cc.go_escaped_rune(0xFFFD if rune is None else rune, "'") + "'"


# -- Go's JSON syntax ------------------------------------------------------------------------
class GoJSONError(ValueError):
    """Why Go's decoder refuses a body, in its words."""


class _Node(msgspec.Struct, array_like=True):
    """One JSON value: kind (object, array, string, number, true, false, null), its
    value (pairs, items, text) and where it lies in the body (for Go's raw bytes)."""
    kind: str
    value: object
    start: int
    end: int


_WHITESPACE = b" \t\r\n"
_ESCAPES = {ord('"'): '"', ord("\\"): "\\", ord("/"): "/", ord("b"): "\b", ord("f"): "\f",
            ord("n"): "\n", ord("r"): "\r", ord("t"): "\t"}
_HEX = re.compile(rb"[0-9a-fA-F]{4}")


class _Scanner:
    """Reads JSON values one after another with the syntax errors (text and offset) that
    nats-server's decoder reports."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def at_end(self) -> bool:
        while self.pos < len(self.data) and self.data[self.pos] in _WHITESPACE:
            self.pos += 1
        return self.pos >= len(self.data)

    def _fail(self, context: str, at: int | None = None) -> GoJSONError:
        at = self.pos if at is None else at
        rune, size = cc.utf8_rune_at(self.data, at)
        return GoJSONError(f"invalid character {_quote_rune(rune)} {context} "
                           f"at offset {at + size}")

    def _next(self) -> int:
        """The next non-space byte (unexpected EOF when there is none)."""
        if self.at_end():
            raise GoJSONError("unexpected EOF")
        return self.data[self.pos]

    def value(self) -> _Node:
        byte = self._next()
        if byte == ord("{"):
            return self._object()
        if byte == ord("["):
            return self._array()
        if byte == ord('"'):
            start = self.pos
            return _Node("string", self._string(), start, self.pos)
        if byte == ord("-") or 0x30 <= byte <= 0x39:
            return self._number()
        for literal in ("true", "false", "null"):
            if byte == ord(literal[0]):
                return self._literal(literal)
        raise self._fail("looking for beginning of value")

    def _object(self) -> _Node:
        start, pairs = self.pos, []
        self.pos += 1
        if self._next() == ord("}"):
            self.pos += 1
            return _Node("object", pairs, start, self.pos)
        while True:
            if self._next() != ord('"'):
                raise self._fail("looking for beginning of object key string")
            key = self._string()
            if self._next() != ord(":"):
                raise self._fail("after object key")
            self.pos += 1
            pairs.append((key, self.value()))
            byte = self._next()
            self.pos += 1
            if byte == ord("}"):
                return _Node("object", pairs, start, self.pos)
            if byte != ord(","):
                raise self._fail("after object key:value pair", self.pos - 1)

    def _array(self) -> _Node:
        start, items = self.pos, []
        self.pos += 1
        if self._next() == ord("]"):
            self.pos += 1
            return _Node("array", items, start, self.pos)
        while True:
            items.append(self.value())
            byte = self._next()
            self.pos += 1
            if byte == ord("]"):
                return _Node("array", items, start, self.pos)
            if byte != ord(","):
                raise self._fail("after array element", self.pos - 1)

    def _string(self) -> str:
        data, parts = self.data, []
        self.pos += 1
        run = self.pos
        while True:
            if self.pos >= len(data):
                raise GoJSONError("unexpected EOF")
            byte = data[self.pos]
            if byte == ord('"'):
                parts.append(data[run:self.pos].decode("utf-8", "replace"))
                self.pos += 1
                return "".join(parts)
            if byte < 0x20:
                raise self._fail("in string")
            if byte == ord("\\"):
                parts.append(data[run:self.pos].decode("utf-8", "replace"))
                parts.append(self._escape())
                run = self.pos
            else:
                self.pos += 1

    def _escape(self) -> str:
        data, at = self.data, self.pos
        if at + 1 >= len(data):
            raise GoJSONError("unexpected EOF")
        kind = data[at + 1]
        if kind in _ESCAPES:
            self.pos += 2
            return _ESCAPES[kind]
        if kind != ord("u"):
            rune, size = cc.utf8_rune_at(data, at + 1)
            text = data[at:at + 1 + size].decode("utf-8", "replace")
            raise GoJSONError(f"invalid escape sequence `{text}` in string at offset "
                              f"{at + 1 + size}")
        if at + 6 > len(data):
            raise GoJSONError("unexpected EOF")
        if not _HEX.fullmatch(data[at + 2:at + 6]):
            text = data[at:at + 6].decode("utf-8", "replace")
            raise GoJSONError(f"invalid escape sequence `{text}` in string at offset {at + 6}")
        high = int(data[at + 2:at + 6], 16)
        self.pos += 6
        if 0xD800 <= high < 0xDC00 and data[self.pos:self.pos + 2] == b"\\u" \
                and _HEX.fullmatch(data[self.pos + 2:self.pos + 6]):
            low = int(data[self.pos + 2:self.pos + 6], 16)
            if 0xDC00 <= low < 0xE000:
                self.pos += 6
                return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
        return "\ufffd" if 0xD800 <= high < 0xE000 else chr(high)

    def _digits(self) -> None:
        while self.pos < len(self.data) and 0x30 <= self.data[self.pos] <= 0x39:
            self.pos += 1

    def _need_digit(self) -> None:
        if self.pos >= len(self.data):
            raise GoJSONError("unexpected EOF")
        if not 0x30 <= self.data[self.pos] <= 0x39:
            raise self._fail("in numeric literal")

    def _number(self) -> _Node:
        data, start = self.data, self.pos
        if data[self.pos] == ord("-"):
            self.pos += 1
            self._need_digit()
        if data[self.pos] == ord("0"):
            self.pos += 1
        else:
            self._digits()
        if data[self.pos:self.pos + 1] == b".":
            self.pos += 1
            self._need_digit()
            self._digits()
        if data[self.pos:self.pos + 1] in (b"e", b"E"):
            self.pos += 1
            if data[self.pos:self.pos + 1] in (b"+", b"-"):
                self.pos += 1
            self._need_digit()
            self._digits()
        return _Node("number", data[start:self.pos].decode(), start, self.pos)

    def _literal(self, literal: str) -> _Node:
        start = self.pos
        for expected in literal:
            if self.pos >= len(self.data):
                raise GoJSONError("unexpected EOF")
            if self.data[self.pos] != ord(expected):
                raise self._fail(f"in literal {literal} (expecting '{expected}')")
            self.pos += 1
        return _Node(literal, None, start, self.pos)


# -- Go's JSON decoding into nats-server's types -------------------------------------------
_KEEP = object()     # a JSON null that leaves the Go value as it was


class _GoType(NamedTuple):
    """A Go type of nats-server's request as its JSON decoder treats it: `kind` is string,
    bool, int (between `low` and `high`), time, slice (of `element`), map (of string
    `element`), struct (`fields` by JSON name) or enum (a type with its own UnmarshalJSON
    taking the raw `values`, else failing with `error`, where %q is the Go-quoted raw
    JSON and %v the raw JSON)."""
    kind: str
    name: str = ""                      # the Go type name, as type errors give it
    low: int = 0
    high: int = 0
    element: "_GoType | None" = None
    fields: "dict[str, _GoType] | None" = None
    values: dict[bytes, str] | None = None
    error: str = ""


_STRING = _GoType("string", "string")
_BOOL = _GoType("bool", "bool")
_INT = _GoType("int", "int", -(1 << 63), (1 << 63) - 1)
_DURATION = _GoType("int", "time.Duration", -(1 << 63), (1 << 63) - 1)
_UINT64 = _GoType("int", "uint64", 0, (1 << 64) - 1)
_TIME = _GoType("time", "time.Time")


def _enum(values: dict[str, str], error: str) -> _GoType:
    return _GoType("enum", values={('"' + raw + '"').encode(): value
                                   for raw, value in values.items()}, error=error)


_CONFIG_FIELDS = {
    "durable_name": _STRING, "name": _STRING, "description": _STRING,
    "deliver_policy": _enum({p: p for p in cc.DELIVER_POLICIES} | {"undefined": "all"},
                            "can not unmarshal %q"),
    "opt_start_seq": _UINT64, "opt_start_time": _TIME,
    "ack_policy": _enum({p: p for p in cc.ACK_POLICIES}, "can not unmarshal %q"),
    "ack_wait": _DURATION, "max_deliver": _INT,
    "backoff": _GoType("slice", "[]time.Duration", element=_DURATION),
    "filter_subject": _STRING,
    "filter_subjects": _GoType("slice", "[]string", element=_STRING),
    "replay_policy": _enum({p: p for p in cc.REPLAY_POLICIES}, "can not unmarshal %q"),
    "rate_limit_bps": _UINT64, "sample_freq": _STRING, "max_waiting": _INT,
    "max_ack_pending": _INT, "flow_control": _BOOL, "headers_only": _BOOL,
    "max_batch": _INT, "max_expires": _DURATION, "max_bytes": _INT,
    "deliver_subject": _STRING, "deliver_group": _STRING, "idle_heartbeat": _DURATION,
    "inactive_threshold": _DURATION, "num_replicas": _INT, "mem_storage": _BOOL,
    "direct": _BOOL, "sourcing": _BOOL,
    "metadata": _GoType("map", "map[string]string", element=_STRING), "pause_until": _TIME,
    "priority_groups": _GoType("slice", "[]string", element=_STRING),
    "priority_policy": _enum({p: p for p in cc.PRIORITY_POLICIES},
                             "unknown priority policy: %v"),
    "priority_timeout": _DURATION,
}
_CONFIG = _GoType("struct", "server.ConsumerConfig", fields=_CONFIG_FIELDS)
_REQUEST = _GoType("struct", "server.CreateConsumerRequest", fields={
    "stream_name": _STRING, "config": _CONFIG,
    "action": _enum({"": "", "create": "create", "update": "update"},
                    "unknown consumer action: %v"),
    "pedantic": _BOOL,
})
_KIND_NAMES = {"object": "object", "array": "array", "string": "string", "number": "number",
               "true": "bool", "false": "bool"}
_SIGNED_TEXT = re.compile(r"-?[0-9]+")
_UNSIGNED_TEXT = re.compile(r"[0-9]+")


class _Decoder:
    """Go's decoding of parsed JSON into nats-server's types; the first error wins."""

    def __init__(self, data: bytes, strict: bool):
        self.data, self.strict = data, strict

    def _type_error(self, node: _Node, go_type: str, path: list, literal: bool = False):
        kind = _KIND_NAMES[node.kind] + (f" {node.value}" if literal else "")
        where = ".".join(str(part) for part in path)
        if len(path) == 1:
            return GoJSONError(f"json: cannot unmarshal {kind} into Go value of type {go_type}")
        into = where if isinstance(path[-1], int) else f"Go struct field {where}"
        return GoJSONError(f"json: cannot unmarshal {kind} into {into} of type {go_type}")

    def decode(self, node: _Node, kind: _GoType, path: list, current=None):
        """The Go value `node` gives for a value of `kind` (`current`: what it held, for
        structs and maps, which JSON objects merge into); _KEEP for a null that
        leaves it."""
        if kind.kind == "enum":
            raw = self.data[node.start:node.end]
            if raw in kind.values:
                return kind.values[raw]
            quoted = (cc.go_strconv_quote(raw) if "%q" in kind.error
                      else raw.decode("utf-8", "replace"))
            raise GoJSONError(kind.error.replace("%q", quoted).replace("%v", quoted))
        if node.kind == "null":
            return None if kind.kind in ("time", "slice", "map") else _KEEP
        handler = getattr(self, "_decode_" + kind.kind)
        return handler(node, kind, path, current)

    def _decode_string(self, node, kind, path, current):
        if node.kind != "string":
            raise self._type_error(node, kind.name, path)
        return node.value

    def _decode_bool(self, node, kind, path, current):
        if node.kind not in ("true", "false"):
            raise self._type_error(node, kind.name, path)
        return node.kind == "true"

    def _decode_int(self, node, kind, path, current):
        if node.kind != "number":
            raise self._type_error(node, kind.name, path)
        text = node.value
        pattern = _SIGNED_TEXT if kind.low < 0 else _UNSIGNED_TEXT
        if not pattern.fullmatch(text) or not kind.low <= int(text) <= kind.high:
            raise self._type_error(node, kind.name, path, literal=True)
        return int(text)

    def _decode_time(self, node, kind, path, current):
        if node.kind != "string":
            raise self._type_error(node, kind.name, path)
        try:
            return cc.format_go_time(cc.parse_go_time(node.value))
        except cc.TimeParseError as exc:
            raise GoJSONError(str(exc)) from None

    def _decode_slice(self, node, kind, path, current):
        if node.kind != "array":
            raise self._type_error(node, kind.name, path)
        items = []
        for index, item in enumerate(node.value):
            value = self.decode(item, kind.element, path + [index])
            items.append(("" if kind.element is _STRING else 0) if value is _KEEP else value)
        return items

    def _decode_map(self, node, kind, path, current):
        if node.kind != "object":
            raise self._type_error(node, kind.name, path)
        out = dict(current or {})
        for key, item in node.value:
            value = self.decode(item, kind.element, path + [key])
            out[key] = "" if value is _KEEP else value
        return out

    def _decode_struct(self, node, kind, path, current):
        if node.kind != "object":
            raise self._type_error(node, kind.name, path)
        fields, out = kind.fields, dict(current or {})
        for key, item in node.value:
            name = key if key in fields else key.lower() if key.isascii() else None
            if name not in fields:
                if self.strict:
                    raise GoJSONError(f"json: unknown field {cc.go_strconv_quote(key)}")
                continue
            value = self.decode(item, fields[name], path + [name], out.get(name))
            if value is not _KEEP:
                out[name] = value
        return out


def _decode_values(data: bytes, kind: _GoType, root: str, strict: bool) -> dict:
    """Every JSON value of the body decoded, one after another, into one Go value (as
    nats-server's json.Decoder loop does)."""
    scanner, decoder, out = _Scanner(data), _Decoder(data, strict), {}
    while not scanner.at_end():
        value = decoder.decode(scanner.value(), kind, [root], out)
        if value is not _KEEP:
            out = value
    return out


def _config_from(fields: dict) -> cc.ConsumerConfig:
    values = {name: value for name, value in fields.items() if value is not None
              or name in ("opt_start_time", "pause_until")}
    if values.get("priority_policy") == "none":
        values["priority_policy"] = None
    return cc.ConsumerConfig(**values)


def decode_request(payload: bytes) -> CreateConsumerRequest:
    """A CONSUMER.CREATE body as nats-server decodes it (strictly: unknown keys refused),
    JSInvalidJSONErr with Go's text when it cannot."""
    try:
        fields = _decode_values(bytes(payload or b""), _REQUEST, "CreateConsumerRequest", True)
    except GoJSONError as exc:
        raise api_errors.JSInvalidJSONErr(err=exc) from None
    config = _config_from(fields.pop("config", {}))
    return CreateConsumerRequest(config=config, **fields)


def decode_config(payload: bytes) -> cc.ConsumerConfig:
    """A consumer configuration JSON object as Go's decoder reads it (unknown keys ignored)."""
    try:
        fields = _decode_values(bytes(payload or b""), _CONFIG, "ConsumerConfig", False)
    except GoJSONError as exc:
        raise api_errors.JSInvalidJSONErr(err=exc) from None
    return _config_from(fields)


# -- the request checks ----------------------------------------------------------------------
@dataclass(frozen=True)
class CreateSubject:
    """What a create subject names: its form, the stream, the consumer and the filter."""
    form: Literal["ephemeral", "named", "durable"]
    stream: str
    consumer: str = ""
    filter: str = ""


def parse_create_subject(subject: str) -> CreateSubject | None:
    """The create subject's parts; None for a subject no create handler serves."""
    if subject.startswith(DURABLE_CREATE_PREFIX):
        tokens = subject[len(DURABLE_CREATE_PREFIX):].split(".")
        if len(tokens) != 2 or not all(tokens) or "*" in tokens or ">" in tokens:
            return None
        return CreateSubject("durable", tokens[0], tokens[1])
    if not subject.startswith(CREATE_PREFIX):
        return None
    tokens = subject[len(CREATE_PREFIX):].split(".")
    if not all(tokens) or tokens[0] in ("*", ">") or (len(tokens) > 1 and tokens[1] in ("*", ">")):
        return None
    if len(tokens) == 1:
        return CreateSubject("ephemeral", tokens[0])
    return CreateSubject("named", tokens[0], tokens[1], ".".join(tokens[2:]))


def check_stream_and_name(request: CreateConsumerRequest, target: CreateSubject) -> None:
    """The checks every form shares: the stream of the body is the subject's, and the
    consumer name (the subject's, or the body's on the legacy ephemeral subject) has no
    path separators."""
    if request.stream_name != target.stream:
        raise api_errors.JSStreamMismatchErr()
    name = target.consumer if target.form != "ephemeral" else request.config.name
    if "/" in name or "\\" in name:
        raise api_errors.JSConsumerNameContainsPathSeparatorsErr()


def check_legacy_durable(config: cc.ConsumerConfig, durable: str) -> cc.ConsumerConfig:
    """``CONSUMER.DURABLE.CREATE.<stream>.<durable>``: the body must name the same durable;
    the consumer takes the durable's name."""
    if not config.durable_name:
        raise api_errors.JSConsumerDurableNameNotSetErr()
    if config.durable_name != durable:
        raise api_errors.JSConsumerDurableNameNotMatchSubjectErr()
    return msgspec.structs.replace(config, name=durable)


def check_named(config: cc.ConsumerConfig, consumer: str, filter: str) -> cc.ConsumerConfig:
    """``CONSUMER.CREATE.<stream>.<consumer>[.<filter>]``: a durable name must be the
    subject's; the consumer takes the subject's name; a filter in the subject must be the
    body's filter_subject, and rules out filter_subjects."""
    if config.durable_name and config.durable_name != consumer:
        raise api_errors.JSConsumerDurableNameNotMatchSubjectErr()
    if filter and config.filter_subjects:
        raise api_errors.JSConsumerMultipleFiltersNotAllowed()
    if filter and config.filter_subject != filter:
        raise api_errors.JSConsumerCreateFilterSubjectMismatchErr()
    return msgspec.structs.replace(config, name=consumer)


def check_legacy_ephemeral(config: cc.ConsumerConfig) -> cc.ConsumerConfig:
    """``CONSUMER.CREATE.<stream>``: no durable name (a ``name`` in the body is kept)."""
    if config.durable_name:
        raise api_errors.JSConsumerEphemeralWithDurableNameErr()
    return config


def check_single_server(config: cc.ConsumerConfig) -> None:
    """One server keeps one copy: more replicas are refused before the stream is looked
    up."""
    if (config.num_replicas or 0) > 1:
        raise api_errors.JSStreamReplicasNotSupportedErr()


def check_request(request: CreateConsumerRequest, target: CreateSubject) -> cc.ConsumerConfig:
    """The handler's checks before the stream is looked up, in nats-server's order; the
    configuration with the names the subject gives it."""
    check_stream_and_name(request, target)
    if target.form == "durable":
        config = check_legacy_durable(request.config, target.consumer)
    elif target.form == "named":
        config = check_named(request.config, target.consumer, target.filter)
    else:
        config = check_legacy_ephemeral(request.config)
    check_single_server(config)
    return config


def parse_create_request(payload: bytes) -> CreateConsumerRequest:
    """The body of a create request (``decode_request``)."""
    return decode_request(payload)


def check_create_subject(stream: str, consumer: str, filter: str,
                         request: CreateConsumerRequest) -> CreateConsumerRequest:
    """The request checks of ``CONSUMER.CREATE.<stream>[.<consumer>[.<filter>]]`` (no
    consumer: the legacy ephemeral form); `request.config` gets the subject's names."""
    form = "named" if consumer else "ephemeral"
    request.config = check_request(request, CreateSubject(form, stream, consumer, filter))
    return request


def check_durable_subject(stream: str, durable: str,
                          request: CreateConsumerRequest) -> CreateConsumerRequest:
    """The request checks of ``CONSUMER.DURABLE.CREATE.<stream>.<durable>``;
    `request.config` gets the durable's name."""
    request.config = check_request(request, CreateSubject("durable", stream, durable))
    return request


@dataclass(frozen=True)
class CreatePlan:
    """What a create request comes to: the consumer's name ("" for a new unnamed
    ephemeral, whose name the engine picks; nats-server then answers a config without
    "name"), the configuration to store and answer, and whether the consumer exists."""
    stream: str
    name: str
    config: cc.ConsumerConfig
    exists: bool
    action: Action


def plan_request(request: CreateConsumerRequest, target: CreateSubject, *,
                 stream: streamconfig.StreamConfig | None,
                 consumers: Mapping[str, cc.ConsumerConfig],
                 limits: cc.ServerLimits = cc.NO_LIMITS) -> CreatePlan:
    """A decoded request for `target`, against the stream's configuration (None: no such
    stream) and its consumers' stored configurations by name."""
    config = check_request(request, target)
    if stream is None:
        raise api_errors.JSStreamNotFoundErr()
    lookup = target.consumer if target.form != "ephemeral" else config.name
    if lookup in consumers:
        config = msgspec.structs.replace(config, pause_until=consumers[lookup].pause_until)
    config = cc.with_static_metadata(config)
    config = cc.normalize(config, stream, pedantic=request.pedantic, limits=limits)
    cc.validate(config, stream, limits=limits)
    name = config.durable_name or config.name
    others = [other for other_name, other in consumers.items() if other_name != name]
    current = consumers.get(name) if name else None
    if current is not None:
        if request.action == "create" and not cc.same_config(config, current):
            raise api_errors.JSConsumerAlreadyExists()
        cc.check_workqueue_update(config, stream, name, others)
        cc.check_update(current, config, stream)
        return CreatePlan(target.stream, name, cc.apply_update(current, config), True,
                          request.action)
    if request.action == "update":
        raise api_errors.JSConsumerDoesNotExist()
    cc.check_new_consumer(config, stream, others, limits=limits)
    return CreatePlan(target.stream, name, cc.with_ephemeral_threshold(config), False,
                      request.action)


def plan_create(subject: str, payload: bytes, *, stream: streamconfig.StreamConfig | None,
                consumers: Mapping[str, cc.ConsumerConfig],
                limits: cc.ServerLimits = cc.NO_LIMITS) -> CreatePlan | None:
    """A CONSUMER.CREATE or DURABLE.CREATE request checked as nats-server does (see the
    module's docstring); None for a subject no create handler serves."""
    target = parse_create_subject(subject)
    if target is None:
        return None
    return plan_request(decode_request(payload), target, stream=stream, consumers=consumers,
                        limits=limits)


def store_failed_error() -> api_errors.ApiError:
    """The answer when the consumer's store cannot be made (nats-server hides the cause)."""
    return api_errors.JSConsumerCreateErrF(err="error creating store for consumer")


def create_error_response(exc: api_errors.ApiError) -> bytes:
    """The JSON answer to a failed create request, as nats-server writes it."""
    return cc.go_json({"type": CONSUMER_CREATE_TYPE, "error": exc.to_dict()})
