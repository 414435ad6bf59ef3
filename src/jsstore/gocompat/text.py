"""Go's handling of raw text: bytes.TrimSpace, strconv.Atoi, and bytes turned into a Go
string as Go prints or encodes it."""

from __future__ import annotations

from jsstore.gocompat.durations import INT64_MAX, INT64_MIN

_ASCII_SPACE = b" \t\n\v\f\r"
# unicode.IsSpace outside ASCII, UTF-8 encoded: U+0085, U+00A0 (2 bytes), the rest 3 bytes
_SPACES_2 = frozenset(chr(c).encode() for c in (0x85, 0xA0))
_SPACES_3 = frozenset(chr(c).encode() for c in (0x1680, *range(0x2000, 0x200B), 0x2028,
                                                 0x2029, 0x202F, 0x205F, 0x3000))
_UNICODE_SPACE_STARTS = (b"\xc2", b"\xe1", b"\xe2", b"\xe3")


def trim_space(data: bytes) -> bytes:
    """Go's bytes.TrimSpace: ASCII white space and the Unicode spaces (U+0085, U+00A0,
    U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) off both ends; bytes
    that are not valid UTF-8 are never spaces."""
    data = data.strip(_ASCII_SPACE)
    while data[:1] >= b"\x80" and data.startswith(_UNICODE_SPACE_STARTS):
        if data[:2] in _SPACES_2:
            data = data[2:].lstrip(_ASCII_SPACE)
        elif data[:3] in _SPACES_3:
            data = data[3:].lstrip(_ASCII_SPACE)
        else:
            break
    while data[-1:] >= b"\x80":
        if data[-2:] in _SPACES_2:
            data = data[:-2].rstrip(_ASCII_SPACE)
        elif data[-3:] in _SPACES_3:
            data = data[:-3].rstrip(_ASCII_SPACE)
        else:
            break
    return data


def atoi(data: bytes) -> int | None:
    """Go's strconv.Atoi on a 64-bit platform: ``[+-]?[0-9]+`` within int64, else None."""
    digits = data[1:] if data[:1] in (b"+", b"-") else data
    if not digits or not digits.isdigit():
        return None
    value = int(data)
    return value if INT64_MIN <= value <= INT64_MAX else None


def valid_text(data: bytes) -> str:
    """Bytes as Go turns a string into text (JSON-encodes or prints it): valid UTF-8 as
    it is, every byte that is not part of a valid sequence as U+FFFD."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return "".join("\ufffd" if "\udc80" <= char <= "\udcff" else char
                       for char in data.decode("utf-8", "surrogateescape"))
