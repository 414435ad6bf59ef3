"""nats-server's configuration file format, the part ``jsstore serve -c`` reads.

The format: ``key: value``, ``key = value`` or ``key value``; maps in ``{}``, arrays in
``[]`` (items separated by commas or new lines); ``#`` and ``//`` comments; quoted or
bare strings; integers, floats, booleans (true/false/yes/no/on/off) and sizes (``1GB``,
``512MB``, ``64K``: powers of 1024); ``$name`` for a variable defined earlier in the file
or in the environment; ``include "other.conf"`` relative to the including file.

What the settings mean to the server is ``jsstore.server.options``.
"""

from __future__ import annotations

import os
import re

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kKmMgGtT])[bB]?$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|.?)", re.DOTALL)
_ESCAPED = {"t": "\t", "n": "\n", "r": "\r", '"': '"', "\\": "\\"}
_BOOLEANS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


class ConfigError(ValueError):
    pass


class ConfigMap(dict):
    """A map of a configuration, with where each of its keys is written (nats-server's
    ``file:line:column``: the column counts bytes, from 0 on a file's first line and from
    1 on the others, as nats-server's lexer does), and the names used as ``$variables``
    anywhere in the file (a key only used as a variable is not an unknown field)."""

    __slots__ = ("places", "used_variables")

    def __init__(self, used_variables: set):
        super().__init__()
        self.places: dict[str, str] = {}
        self.used_variables = used_variables

    def place(self, key: str) -> str:
        """Where `key` is written (empty when not known)."""
        return self.places.get(key, "")

    def merge(self, other: "ConfigMap") -> None:
        """The keys of an included file, with their places."""
        self.update(other)
        self.places.update(other.places)


class _Parser:
    def __init__(self, text: str, path: str | None, variables: dict,
                 including: tuple[str, ...] = ()):
        self.text = text
        self.pos = 0
        self.path = path
        self.variables = variables
        self.including = including     # the files whose includes led here
        self.used: set = set()          # the names used as $variables

    def place(self) -> str:
        """Where the parser is, as nats-server's configuration errors say it."""
        start = self.text.rfind("\n", 0, self.pos)
        line = self.text.count("\n", 0, self.pos) + 1
        column = len(self.text[start + 1:self.pos].encode()) + (start >= 0)
        return f"{self.path or 'configuration'}:{line}:{column}"

    def error(self, what: str) -> ConfigError:
        line = self.text.count("\n", 0, self.pos) + 1
        where = f"{self.path}:{line}" if self.path else f"line {line}"
        return ConfigError(f"{where}: {what}")

    def skip(self, newlines: bool = True) -> None:
        text = self.text
        while self.pos < len(text):
            c = text[self.pos]
            if c in " \t\r" or (newlines and c in "\n,;"):
                self.pos += 1
            elif c == "#" or text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            else:
                return

    def parse_map(self, closing: str | None) -> ConfigMap:
        out = ConfigMap(self.used)
        while True:
            self.skip()
            if self.pos >= len(self.text):
                if closing:
                    raise self.error(f"missing '{closing}'")
                return out
            if closing and self.text[self.pos] == closing:
                self.pos += 1
                return out
            place = self.place()
            key = self.parse_key()
            self.skip(newlines=False)
            if key == "include" and self.text[self.pos:self.pos + 1] in ("\"", "'"):
                out.merge(self.include(self.parse_string()))
                continue
            out.places[key] = place
            if self.text[self.pos:self.pos + 1] in (":", "="):
                self.pos += 1
                self.skip(newlines=False)
            value = self.parse_value()
            out[key] = value
            self.variables[key] = value

    def parse_key(self) -> str:
        if self.text[self.pos] in "\"'":
            return self.parse_string()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in " \t\r\n:={}[],#":
            self.pos += 1
        if start == self.pos:
            raise self.error(f"unexpected {self.text[self.pos]!r}")
        return self.text[start:self.pos]

    def parse_string(self) -> str:
        quote = self.text[self.pos]
        end = self.text.find(quote, self.pos + 1)
        if end < 0:
            raise self.error("unterminated string")
        value = self.text[self.pos + 1:end]
        self.pos = end + 1
        return self.unescape(value) if quote == '"' else value

    def unescape(self, value: str) -> str:
        """nats-server's escapes in a double-quoted string: \\xXX, \\t, \\n, \\r, \\" and \\\\."""
        def one(match: re.Match) -> str:
            escape = match.group(1)
            if escape[:1] == "x" and len(escape) == 3:
                return chr(int(escape[1:], 16))
            if escape in _ESCAPED:
                return _ESCAPED[escape]
            raise self.error(f"invalid escape character {escape[:1]!r}: only \\xXX, \\t, \\n, "
                             "\\r, \\\" and \\\\ are allowed")
        return _ESCAPE.sub(one, value) if "\\" in value else value

    def parse_value(self):
        if self.pos >= len(self.text):
            raise self.error("missing value")
        c = self.text[self.pos]
        if c == "{":
            self.pos += 1
            return self.parse_map("}")
        if c == "[":
            self.pos += 1
            items = []
            while True:
                self.skip()
                if self.pos >= len(self.text):
                    raise self.error("missing ']'")
                if self.text[self.pos] == "]":
                    self.pos += 1
                    return items
                start = self.pos
                items.append(self.parse_value())
                if self.pos == start:       # a '}' (or nothing) where an item belongs
                    raise self.error(f"unexpected {self.text[self.pos]!r} in an array")
        if c in "\"'":
            return self.parse_string()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in "\n,;}]#":
            if self.text.startswith("//", self.pos):
                break
            self.pos += 1
        return self.scalar(self.text[start:self.pos].strip())

    def scalar(self, raw: str):
        if raw.startswith("$"):
            name = raw[1:]
            self.used.add(name)
            if name in self.variables:
                return self.variables[name]
            if name in os.environ:
                return self.scalar(os.environ[name])
            raise self.error(f"variable reference for {name!r} on line can not be found")
        lowered = raw.lower()
        if lowered in _BOOLEANS:
            return _BOOLEANS[lowered]
        if _NUMBER.match(raw):
            return float(raw) if "." in raw else int(raw)
        size = _SIZE.match(raw)
        if size:
            return int(float(size.group(1)) * _UNITS[size.group(2).lower()])
        return raw

    def include(self, name: str) -> ConfigMap:
        base = os.path.dirname(self.path) if self.path else "."
        path = os.path.join(base, name)
        including = self.including + (os.path.normpath(self.path or "."),)
        if os.path.normpath(path) in including:
            raise self.error(f"include {name!r} includes itself")
        with open(path) as f:
            parser = _Parser(f.read(), path, self.variables, including)
            parser.used = self.used
            return parser.parse_map(None)


def parse(text: str, path: str | None = None) -> ConfigMap:
    """The configuration in `text` as nested dicts and lists; ConfigError for text that is
    not a configuration (OSError for an include that cannot be read)."""
    try:
        return _Parser(text, path, {}).parse_map(None)
    except RecursionError:
        raise ConfigError(f"{path or 'configuration'}: maps, arrays or includes nested too "
                          "deeply") from None


def load(path: str) -> ConfigMap:
    with open(path) as f:
        return parse(f.read(), path)
