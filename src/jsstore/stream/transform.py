"""Subject transforms: nats-server's subject mapping (``server/subject_transform.go``).

A transform maps subjects that match a source pattern onto a destination built from
literal tokens, the ``>`` tail and mapping functions, one destination token each::

    $n, {{wildcard(n)}}            the n-th ``*`` of the source (1-based)
    {{partition(n, i, j, ...)}}    FNV-1a 32 of wildcards i, j, ... concatenated, mod n
    {{partition(n)}}               the same over the whole subject ("a.b.c")
    {{splitFromLeft(i, pos)}}      wildcard i cut in two tokens after ``pos`` bytes
    {{splitFromRight(i, pos)}}     ... ``pos`` bytes before its end
    {{sliceFromLeft(i, size)}}     wildcard i in tokens of ``size`` bytes, remainder last
    {{sliceFromRight(i, size)}}    ... remainder first
    {{split(i, delimiter)}}        wildcard i split on ``delimiter``, empty parts dropped
    {{left(i, n)}} / {{right(i, n)}}   the first / last n bytes of wildcard i
    {{random(n)}}                  a random number in [0, n)

Function names take either case for their first letter of each word, as nats-server's
regular expressions do.  Lengths and positions count UTF-8 bytes like Go; a cut inside a
multi-byte character yields a lone byte, kept in the ``str`` as a surrogate escape.

``SubjectTransform(src, dest, strict=False)`` builds a transform or raises
``TransformError`` with nats-server's error text; ``strict`` is nats-server's
``NewSubjectTransformStrict`` (imports: only wildcards, each source wildcard used).
``validate_mapping`` is nats-server's ``ValidateMapping``, the check a stream's
``subject_transform`` and its sources' and mirror's transforms go through.
"""

from __future__ import annotations

import random
import re
from typing import NamedTuple

TOKEN_SEPARATOR = "."
PARTIAL_WILDCARD = "*"
FULL_WILDCARD = ">"
_INT32_MAX = 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_FNV32_OFFSET = 2166136261
_FNV32_PRIME = 16777619

# Error kinds and their nats-server texts (server/errors.go).
BAD_SUBJECT = "bad_subject"
INVALID_DESTINATION_SUBJECT = "invalid_destination_subject"
NOT_USING_ALL_WILDCARDS = "not_using_all_wildcards"
UNKNOWN_FUNCTION = "unknown_function"
INDEX_OUT_OF_RANGE = "index_out_of_range"
NOT_ENOUGH_ARGS = "not_enough_args"
INVALID_ARG = "invalid_arg"
TOO_MANY_ARGS = "too_many_args"
NOT_SUPPORTED_FOR_IMPORT = "not_supported_for_import"

_DESTINATION = "invalid mapping destination"
ERROR_TEXTS = {
    BAD_SUBJECT: "invalid subject",
    INVALID_DESTINATION_SUBJECT: f"{_DESTINATION}: invalid transform",
    NOT_USING_ALL_WILDCARDS: f"{_DESTINATION}: not using all of the token wildcard(s)",
    UNKNOWN_FUNCTION: f"{_DESTINATION}: unknown function",
    INDEX_OUT_OF_RANGE: f"{_DESTINATION}: wildcard index out of range",
    NOT_ENOUGH_ARGS: f"{_DESTINATION}: not enough arguments passed to the function",
    INVALID_ARG: f"{_DESTINATION}: function argument is invalid or in the wrong format",
    TOO_MANY_ARGS: f"{_DESTINATION}: too many arguments passed to the function",
    NOT_SUPPORTED_FOR_IMPORT: f"{_DESTINATION}: the only mapping function allowed for "
                              "import transforms is {{Wildcard()}}",
}


class TransformError(ValueError):
    """An invalid mapping.  ``kind`` is one of the constants above; ``token`` the offending
    destination token (None for the bare errors).  ``str()`` is nats-server's text:
    ``"<error> in <token>"`` when the token is not empty."""

    def __init__(self, kind: str, token: str | None = None):
        self.kind = kind
        self.token = token
        text = ERROR_TEXTS[kind]
        super().__init__(f"{text} in {token}" if token else text)


# Destination token kinds (nats-server's transform type enum).
LITERAL = "literal"
WILDCARD = "wildcard"
PARTITION = "partition"
SPLIT_FROM_LEFT = "splitFromLeft"
SPLIT_FROM_RIGHT = "splitFromRight"
SLICE_FROM_LEFT = "sliceFromLeft"
SLICE_FROM_RIGHT = "sliceFromRight"
SPLIT = "split"
LEFT = "left"
RIGHT = "right"
RANDOM = "random"


def _function_pattern(name: str) -> re.Pattern:
    # Each word's first letter in either case, blanks as Go's \s, the argument list greedy.
    letters = "".join(f"[{c.lower()}{c.upper()}]" if c.isupper() or i == 0 else c
                      for i, c in enumerate(name))
    return re.compile(r"\{\{[\t\n\f\r ]*" + letters + r"[\t\n\f\r ]*\((.*)\)[\t\n\f\r ]*\}\}")


# The order nats-server tries them in.
_FUNCTION_PATTERNS = [(kind, _function_pattern(kind)) for kind in (
    WILDCARD, PARTITION, SPLIT_FROM_LEFT, SPLIT_FROM_RIGHT, SLICE_FROM_LEFT, SLICE_FROM_RIGHT,
    RIGHT, LEFT, SPLIT, RANDOM)]
_ARGUMENT_SEPARATOR = re.compile(r",[\t\n\f\r ]*")
_DECIMAL = re.compile(r"[+-]?[0-9]+")
_BLANKS = frozenset("\t\n\f\r ")


def _go_int(text: str, low: int = _INT64_MIN, high: int = _INT64_MAX) -> int | None:
    """Go's strconv.Atoi / ParseInt(text, 10, bits): None when not a number in range."""
    if not _DECIMAL.fullmatch(text):
        return None
    value = int(text)
    return value if low <= value <= high else None


def _int32(value: int) -> int:
    """Go's int32(value) conversion (wraps)."""
    value &= 0xFFFFFFFF
    return value - 2**32 if value > _INT32_MAX else value


class DestinationToken(NamedTuple):
    """One parsed destination token."""
    kind: str                       # LITERAL, WILDCARD, PARTITION, ...
    wildcards: tuple[int, ...]      # wildcard numbers named as arguments (1-based)
    number: int                     # partitions, position, size or ceiling; -1 if none
    delimiter: str                  # split's delimiter, else ""


def parse_destination_token(token: str) -> DestinationToken:
    """nats-server's ``indexPlaceHolders``: what a destination token asks for.  Raises
    TransformError for a malformed function."""
    length = len(token)
    if length > 1 and token[0] == "$":
        number = _go_int(token[1:])
        if number is None:                  # "$foo" stays a literal token
            return DestinationToken(LITERAL, (), -1, "")
        return DestinationToken(WILDCARD, (number,), -1, "")
    if not (length > 4 and token.startswith("{{") and token.endswith("}}")):
        return DestinationToken(LITERAL, (), -1, "")
    for kind, pattern in _FUNCTION_PATTERNS:
        found = pattern.search(token)
        if found is not None:
            return _parse_function(kind, token, _ARGUMENT_SEPARATOR.split(found.group(1)))
    raise TransformError(UNKNOWN_FUNCTION, token)


def _parse_function(kind: str, token: str, args: list[str]) -> DestinationToken:
    if kind == WILDCARD:
        if len(args) == 1 and args[0] == "":
            raise TransformError(NOT_ENOUGH_ARGS, token)
        if len(args) > 1:
            raise TransformError(TOO_MANY_ARGS, token)
        number = _go_int(args[0].strip(" "))
        if number is None:
            raise TransformError(INVALID_ARG, token)
        return DestinationToken(WILDCARD, (number,), -1, "")
    if kind in (PARTITION, RANDOM):
        if kind == RANDOM and len(args) != 1:
            raise TransformError(NOT_ENOUGH_ARGS, token)
        count = _go_int(args[0].strip(" "))
        if count is None or count > _INT32_MAX:
            raise TransformError(INVALID_ARG, token)
        wildcards = []
        for arg in args[1:]:
            number = _go_int(arg.strip(" "))
            if number is None:
                raise TransformError(INVALID_ARG, token)
            wildcards.append(number)
        return DestinationToken(kind, tuple(wildcards), _int32(count), "")
    if len(args) < 2:
        raise TransformError(NOT_ENOUGH_ARGS, token)
    if len(args) > 2:
        raise TransformError(TOO_MANY_ARGS, token)
    number = _go_int(args[0].strip(" "))
    if number is None:
        raise TransformError(INVALID_ARG, token)
    if kind == SPLIT:
        if " " in args[1] or TOKEN_SEPARATOR in args[1]:
            raise TransformError(INVALID_ARG, token)
        return DestinationToken(SPLIT, (number,), -1, args[1])
    amount = _go_int(args[1].strip(" "), -(2**31), _INT32_MAX)
    if amount is None:
        raise TransformError(INVALID_ARG, token)
    return DestinationToken(kind, (number,), amount, "")


def subject_info(subject: str) -> tuple[bool, list[str], int, bool]:
    """(valid, tokens, number of ``*``, ends in ``>``) as transforms judge subjects: no
    empty token and nothing after ``>``; other characters are not checked."""
    if not subject:
        return False, [], 0, False
    tokens = subject.split(TOKEN_SEPARATOR)
    partials, full = 0, False
    for token in tokens:
        if not token or full:
            return False, [], 0, False
        if token == FULL_WILDCARD:
            full = True
        elif token == PARTIAL_WILDCARD:
            partials += 1
    return True, tokens, partials, full


def fnv1a32(data: bytes) -> int:
    """32-bit FNV-1a, Go's hash/fnv New32a."""
    value = _FNV32_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return value


def partition_of(key: str, partitions: int) -> int:
    """The partition nats-server's ``{{partition}}`` gives ``key`` (0 when there are
    none; a negative count wraps as Go's uint32 conversion does)."""
    if partitions == 0:
        return 0
    return fnv1a32(key.encode("utf-8", "surrogateescape")) % (partitions & 0xFFFFFFFF)


def _bytes_of(token: str) -> bytes:
    return token.encode("utf-8", "surrogateescape")


def _text_of(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _apply_function(step: DestinationToken, sources: list[int], tokens: list[str]) -> str:
    """One mapping function over the subject's tokens (``sources``: token positions)."""
    kind, size = step.kind, step.number
    if kind == WILDCARD:
        return tokens[sources[0]] if sources and sources[0] < len(tokens) else ""
    if kind == PARTITION:
        if sources:
            key = "".join(tokens[position] for position in sources)
        else:
            key = TOKEN_SEPARATOR.join(tokens)
        return str(partition_of(key, size))
    if kind == RANDOM:
        return "0" if size == 0 else str(random.getrandbits(31) % abs(size))
    source = tokens[sources[0]]
    if kind == SPLIT:
        parts = source.split(step.delimiter) if step.delimiter else list(source)
        pieces = []
        for index, part in enumerate(parts):
            pieces.append(part)
            if (index < len(parts) - 1 and parts[index + 1] != ""
                    and not (index == 0 and part == "")):
                pieces.append(TOKEN_SEPARATOR)
        return "".join(pieces)
    data = _bytes_of(source)
    length = len(data)
    if not 0 < size < length:           # too short to cut: the token unchanged
        return source
    if kind == SPLIT_FROM_LEFT:
        return _text_of(data[:size] + b"." + data[size:])
    if kind == SPLIT_FROM_RIGHT:
        return _text_of(data[:length - size] + b"." + data[length - size:])
    if kind == LEFT:
        return _text_of(data[:size])
    if kind == RIGHT:
        return _text_of(data[length - size:])
    if kind == SLICE_FROM_LEFT:
        cut = length - length % size
        slices = [data[start:start + size] for start in range(0, cut, size)]
        if cut < length:
            slices.append(data[cut:])
        return _text_of(b".".join(slices))
    remainder = length % size           # SLICE_FROM_RIGHT
    slices = [data[:remainder]] if remainder else []
    slices += [data[start:start + size] for start in range(remainder, length, size)]
    return _text_of(b".".join(slices))


def subject_matches(tokens: list[str], pattern_tokens: list[str]) -> bool:
    """Whether literal subject tokens match a pattern's tokens (``*`` one, ``>`` the rest)."""
    for index, pattern in enumerate(pattern_tokens):
        if index >= len(tokens):
            return False
        if pattern == FULL_WILDCARD:
            return True
        if pattern != PARTIAL_WILDCARD and pattern != tokens[index]:
            return False
    return len(tokens) == len(pattern_tokens)


def _is_literal(tokens: list[str]) -> bool:
    return all(token and token not in (PARTIAL_WILDCARD, FULL_WILDCARD) for token in tokens)


class SubjectTransform:
    """A validated mapping from ``src`` (a pattern; "" means ``>``) to ``dest``.

    An empty ``dest`` is nats-server's "no transform": subjects matching ``src`` map to
    themselves (``is_identity``).
    """

    __slots__ = ("src", "dest", "strict", "source_tokens", "dest_tokens", "steps",
                 "step_sources")

    def __init__(self, src: str, dest: str, *, strict: bool = False):
        self.src = src or FULL_WILDCARD      # the source pattern ("" taken as ">")
        self.dest = dest                     # the destination as given
        self.strict = strict                 # built with nats-server's strict rules
        self.source_tokens = self.src.split(TOKEN_SEPARATOR)   # src split on "."
        self.dest_tokens: list[str] = []     # dest split on "."
        self.steps: list[DestinationToken] = []    # one per destination token
        self.step_sources: list[list[int]] = []    # per step: subject token positions
        if dest:
            self._build(strict)

    def _build(self, strict: bool) -> None:
        source_ok, source_tokens, partials, source_full = subject_info(self.src)
        dest_ok, dest_tokens, dest_partials, dest_full = subject_info(self.dest)
        if not source_ok or not dest_ok or dest_partials or source_full != dest_full:
            raise TransformError(BAD_SUBJECT)
        # Wildcard number (1-based) -> its token position in the source.  nats-server looks
        # numbers up in a map, so an unknown number (0, negative) reads position 0.
        positions = {number: position for number, position in enumerate(
            (i for i, token in enumerate(source_tokens) if token == PARTIAL_WILDCARD), 1)}
        used = 0
        for token in dest_tokens:
            step = parse_destination_token(token)
            if not (partials or source_full):
                if step.kind not in (LITERAL, RANDOM, PARTITION):
                    raise TransformError(INDEX_OUT_OF_RANGE, token)
                self.steps.append(step)
                self.step_sources.append([])
                continue
            if strict and step.kind not in (LITERAL, WILDCARD):
                raise TransformError(NOT_SUPPORTED_FOR_IMPORT, token)
            sources = []
            if step.kind not in (LITERAL, RANDOM):
                used += len(step.wildcards)
                for number in step.wildcards:
                    if number > partials:
                        raise TransformError(INDEX_OUT_OF_RANGE, f"{token}: [{number}]")
                    sources.append(positions.get(number, 0))
            self.steps.append(step)
            self.step_sources.append(sources)
        if strict and partials and used < partials:
            raise TransformError(NOT_USING_ALL_WILDCARDS, self.dest)
        self.source_tokens, self.dest_tokens = source_tokens, dest_tokens

    @property
    def is_identity(self) -> bool:
        """True for the no-op transforms: empty destination, or ``>`` to ``>``."""
        return not self.dest or (self.src == FULL_WILDCARD and self.dest == FULL_WILDCARD)

    def match(self, subject: str) -> str | None:
        """The mapped subject, or None when ``subject`` is not a literal subject matching
        ``src`` (nats-server's ``Match``)."""
        if self.src == FULL_WILDCARD and self.dest in ("", FULL_WILDCARD):
            return subject
        tokens = subject.split(TOKEN_SEPARATOR)
        if not _is_literal(tokens):
            return None
        if self.src != FULL_WILDCARD and not subject_matches(tokens, self.source_tokens):
            return None
        return self._transform_tokens(tokens)

    def transform(self, subject: str) -> str:
        """Map a subject already known to match ``src`` (nats-server's
        ``TransformSubject``); raises ValueError when a function's token is missing."""
        return self._transform_tokens(subject.split(TOKEN_SEPARATOR))

    def _transform_tokens(self, tokens: list[str]) -> str:
        if not self.steps:
            return self.dest if self.dest else TOKEN_SEPARATOR.join(tokens)
        parts = []
        try:
            for step, sources, token in zip(self.steps, self.step_sources, self.dest_tokens):
                if step.kind == LITERAL:
                    if token == FULL_WILDCARD:
                        break
                    parts.append(token)
                else:
                    parts.append(_apply_function(step, sources, tokens))
        except IndexError:
            raise ValueError(f"subject {subject_text(tokens)!r} does not match {self.src!r}")
        if self.dest_tokens[-1] == FULL_WILDCARD:
            parts.extend(tokens[len(self.source_tokens) - 1:])
        return TOKEN_SEPARATOR.join(parts)

    def reverse(self) -> SubjectTransform | None:
        """nats-server's ``reverse``: the wildcard placeholders of ``dest`` become the new
        source's ``*``s and are handed back, in destination order, to the old source's
        ``*``s; built strictly, None when that fails.  This undoes the transform when the
        wildcard order is an involution (swaps, identity), not for longer cycles."""
        if not self.dest:
            return None
        new_source, placeholders = [], []
        for token in self.dest.split(TOKEN_SEPARATOR):
            if _is_wildcard_placeholder(token):
                placeholders.append(token)
                new_source.append(PARTIAL_WILDCARD)
            else:
                new_source.append(token)
        new_dest = []
        for token in self.source_tokens:
            if token == PARTIAL_WILDCARD:
                if not placeholders:
                    return None
                new_dest.append(placeholders.pop(0))
            else:
                new_dest.append(token)
        try:
            return SubjectTransform(TOKEN_SEPARATOR.join(new_source),
                                    TOKEN_SEPARATOR.join(new_dest), strict=True)
        except TransformError:
            return None

    def __repr__(self) -> str:
        return f"SubjectTransform({self.src!r}, {self.dest!r}, strict={self.strict})"


def subject_text(tokens: list[str]) -> str:
    return TOKEN_SEPARATOR.join(tokens)


def _is_wildcard_placeholder(token: str) -> bool:
    if len(token) > 1 and token[0] == "$" and "1" <= token[1] <= "9":
        return True
    found = _FUNCTION_PATTERNS[0][1].search(token)
    if found is None:
        return False
    args = _ARGUMENT_SEPARATOR.split(found.group(1))
    return len(args) == 1 and args[0] != ""


def validate_mapping(src: str, dest: str) -> None:
    """nats-server's ``ValidateMapping``: raise TransformError unless ``dest`` is a valid
    destination for ``src``.  Stricter than the transform itself about the destination's
    form (known functions only, no blanks in literal tokens); an empty ``dest`` is valid."""
    if not dest:
        return
    after_full_wildcard = False
    for token in dest.split(TOKEN_SEPARATOR):
        length = len(token)
        if length == 0 or after_full_wildcard:
            raise TransformError(INVALID_DESTINATION_SUBJECT, token)
        if length > 4 and token.startswith("{{") and token.endswith("}}"):
            if not any(pattern.search(token) for _, pattern in _FUNCTION_PATTERNS):
                raise TransformError(UNKNOWN_FUNCTION, token)
            continue
        if token == FULL_WILDCARD:
            after_full_wildcard = True
        elif _BLANKS.intersection(token):
            raise TransformError(INVALID_DESTINATION_SUBJECT)
    SubjectTransform(src, dest)


def transform_error(src: str, dest: str) -> str | None:
    """Why ``validate_mapping`` rejects src -> dest (nats-server's text), None if it does not."""
    try:
        validate_mapping(src, dest)
    except TransformError as error:
        return str(error)
    return None
