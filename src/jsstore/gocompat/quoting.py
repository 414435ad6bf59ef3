"""Go's quoting of text, as nats-server's error texts and status lines carry it.

One family, four forms, each Go's own:

* `quote`       strconv.Quote (and ``%q`` of a string): double quotes, printable runes as
                they are, ``\\n``-style escapes, ``\\xNN`` for other control bytes and for
                every byte that is not valid UTF-8, ``\\uNNNN`` / ``\\UNNNNNNNN`` for other
                runes that are not printable;
* `quote_rune`  strconv.QuoteRune of one rune (single quotes, the same escapes; a rune
                that is not valid is U+FFFD);
* `json_quote_rune`  how encoding/json names an unexpected character in a syntax error
                (jsonwire's QuoteRune): strconv.QuoteRune of the rune at a position, or
                ``'\\xNN'`` (no padding) when the byte there does not start valid UTF-8;
* `time_quote`  the time package's own quote() in time.ParseError and duration errors:
                double quotes, ``"`` and ``\\`` escaped, and every byte of a control or
                non-ASCII character written as ``\\xNN``.

Text may be given as ``str`` or ``bytes``. A ``str`` that came from bytes decoded with
``surrogateescape`` gets its invalid bytes back (``\\udcff`` is the byte 0xFF); any other
lone surrogate is quoted as the bytes Go would hold for it (each one ``\\xNN``).
"""

from __future__ import annotations

from jsstore.deferred import deferred

# the categories of runes past Latin-1, asked only when one is quoted (an error's text)
unicodedata = deferred("unicodedata")

_HEX = "0123456789abcdef"
_SHORT_ESCAPES = {0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r",
                  0x09: "\\t", 0x0B: "\\v"}
_UTF8_ERRORS = "surrogateescape"


def to_bytes(text: str | bytes | bytearray | memoryview) -> bytes:
    """The bytes Go would hold for `text`: UTF-8, with surrogate-escaped bytes restored and
    any other lone surrogate encoded as its three bytes (never valid UTF-8, as in Go)."""
    if not isinstance(text, str):
        return bytes(text)
    try:
        return text.encode("utf-8", _UTF8_ERRORS)
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def byte_len(text: str) -> int:
    """len() of the Go string `text` is: its bytes, not its characters (a limit of 255 on a
    name is 127 'é's, not 255)."""
    return len(text) if text.isascii() else len(to_bytes(text))


def is_print(rune: int) -> bool:
    """strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    if rune <= 0xFF:
        return 0x20 <= rune <= 0x7E or (0xA1 <= rune <= 0xFF and rune != 0xAD)
    if 0xD800 <= rune <= 0xDFFF or rune > 0x10FFFF:
        return False
    return unicodedata.category(chr(rune))[0] in "LMNPS"


def escaped_rune(rune: int, quote_char: str) -> str:
    """strconv's appendEscapedRune (not ASCII-only): one rune as it appears between
    `quote_char` characters."""
    if rune == ord(quote_char) or rune == 0x5C:
        return "\\" + chr(rune)
    if is_print(rune):
        return chr(rune)
    short = _SHORT_ESCAPES.get(rune)
    if short is not None:
        return short
    if rune < 0x20 or rune == 0x7F:
        return "\\x" + _HEX[rune >> 4] + _HEX[rune & 0xF]
    if rune < 0x10000:
        return f"\\u{rune:04x}"
    return f"\\U{rune:08x}"


def rune_at(data: bytes, index: int) -> tuple[int | None, int]:
    """utf8.DecodeRune of data[index:]: (the rune, its length), or (None, 1) where the
    byte there does not start a valid UTF-8 sequence."""
    lead = data[index]
    if lead < 0x80:
        return lead, 1
    size = 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else \
        4 if lead >> 3 == 0b11110 else 0
    if size == 0:
        return None, 1
    try:
        return ord(data[index:index + size].decode("utf-8")), size
    except UnicodeDecodeError:
        return None, 1


def quote(text: str | bytes) -> str:
    """strconv.Quote: `text` in double quotes with Go's escapes (invalid UTF-8 as \\xNN)."""
    data = to_bytes(text)
    if data.isascii():
        out = ['"']
        for byte in data:
            out.append(chr(byte) if 0x20 <= byte < 0x7F and byte not in (0x22, 0x5C)
                       else escaped_rune(byte, '"'))
        out.append('"')
        return "".join(out)
    out, index, end = ['"'], 0, len(data)
    while index < end:
        rune, size = rune_at(data, index)
        if rune is None:
            byte = data[index]
            out.append("\\x" + _HEX[byte >> 4] + _HEX[byte & 0xF])
        else:
            out.append(escaped_rune(rune, '"'))
        index += size
    out.append('"')
    return "".join(out)


def quote_rune(rune: int | None) -> str:
    """strconv.QuoteRune: one rune in single quotes (None, an invalid one, is U+FFFD)."""
    if rune is None or 0xD800 <= rune <= 0xDFFF or rune > 0x10FFFF:
        rune = 0xFFFD
    return "'" + escaped_rune(rune, "'") + "'"


def json_quote_rune(data: bytes, index: int) -> str:
    """encoding/json's name for the character at data[index] in a syntax error
    (jsonwire.QuoteRune): strconv.QuoteRune of the rune, or ``'\\xNN'`` (hex without
    padding) for a byte that does not start valid UTF-8."""
    rune, _ = rune_at(data, index)
    if rune is None:
        return f"'\\x{data[index]:x}'"
    return quote_rune(rune)


def time_quote(text: str | bytes) -> str:
    """The time package's quote(): double quotes, ``"`` and ``\\`` escaped, every byte of
    a control or non-ASCII character as ``\\xNN`` (DEL stays as it is)."""
    out = ['"']
    for byte in to_bytes(text):
        if byte < 0x20 or byte >= 0x80:
            out.append("\\x" + _HEX[byte >> 4] + _HEX[byte & 0xF])
        elif byte == 0x22 or byte == 0x5C:
            out.append("\\" + chr(byte))
        else:
            out.append(chr(byte))
    out.append('"')
    return "".join(out)
