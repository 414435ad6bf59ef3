"""Go's encoding/json: decoding request bodies into Go types, and writing answers.

Decoding. A body is decoded into a `GoType` (built with `struct`, `slice_of`, `map_of`,
`enum`, `time_type` and the scalar types below) the way Go decodes into the struct
nats-server declares:

* ``null`` leaves a field as it was (its zero value), except for pointers, slices, maps and
  times, which it sets to nil (None here); a type with its own UnmarshalJSON (`enum`)
  sees the raw ``null`` and refuses it;
* a member name matches a field exactly, else case-insensitively (Unicode simple folding:
  ``ſ`` is ``s``, ``K`` (Kelvin) is ``k``); a later duplicate wins, and an object given
  twice for a struct or map merges into it;
* unknown members are skipped, or refused (``json: unknown field "x"``) where nats-server
  decodes strictly;
* the first wrong type is the error: ``json: cannot unmarshal string into Go struct
  field JSApiMsgGetRequest.seq of type uint64`` (a number's literal is quoted when it is
  a number that does not fit: ``number 1.5``, ``number -1``).

Two of Go's entry points, whose texts differ:

* `unmarshal`  ``json.Unmarshal``: one value, syntax checked over the whole text first,
  "unexpected end of JSON input" (the pull request's type errors name no struct:
  ``Go struct field .batch``);
* `decode_request`  nats-server's unmarshalRequest for ``$JS.API`` bodies: a
  ``json.Decoder`` (strict: unknown fields refused) reading values one after another
  into the same target until the end, "unexpected EOF", syntax errors with
  `` at offset N`` added; an empty body decodes to nothing.

Type errors name the struct and the path of members as the body spells them
(``CreateConsumerRequest.config.Max_Deliver``; a slice element ``into
StreamConfigRequest.sources.0 of type server.StreamSource``).

Both return the fields that were set as a dict by JSON name (nested structs as dicts),
and raise GoJSONError with Go's text. A fast path reads well-formed bodies with msgspec and
hands anything it cannot vouch for (an error, a key in other letter case, a backslash
near an enum, an object key given twice) to the exact reader of `jsonsyntax`.

Encoding. `encode` writes JSON as Go's encoding/json does: compact, UTF-8, with ``<``,
``>``, ``&``, U+2028 and U+2029 escaped as ``\\u003c`` etc. and invalid UTF-8 (surrogate-
escaped bytes, lone surrogates) as U+FFFD.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import msgspec

from jsstore.deferred import deferred
from jsstore.gocompat.jsonsyntax import (
    ARRAY,
    FALSE,
    MAX_NESTING_DEPTH,
    NULL,
    NUMBER,
    OBJECT,
    STRING,
    TRUE,
    WHITESPACE,
    GoJSONError,
    GoSyntaxError,
    Node,
    UnexpectedEnd,
    go_string,
    scan_document,
    scan_value,
    skip_whitespace,
)
from jsstore.gocompat.quoting import quote

stdjson = deferred("json")     # for encode_indent only

__all__ = ["GoJSONError", "GoType", "STRING_TYPE", "BOOL", "INT", "INT32", "INT64", "UINT64",
           "DURATION", "struct", "slice_of", "map_of", "enum", "text_enum", "time_type", "unmarshal",
           "decode_request", "unmarshal_exact", "decode_request_exact",
           "is_empty_object", "encode", "MAX_NESTING_DEPTH", "go_string"]


class GoType(NamedTuple):
    """A Go type as encoding/json treats it. `kind` is one of string, bool, int (from
    `low` to `high`), time (a string read by `parse`), slice (of `element`), map (string
    keys, `element` values), struct (`fields` by JSON name), enum (a type with its own
    UnmarshalJSON taking the raw JSON `values`, else failing with `error`, where %q is
    the raw JSON Go-quoted and %v the raw JSON) or text_enum (an UnmarshalJSON that reads
    a Go string first, null being "", and looks that text up in `values`)."""
    kind: str
    name: str                                   # the Go type, as type errors print it
    low: int = 0
    high: int = 0
    element: "GoType | None" = None
    fields: "dict[str, GoType] | None" = None
    values: "dict[bytes, object] | None" = None
    error: str = ""
    parse: "Callable[[str], object] | None" = None   # text -> value; ValueError(Go's text)


STRING_TYPE = GoType("string", "string")
BOOL = GoType("bool", "bool")
INT = GoType("int", "int", -(1 << 63), (1 << 63) - 1)
INT32 = GoType("int", "int32", -(1 << 31), (1 << 31) - 1)
INT64 = GoType("int", "int64", -(1 << 63), (1 << 63) - 1)
UINT64 = GoType("int", "uint64", 0, (1 << 64) - 1)
DURATION = GoType("int", "time.Duration", -(1 << 63), (1 << 63) - 1)


def struct(name: str, fields: dict[str, GoType]) -> GoType:
    """A Go struct named `name` (``server.StreamConfig``) with fields by JSON name (lower
    case, as nats-server's tags are); embedded structs are given flattened."""
    return GoType("struct", name, fields=dict(fields))


def slice_of(element: GoType, name: str = "") -> GoType:
    return GoType("slice", name or "[]" + element.name, element=element)


def map_of(element: GoType, name: str = "") -> GoType:
    return GoType("map", name or "map[string]" + element.name, element=element)


def enum(values: dict[str, object], error: str, name: str = "") -> GoType:
    """A type with its own UnmarshalJSON accepting the JSON strings `values` (text ->
    the value decoded) and refusing anything else with `error` (%q, %v: the raw JSON)."""
    raw = {('"' + text + '"').encode(): value for text, value in values.items()}
    return GoType("enum", name, values=raw, error=error)


def text_enum(values: dict[str, object], error: str, name: str = "") -> GoType:
    """A type whose UnmarshalJSON decodes a Go string (null: "") and accepts the texts
    `values` (text -> the value decoded), refusing any other text with `error`."""
    return GoType("text_enum", name, values=dict(values), error=error)


def time_type(parse: Callable[[str], object], name: str = "time.Time") -> GoType:
    """A time.Time read from a JSON string by `parse` (which raises ValueError with Go's
    time.ParseError text)."""
    return GoType("time", name, parse=parse)


# -- the exact reader -------------------------------------------------------------------------
_KEEP = object()            # a null that leaves the Go value as it was
_KIND_NAMES = {OBJECT: "object", ARRAY: "array", STRING: "string", NUMBER: "number",
               TRUE: "bool", FALSE: "bool"}


def _fold(name: str) -> str | None:
    """A member name as Go's case-insensitive match sees it; None when it cannot equal an
    ASCII field name."""
    if not name.isascii():
        name = name.replace("\u017f", "s").replace("\u212a", "k")
        if not name.isascii():
            return None
    return name.lower()


def _integer(literal: str, low: int, high: int) -> int | None:
    """strconv.Parse(U)Int of a JSON number literal within [low, high], else None."""
    digits = literal[1:] if literal[:1] == "-" else literal
    if not digits.isdigit() or (low >= 0 and literal[:1] == "-"):
        return None
    value = int(literal)
    return value if low <= value <= high else None


class _Reader:
    """Go's decoding of scanned JSON into a GoType; the first error wins. `root` names
    the top-level struct in type errors, which give members as the body spells them."""

    def __init__(self, data: bytes, root: str, strict: bool):
        self.data, self.root, self.strict = data, root, strict

    def _type_error(self, node: Node, kind: GoType, path: list, literal: bool = False):
        what = _KIND_NAMES[node.kind] + (f" {node.value}" if literal else "")
        if not path:
            return GoJSONError(f"json: cannot unmarshal {what} into Go value of type {kind.name}")
        where = ".".join(str(part) for part in path)
        if isinstance(path[-1], int):
            return GoJSONError(f"json: cannot unmarshal {what} into {self.root}.{where} "
                               f"of type {kind.name}")
        else:
            where = f"{self.root}.{where}"
        return GoJSONError(f"json: cannot unmarshal {what} into Go struct field {where} "
                           f"of type {kind.name}")

    def value(self, node: Node, kind: GoType, path: list, current=None):
        """The Go value `node` gives for `kind` (`current`: what a struct or map held,
        which an object merges into); _KEEP for a null that leaves it."""
        form = kind.kind
        if form == "enum":
            raw = self.data[node.start:node.end]
            if raw in kind.values:
                return kind.values[raw]
            text = quote(raw) if "%q" in kind.error else raw.decode("utf-8", "replace")
            raise GoJSONError(kind.error.replace("%q", text).replace("%v", text))
        if form == "text_enum":
            if node.kind != STRING and node.kind != NULL:
                raise self._type_error(node, STRING_TYPE, [])
            found = kind.values.get("" if node.kind == NULL else node.value, _KEEP)
            if found is _KEEP:
                raise GoJSONError(kind.error)
            return found
        if node.kind == NULL:
            return None if form in ("time", "slice", "map") else _KEEP
        if form == "string":
            if node.kind != STRING:
                raise self._type_error(node, kind, path)
            return node.value
        if form == "bool":
            if node.kind != TRUE and node.kind != FALSE:
                raise self._type_error(node, kind, path)
            return node.kind == TRUE
        if form == "int":
            if node.kind != NUMBER:
                raise self._type_error(node, kind, path)
            number = _integer(node.value, kind.low, kind.high)
            if number is None:
                raise self._type_error(node, kind, path, literal=True)
            return number
        if form == "time":
            if node.kind != STRING:
                raise self._type_error(node, kind, path)
            try:
                return kind.parse(node.value)
            except ValueError as exc:
                raise GoJSONError(str(exc)) from None
        if form == "slice":
            if node.kind != ARRAY:
                raise self._type_error(node, kind, path)
            element = kind.element
            zero = _zero(element)
            items = []
            for index, item in enumerate(node.value):
                value = self.value(item, element, path + [index])
                items.append(zero if value is _KEEP else value)
            return items
        if node.kind != OBJECT:
            raise self._type_error(node, kind, path)
        out = dict(current or {})
        if form == "map":
            element = kind.element
            for key, item in node.value:      # each element decoded afresh (no merge)
                value = self.value(item, element, path + [key])
                out[key] = _zero(element) if value is _KEEP else value
            return out
        fields = kind.fields
        for key, item in node.value:
            name = key if key in fields else _fold(key)
            field = fields.get(name) if name is not None else None
            if field is None:
                if self.strict:
                    raise GoJSONError(f"json: unknown field {quote(key)}")
                continue
            value = self.value(item, field, path + [key], out.get(name))
            if value is not _KEEP:
                out[name] = value
        return out


def _zero(kind: GoType):
    """What a null element of a slice or map holds."""
    return {"string": "", "bool": False, "int": 0, "struct": {}}.get(kind.kind)


def _root_value(reader: _Reader, node: Node, target: GoType, current: dict) -> dict:
    value = reader.value(node, target, [], current)
    return current if value is _KEEP else value


# -- the fast reader --------------------------------------------------------------------------
class _Slow(Exception):
    """The fast reader cannot vouch for its answer: read the body exactly."""


_decoder = msgspec.json.Decoder()


def _fast_text(value) -> str:
    if type(value) is not str:
        raise _Slow
    if not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:      # a lone surrogate from an escape
            raise _Slow from None
    return value


def _fast(value, kind: GoType, data: bytes, strict: bool, current=None):
    """`value` (msgspec's reading of well-formed JSON) as `kind`, or _Slow."""
    form = kind.kind
    if form == "text_enum":
        found = kind.values.get("" if value is None else _fast_text(value), _Slow)
        if found is _Slow:
            raise _Slow
        return found
    if value is None:
        if form == "enum":
            raise _Slow
        return None if form in ("time", "slice", "map") else _KEEP
    if form == "string":
        return _fast_text(value)
    if form == "int":
        if type(value) is not int or not kind.low <= value <= kind.high:
            raise _Slow
        if value == 0 and kind.low == 0 and b"-" in data:
            raise _Slow                 # "-0" is no uint64 to Go
        return value
    if form == "bool":
        if type(value) is not bool:
            raise _Slow
        return value
    if form == "enum":
        if type(value) is not str or b"\\" in data:
            raise _Slow
        found = kind.values.get(b'"' + value.encode() + b'"', _Slow)
        if found is _Slow:
            raise _Slow
        return found
    if form == "time":
        try:
            return kind.parse(_fast_text(value))
        except ValueError:
            raise _Slow from None
    if form == "slice":
        if type(value) is not list:
            raise _Slow
        zero = _zero(kind.element)
        out = []
        for item in value:
            item = _fast(item, kind.element, data, strict)
            out.append(zero if item is _KEEP else item)
        return out
    if type(value) is not dict:
        raise _Slow
    out = dict(current or {})
    if form == "map":
        for key, item in value.items():
            _fast_text(key)
            item = _fast(item, kind.element, data, strict)
            out[key] = _zero(kind.element) if item is _KEEP else item
        return out
    fields = kind.fields
    for key, item in value.items():
        field = fields.get(key)
        if field is None:
            name = _fold(key)
            if strict or name is None or name in fields or not key.isascii():
                raise _Slow
            continue
        if data.count(b'"' + key.encode() + b'"') > 1:
            raise _Slow                 # perhaps given twice: every value counts in Go
        item = _fast(item, field, data, strict)
        if item is not _KEEP:
            out[key] = item
    return out


def _read_fast(data: bytes, target: GoType, strict: bool) -> dict:
    try:
        value = _decoder.decode(data)
    except (msgspec.DecodeError, ValueError, RecursionError):   # invalid UTF-8 is a ValueError
        raise _Slow from None
    if value is None:
        return {}
    if target.kind == "struct" and type(value) is not dict:
        raise _Slow
    value = _fast(value, target, data, strict)
    return {} if value is _KEEP else value


# -- Go's entry points --------------------------------------------------------------------------
def unmarshal(data: bytes, target: GoType, *, struct_name: str | None = None) -> dict:
    """``json.Unmarshal(data, &target)``: the fields set, by JSON name; GoJSONError with
    Go's text (unknown members are skipped). Type errors name the struct as `target`
    does, or as `struct_name` where nats-server's Go names it otherwise (the pull
    request's: "")."""
    data = bytes(data)
    try:
        return _read_fast(data, target, False)
    except _Slow:
        return unmarshal_exact(data, target, struct_name=struct_name)


def unmarshal_exact(data: bytes, target: GoType, *, struct_name: str | None = None) -> dict:
    """`unmarshal` by the exact reader alone (what the fast path must agree with)."""
    try:
        node = scan_document(data)
    except GoSyntaxError as exc:
        raise GoJSONError(str(exc)) from None
    except UnexpectedEnd:
        raise GoJSONError("unexpected end of JSON input") from None
    if struct_name is None:
        struct_name = target.name.rpartition(".")[2]
    return _root_value(_Reader(data, struct_name, False), node, target, {})


def decode_request(data: bytes, target: GoType, *, strict: bool = True) -> dict:
    """nats-server's unmarshalRequest: a json.Decoder (refusing unknown fields when
    `strict`) decoding every value of the body in turn into one `target`; syntax errors
    get `` at offset N``, a value cut short is "unexpected EOF". The fields set, by JSON
    name (an empty body sets none)."""
    data = bytes(data)
    try:
        return _read_fast(data, target, strict)
    except _Slow:
        return decode_request_exact(data, target, strict=strict)


def decode_request_exact(data: bytes, target: GoType, *, strict: bool = True) -> dict:
    """`decode_request` by the exact reader alone (what the fast path must agree with)."""
    reader = _Reader(data, target.name.rpartition(".")[2], strict)
    out: dict = {}
    pos, end = 0, len(data)
    while True:
        pos = skip_whitespace(data, pos)
        if pos >= end:
            return out
        try:
            node, pos = scan_value(data, pos)
        except GoSyntaxError as exc:
            raise GoJSONError(f"{exc} at offset {exc.offset}") from None
        except UnexpectedEnd:
            raise GoJSONError("unexpected EOF") from None
        out = _root_value(reader, node, target, out)


def is_empty_object(data: bytes) -> bool:
    """nats-server's isEmptyRequest: no bytes at all, or a JSON text that is an object
    without members."""
    if not data or data == b"{}":
        return True
    try:
        value = _decoder.decode(data)
    except (msgspec.DecodeError, ValueError, RecursionError):
        try:
            node, pos = scan_value(bytes(data))
        except GoJSONError:
            return False
        return (skip_whitespace(data, pos) == len(data) and node.kind == OBJECT
                and not node.value)
    return type(value) is dict and not value


# -- encoding ---------------------------------------------------------------------------------
# Go's encoding/json writes these escaped inside strings (outside strings JSON has none)
_HTML_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
                 ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))
_encoder = msgspec.json.Encoder()


def _valid_text(value):
    """`value` with every string's invalid UTF-8 as U+FFFD (what Go writes)."""
    if isinstance(value, str):
        return go_string(value)
    if isinstance(value, dict):
        return {_valid_text(key): _valid_text(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_valid_text(item) for item in value]
    if isinstance(value, msgspec.Struct):
        return msgspec.structs.replace(value, **{
            name: _valid_text(getattr(value, name)) for name in value.__struct_fields__})
    return value


def encode(value: object) -> bytes:
    """`value` (msgspec-encodable) as Go's json.Marshal writes it: compact, HTML-safe."""
    try:
        data = _encoder.encode(value)
    except UnicodeEncodeError:
        data = _encoder.encode(_valid_text(value))
    return _html_safe(data)


def encode_indent(value: object) -> bytes:
    """`value` (plain dicts, lists and scalars) as Go's json.MarshalIndent(v, "", "  ")
    writes it: two spaces an indent level, ": " after a key, UTF-8 text, HTML-safe."""
    return _html_safe(stdjson.dumps(_valid_text(value), indent=2,
                                    ensure_ascii=False).encode())


def _html_safe(data: bytes) -> bytes:
    for char, escape in _HTML_ESCAPES:
        if char in data:
            data = data.replace(char, escape)
    return data


__all__ += ["WHITESPACE", "GoSyntaxError", "UnexpectedEnd", "Node", "scan_value"]
