"""The syntax half of Go's encoding/json: reading JSON text into a tree, with Go's errors.

nats-server 2.15.1 is built with a Go whose encoding/json runs on the v2 implementation
(jsontext/jsonwire), so its syntax errors read ``invalid character 'x' after object
key:value pair``, ``invalid escape sequence `\\x` in string``, ``exceeded max depth``
(past 10000 levels). Where the text ends too early the error is `UnexpectedEnd`; what
that is called depends on the API (``json.Unmarshal``: "unexpected end of JSON input",
a ``json.Decoder``: "unexpected EOF"), which `jsstore.gocompat.json` decides.

`scan_value` reads one JSON value into `Node`s: strings hold their value as Go keeps it
(invalid UTF-8 and unpaired UTF-16 surrogates become U+FFFD), numbers their literal text
(Go's type errors quote it), objects their members in order with duplicates kept.
Iterative, so nesting up to Go's limit works.
"""

from __future__ import annotations

from jsstore.gocompat.quoting import is_print, json_quote_rune, quote, rune_at

MAX_NESTING_DEPTH = 10000
WHITESPACE = b" \t\r\n"

# node kinds, named as Go's type errors name them ("true"/"false" are both "bool")
OBJECT, ARRAY, STRING, NUMBER, TRUE, FALSE, NULL = (
    "object", "array", "string", "number", "true", "false", "null")

_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")
_DIGITS = frozenset(b"0123456789")
_SIMPLE_ESCAPES = {ord('"'): '"', ord("\\"): "\\", ord("/"): "/", ord("b"): "\b",
                   ord("f"): "\f", ord("n"): "\n", ord("r"): "\r", ord("t"): "\t"}
_LITERALS = {ord("t"): (b"true", TRUE), ord("f"): (b"false", FALSE), ord("n"): (b"null", NULL)}
_UNICODE_SPACES = frozenset((0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028,
                             0x2029, 0x202F, 0x205F, 0x3000, *range(0x2000, 0x200B)))


class GoJSONError(ValueError):
    """JSON that Go's encoding/json refuses; the message is Go's error text."""


class GoSyntaxError(GoJSONError):
    """A syntax error; `offset` is where Go says it happened (json.SyntaxError.Offset)."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


class UnexpectedEnd(GoJSONError):
    """The text ended inside a value."""

    def __init__(self):
        super().__init__("unexpected end of JSON input")


class Node:
    """One JSON value: its kind, its value (see the module notes; None for the literals)
    and where its bytes lie in the text."""

    __slots__ = ("kind", "value", "start", "end")

    def __init__(self, kind: str, value, start: int, end: int = 0):
        self.kind, self.value, self.start, self.end = kind, value, start, end

    def __repr__(self) -> str:
        return f"Node({self.kind}, {self.value!r})"


def go_string(text: str) -> str:
    """A string as Go holds it after decoding: every invalid UTF-8 byte (surrogate-escaped
    here) and unpaired UTF-16 surrogate as U+FFFD."""
    if text.isascii():
        return text
    return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)


def skip_whitespace(data: bytes, pos: int) -> int:
    end = len(data)
    while pos < end and data[pos] in WHITESPACE:
        pos += 1
    return pos


def _invalid_character(data: bytes, pos: int, where: str) -> GoSyntaxError:
    _, size = rune_at(data, pos)
    return GoSyntaxError(f"invalid character {json_quote_rune(data, pos)} {where}", pos + size)


def _invalid_escape(sequence: bytes, pos: int) -> GoSyntaxError:
    """jsonwire's NewInvalidEscapeSequenceError for the bytes of the escape at `pos`."""
    text = sequence.decode("utf-8", "surrogateescape")
    if any(char == "`" or char == "\ufffd" or "\udc80" <= char <= "\udcff"
           or ord(char) in _UNICODE_SPACES or not is_print(ord(char)) for char in text):
        message = f"invalid escape sequence {quote(sequence)} in string"
    else:
        message = f"invalid escape sequence `{text}` in string"
    return GoSyntaxError(message, pos + len(sequence))


def _may_be_utf16_escape(rest: bytes) -> bool:
    """Whether `rest` could be a ``\\uXXXX`` cut short by the end of the text."""
    for index, byte in enumerate(rest[:6]):
        if (index == 0 and byte != 0x5C) or (index == 1 and byte != 0x75) \
                or (index >= 2 and byte not in _HEX_DIGITS):
            return False
    return True


def _scan_string(data: bytes, pos: int) -> tuple[int, str]:
    """The string whose opening quote is at data[pos]: (the position after it, its value)."""
    end = len(data)
    pos += 1
    parts: list[str] = []
    run = pos
    while True:
        while pos < end and 0x20 <= data[pos] < 0x80 and data[pos] != 0x22 and data[pos] != 0x5C:
            pos += 1
        if pos >= end:
            raise UnexpectedEnd()
        byte = data[pos]
        if byte == 0x22:
            parts.append(data[run:pos].decode("utf-8", "surrogateescape"))
            return pos + 1, go_string("".join(parts))
        if byte >= 0x80:
            pos += 1                 # any byte of a sequence, valid or not, is allowed
            continue
        if byte < 0x20:
            raise _invalid_character(data, pos, "in string")
        parts.append(data[run:pos].decode("utf-8", "surrogateescape"))
        if pos + 2 > end:
            raise UnexpectedEnd()
        kind = data[pos + 1]
        simple = _SIMPLE_ESCAPES.get(kind)
        if simple is not None:
            parts.append(simple)
            pos += 2
        elif kind == 0x75:
            if pos + 6 > end:
                if _may_be_utf16_escape(data[pos:]):
                    raise UnexpectedEnd()
                raise _invalid_escape(data[pos:], pos)
            digits = data[pos + 2:pos + 6]
            if not all(digit in _HEX_DIGITS for digit in digits):
                raise _invalid_escape(data[pos:pos + 6], pos)
            code = int(digits, 16)
            pos += 6
            if 0xD800 <= code < 0xDC00 and data[pos:pos + 2] == b"\\u":
                low_digits = data[pos + 2:pos + 6]
                if len(low_digits) == 4 and all(digit in _HEX_DIGITS for digit in low_digits):
                    low = int(low_digits, 16)
                    if 0xDC00 <= low < 0xE000:
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        pos += 6
            parts.append("\ufffd" if 0xD800 <= code < 0xE000 else chr(code))
        else:
            raise _invalid_escape(data[pos:pos + 2], pos)
        run = pos


def _scan_number(data: bytes, pos: int) -> int:
    """The end of the number starting at data[pos] (jsonwire's ConsumeNumber)."""
    end = len(data)
    if data[pos] == 0x2D:
        pos += 1
    if pos >= end:
        raise UnexpectedEnd()
    if data[pos] == 0x30:
        pos += 1
    elif 0x31 <= data[pos] <= 0x39:
        pos += 1
        while pos < end and data[pos] in _DIGITS:
            pos += 1
    else:
        raise _invalid_character(data, pos, "in numeric literal")
    if pos < end and data[pos] == 0x2E:
        pos += 1
        if pos >= end:
            raise UnexpectedEnd()
        if data[pos] not in _DIGITS:
            raise _invalid_character(data, pos, "in numeric literal")
        while pos < end and data[pos] in _DIGITS:
            pos += 1
    if pos < end and data[pos] in (0x65, 0x45):
        pos += 1
        if pos < end and data[pos] in (0x2B, 0x2D):
            pos += 1
        if pos >= end:
            raise UnexpectedEnd()
        if data[pos] not in _DIGITS:
            raise _invalid_character(data, pos, "in numeric literal")
        while pos < end and data[pos] in _DIGITS:
            pos += 1
    return pos


def _scan_literal(data: bytes, pos: int) -> tuple[int, str]:
    """true, false or null at data[pos] (jsonwire's ConsumeLiteral)."""
    literal, kind = _LITERALS[data[pos]]
    for index, expected in enumerate(literal):
        if pos + index >= len(data):
            raise UnexpectedEnd()
        if data[pos + index] != expected:
            raise _invalid_character(
                data, pos + index, f"in literal {literal.decode()} (expecting '{chr(expected)}')")
    return pos + len(literal), kind


def _scan_key(data: bytes, pos: int) -> tuple[int, str]:
    """An object's member name and its colon, from `pos` (after '{' or ',')."""
    pos = skip_whitespace(data, pos)
    if pos >= len(data):
        raise UnexpectedEnd()
    if data[pos] != 0x22:
        raise _invalid_character(data, pos, "looking for beginning of object key string")
    pos, name = _scan_string(data, pos)
    pos = skip_whitespace(data, pos)
    if pos >= len(data):
        raise UnexpectedEnd()
    if data[pos] != 0x3A:
        raise _invalid_character(data, pos, "after object key")
    return pos + 1, name


def scan_value(data: bytes, pos: int = 0) -> tuple[Node, int]:
    """The JSON value starting at `pos` (after any white space) and the position after
    it; GoSyntaxError / UnexpectedEnd as Go reports them."""
    end = len(data)
    stack: list[list] = []            # [container node, the member name being read]
    while True:
        pos = skip_whitespace(data, pos)
        if pos >= end:
            raise UnexpectedEnd()
        byte = data[pos]
        if byte == 0x7B or byte == 0x5B:
            if len(stack) >= MAX_NESTING_DEPTH:
                raise GoSyntaxError("exceeded max depth", pos + 1)
            is_object = byte == 0x7B
            node = Node(OBJECT if is_object else ARRAY, [], pos)
            pos = skip_whitespace(data, pos + 1)
            if pos >= end:
                raise UnexpectedEnd()
            if data[pos] == (0x7D if is_object else 0x5D):
                pos += 1
                node.end = pos
            else:
                name = None
                if is_object:
                    pos, name = _scan_key(data, pos)
                stack.append([node, name])
                continue
        elif byte == 0x22:
            start = pos
            pos, text = _scan_string(data, pos)
            node = Node(STRING, text, start, pos)
        elif byte == 0x2D or 0x30 <= byte <= 0x39:
            start = pos
            pos = _scan_number(data, pos)
            node = Node(NUMBER, data[start:pos].decode(), start, pos)
        elif byte in _LITERALS:
            start = pos
            pos, kind = _scan_literal(data, pos)
            node = Node(kind, None, start, pos)
        else:
            raise _invalid_character(data, pos, "looking for beginning of value")
        # a value is complete: add it to its container, closing containers that end here
        while stack:
            frame = stack[-1]
            container = frame[0]
            is_object = container.kind == OBJECT
            container.value.append((frame[1], node) if is_object else node)
            pos = skip_whitespace(data, pos)
            if pos >= end:
                raise UnexpectedEnd()
            byte = data[pos]
            if byte == 0x2C:
                if is_object:
                    pos, frame[1] = _scan_key(data, pos + 1)
                else:
                    pos += 1
                break
            if byte == (0x7D if is_object else 0x5D):
                pos += 1
                container.end = pos
                node = container
                stack.pop()
                continue
            raise _invalid_character(
                data, pos, "after object key:value pair" if is_object else "after array element")
        else:
            return node, pos


def scan_document(data: bytes) -> Node:
    """The one JSON value `data` holds (json.Unmarshal's syntax check): anything but
    white space after it is an error."""
    node, pos = scan_value(data)
    pos = skip_whitespace(data, pos)
    if pos < len(data):
        raise _invalid_character(data, pos, "after top-level value")
    return node
