"""NATS header blocks: `NATS/1.0[ status[ description]]\\r\\nKey: Value\\r\\n...\\r\\n\\r\\n`.

Two ways in, as in nats-server:

* `get(hdr, key)` finds the first value of one header without parsing the block (the
  publish path reads a handful of `Nats-*` headers from every message this way). The key
  must match exactly (header names are case-sensitive in nats-server), start a line (be
  preceded by CRLF) and be followed by `:`; spaces after the colon are skipped and the
  value runs to the next CRLF or the end of the block. Trailing spaces stay in the value.
  It never raises: a block it cannot make sense of simply has no such header.
* `parse(hdr)` reads the whole block into a `HeaderBlock` (status, description and the
  fields in order, repeated keys kept) and raises `HeaderError`, with the byte offset, for
  a block that is not one.

`build`, `set_header` and `remove_header` write blocks (for rollups, republish and direct
get). Values are kept byte for byte: they are decoded from and encoded to UTF-8 with
surrogate escapes, so any byte string survives a parse/build round trip.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

PREFIX = b"NATS/1.0"
CRLF = b"\r\n"
EMPTY_BLOCK = PREFIX + CRLF + CRLF
_TEXT = "utf-8"
_ESCAPES = "surrogateescape"


class HeaderError(ValueError):
    """A header block (or a key or value for one) that is not well formed; `offset` is
    the byte position of the problem in the block (-1 when building)."""

    def __init__(self, message: str, offset: int = -1):
        super().__init__(message if offset < 0 else f"{message} at byte {offset}")
        self.offset = offset


def _value_start(hdr: bytes, key: bytes) -> int:
    """Offset of the first value of `key` in `hdr` (after the colon and any spaces), or -1."""
    if not hdr or not key:
        return -1
    needle = CRLF + key + b":"
    found = hdr.find(needle)
    if found < 0:
        return -1
    pos = found + len(needle)
    end = len(hdr)
    while pos < end and hdr[pos] == 0x20:
        pos += 1
    return pos


def get(hdr: bytes | None, key: str | bytes) -> bytes | None:
    """The first value of header `key` in `hdr`, or None when it has none (an empty value
    is b"", not None)."""
    if not hdr:
        return None
    key_bytes = key.encode(_TEXT, _ESCAPES) if isinstance(key, str) else key
    start = _value_start(hdr, key_bytes)
    if start < 0:
        return None
    stop = hdr.find(CRLF, start)
    return hdr[start:] if stop < 0 else hdr[start:stop]


def get_str(hdr: bytes | None, key: str) -> str | None:
    """`get` decoded as text (invalid UTF-8 bytes kept as surrogate escapes)."""
    value = get(hdr, key)
    return None if value is None else value.decode(_TEXT, _ESCAPES)


class HeaderBlock:
    """A parsed header block: an ordered multi-dict of fields plus the status line."""

    __slots__ = ("status", "description", "fields")

    def __init__(self, fields: Iterable[tuple[str, str]] = (), status: str = "",
                 description: str = ""):
        self.status: str = status  # "404" in "NATS/1.0 404 No Messages"; "" when absent
        self.description: str = description  # the text after the status; "" when absent
        self.fields: list[tuple[str, str]] = list(fields)  # (key, value) in block order

    def get(self, key: str, default: str | None = None) -> str | None:
        for name, value in self.fields:
            if name == key:
                return value
        return default

    def get_all(self, key: str) -> list[str]:
        return [value for name, value in self.fields if name == key]

    def keys(self) -> list[str]:
        """Distinct keys in order of first appearance."""
        return list(dict.fromkeys(name for name, _ in self.fields))

    def to_dict(self) -> dict[str, list[str]]:
        result: dict[str, list[str]] = {}
        for name, value in self.fields:
            result.setdefault(name, []).append(value)
        return result

    def __contains__(self, key: object) -> bool:
        return any(name == key for name, _ in self.fields)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HeaderBlock):
            return NotImplemented
        return (self.status, self.description, self.fields) == (
            other.status, other.description, other.fields)

    def __repr__(self) -> str:
        return (f"HeaderBlock(fields={self.fields!r}, status={self.status!r}, "
                f"description={self.description!r})")

    def encode(self) -> bytes:
        return build(self.fields, status=self.status, description=self.description)


def parse(hdr: bytes) -> HeaderBlock:
    """The whole block. Lines end in CRLF; empty lines are skipped (nats-server's lookups
    also see fields after one) and a missing final CRLF is tolerated. HeaderError for: no
    `NATS/1.0` version line, a bad status, a line without a colon, an empty key or a key
    with a character outside printable ASCII."""
    if not isinstance(hdr, (bytes, bytearray, memoryview)):
        raise TypeError(f"a header block is bytes, not {type(hdr).__name__}")
    hdr = bytes(hdr)
    line_end = hdr.find(CRLF)
    first = hdr if line_end < 0 else hdr[:line_end]
    if not first.startswith(PREFIX):
        raise HeaderError("header block does not start with NATS/1.0", 0)
    status, description = _parse_status(first)
    block = HeaderBlock(status=status, description=description)
    pos = len(hdr) if line_end < 0 else line_end + 2
    while pos < len(hdr):
        line_end = hdr.find(CRLF, pos)
        stop = len(hdr) if line_end < 0 else line_end
        if stop > pos:
            block.fields.append(_parse_field(hdr, pos, stop))
        pos = stop + 2
    return block


def _parse_status(first: bytes) -> tuple[str, str]:
    rest = first[len(PREFIX):]
    if not rest:
        return "", ""
    if rest[:1] != b" ":
        raise HeaderError("unknown header version", 0)
    rest = rest.lstrip(b" ")
    code, _, description = rest.partition(b" ")
    if code and (len(code) != 3 or not code.isdigit()):
        raise HeaderError(f"status {code.decode(_TEXT, 'replace')!r} is not 3 digits",
                          len(PREFIX) + 1)
    return code.decode("ascii"), description.strip(b" ").decode(_TEXT, _ESCAPES)


def _parse_field(hdr: bytes, start: int, stop: int) -> tuple[str, str]:
    colon = hdr.find(b":", start, stop)
    if colon < 0:
        raise HeaderError("header line without a colon", start)
    if colon == start:
        raise HeaderError("header line with an empty key", start)
    key = hdr[start:colon]
    for offset, char in enumerate(key):
        if char < 33 or char > 126:
            raise HeaderError(f"header key has byte 0x{char:02x}", start + offset)
    value_start = colon + 1
    while value_start < stop and hdr[value_start] == 0x20:
        value_start += 1
    return key.decode("ascii"), hdr[value_start:stop].decode(_TEXT, _ESCAPES)


def _check_key(key: str) -> bytes:
    if not isinstance(key, str):
        raise TypeError(f"a header key is str, not {type(key).__name__}")
    if not key:
        raise HeaderError("empty header key")
    for char in key:
        if char == ":" or not (33 <= ord(char) <= 126):
            raise HeaderError(f"header key {key!r} has character {char!r}")
    return key.encode("ascii")


def _check_value(key: str, value: str) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"header {key!r}: a value is str, not {type(value).__name__}")
    if "\r" in value or "\n" in value:
        raise HeaderError(f"header {key!r}: a value can not contain CR or LF")
    return value.encode(_TEXT, _ESCAPES)


def build(headers: Mapping[str, str | Iterable[str]] | Iterable[tuple[str, str]],
          status: str = "", description: str = "") -> bytes:
    """A header block from a mapping (a value may be a list of values for a repeated key)
    or from (key, value) pairs, written as `Key: Value` lines in order. Keys must be
    printable ASCII without `:`; values must not contain CR or LF (HeaderError)."""
    head = PREFIX
    if status:
        if len(status) != 3 or not status.isdigit() or not status.isascii():
            raise HeaderError(f"status {status!r} is not 3 digits")
        head += b" " + status.encode("ascii")
        if description:
            head += b" " + _check_value("status", description)
    elif description:
        raise HeaderError("a status description needs a status")
    parts = [head, CRLF]
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    for key, value in pairs:
        key_bytes = _check_key(key)
        values = [value] if isinstance(value, str) else list(value)
        for one in values:
            parts += (key_bytes, b": ", _check_value(key, one), CRLF)
    parts.append(CRLF)
    return b"".join(parts)


def set_header(hdr: bytes | None, key: str, value: str) -> bytes:
    """`hdr` with the first value of `key` replaced by `value` (the spacing after the colon
    is kept), or with `Key: value` appended when it has no such header; a new block when
    `hdr` is empty."""
    key_bytes = _check_key(key)
    value_bytes = _check_value(key, value)
    if not hdr:
        return PREFIX + CRLF + key_bytes + b": " + value_bytes + CRLF + CRLF
    start = _value_start(hdr, key_bytes)
    if start >= 0:
        stop = hdr.find(CRLF, start)
        tail = b"" if stop < 0 else hdr[stop:]
        return hdr[:start] + value_bytes + tail
    body = hdr[:-2] if hdr.endswith(CRLF + CRLF) else (hdr if hdr.endswith(CRLF) else hdr + CRLF)
    return body + key_bytes + b": " + value_bytes + CRLF + CRLF


def append_header(hdr: bytes | None, key: str, value: str) -> bytes:
    """`hdr` with `Key: value` added at the end, whatever it already holds (nats-server's
    genHeader); a new block when `hdr` is empty."""
    key_bytes = _check_key(key)
    value_bytes = _check_value(key, value)
    if not hdr:
        return PREFIX + CRLF + key_bytes + b": " + value_bytes + CRLF + CRLF
    body = hdr[:-2] if hdr.endswith(CRLF + CRLF) else (hdr if hdr.endswith(CRLF) else hdr + CRLF)
    return body + key_bytes + b": " + value_bytes + CRLF + CRLF


def remove_header(hdr: bytes | None, key: str) -> bytes | None:
    """`hdr` without the first `key` line; None when nothing but `NATS/1.0\\r\\n\\r\\n` is
    left (nats-server then stores the message without headers). `hdr` itself when it has
    no such header."""
    if not hdr:
        return hdr
    key_bytes = key.encode(_TEXT, _ESCAPES)
    found = hdr.find(CRLF + key_bytes + b":") if key_bytes else -1
    if found < 0:
        return hdr
    start = found + 2
    stop = hdr.find(CRLF, start)
    if stop < 0:
        return hdr
    result = hdr[:start] + hdr[stop + 2:]
    return None if len(result) <= len(EMPTY_BLOCK) else result


def remove_headers(hdr: bytes | None, key: str) -> bytes | None:
    """`remove_header` repeated until no `key` line is left."""
    while hdr:
        shorter = remove_header(hdr, key)
        if shorter is hdr:
            return hdr
        hdr = shorter
    return hdr


def encode_headers(headers: Mapping[str, str | list[str]] | bytes | None) -> bytes | None:
    """The NATS header block for a dict (a list value writes the key once per value);
    bytes are taken as an already encoded block; empty or None gives no block.
    HeaderError (a ValueError) for a key or value a block can not hold."""
    if not headers:
        return None
    if isinstance(headers, (bytes, bytearray, memoryview)):
        return bytes(headers)
    return build(headers)


def decode_headers(block: bytes | None) -> dict[str, str] | None:
    """The headers of a NATS header block; the first value of a repeated key (as
    nats-server reads them). None for no block, or for one that does not parse."""
    if not block:
        return None
    try:
        fields = parse(block).fields
    except HeaderError:
        return None
    out: dict[str, str] = {}
    for key, value in fields:
        out.setdefault(key, value)
    return out
