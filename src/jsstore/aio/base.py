"""The base of ``jsstore.aio``'s answer and configuration types: dataclasses read from the
JSON nats-server answers with and written back as the JSON requests carry, as nats-py's
``nats.js.api.Base`` does.

A subclass lists what needs converting: ``_nested`` (field -> type, for objects and lists
of them), ``_seconds`` (durations: nanoseconds on the wire, float seconds here; None is
written as 0, as nats-py writes it, unless listed in ``_optional_seconds``) and
``_times`` (RFC 3339 on the wire, aware UTC datetimes here).  Unknown fields of an answer
are ignored; None fields are not written.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, ClassVar, TypeVar

NANOSECOND = 10**9

B = TypeVar("B", bound="Base")


def parse_time(text: str) -> datetime.datetime:
    """An RFC 3339 time (nanoseconds allowed) as an aware UTC datetime (microseconds)."""
    text = text.replace("Z", "+00:00")
    if "." in text:
        head, rest = text.split(".", 1)
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = head + "." + rest[:digits][:6].ljust(6, "0") + rest[digits:]
    return datetime.datetime.fromisoformat(text).astimezone(datetime.timezone.utc)


def format_time(value: datetime.datetime | str) -> str:
    """A datetime as RFC 3339 UTC (naive means UTC); a string passes unchanged."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    value = value.astimezone(datetime.timezone.utc)
    return value.isoformat().replace("+00:00", "Z").replace(".000000", "")


def to_nanoseconds(seconds: float | None) -> int:
    return 0 if seconds is None else int(seconds * NANOSECOND)


@dataclasses.dataclass
class Base:
    """A JSON object of the JetStream API as a dataclass."""

    _nested: ClassVar[dict[str, type]] = {}
    _seconds: ClassVar[tuple[str, ...]] = ()
    _times: ClassVar[tuple[str, ...]] = ()
    _optional_seconds: ClassVar[tuple[str, ...]] = ()   # durations left out when 0 or None

    @classmethod
    def from_response(cls: type[B], resp: dict[str, Any]) -> B:
        """The object an answer's JSON object describes (unknown fields ignored)."""
        params = {}
        for field in dataclasses.fields(cls):
            if field.name not in resp:
                continue
            value = resp[field.name]
            if value is not None:
                if field.name in cls._nested:
                    kind = cls._nested[field.name]
                    value = ([kind.from_response(v) for v in value] if isinstance(value, list)
                             else kind.from_response(value))
                elif field.name in cls._seconds:
                    value = ([v / NANOSECOND for v in value] if isinstance(value, list)
                             else value / NANOSECOND)
                elif field.name in cls._times:
                    value = parse_time(value)
            params[field.name] = value
        return cls(**params)

    def evolve(self: B, **params) -> B:
        """A copy with `params` replaced."""
        return dataclasses.replace(self, **params)

    def as_dict(self) -> dict[str, object]:
        """The JSON object a request carries."""
        result: dict[str, object] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name in self._seconds:
                value = ([to_nanoseconds(v) for v in value] if isinstance(value, list)
                         else to_nanoseconds(value))
                if not value and field.name in self._optional_seconds:
                    continue
            elif value is None:
                continue
            elif isinstance(value, Base):
                value = value.as_dict()
            elif isinstance(value, list) and value and isinstance(value[0], Base):
                value = [v.as_dict() for v in value]
            elif field.name in self._times:
                value = format_time(value)
            result[field.name] = value
        return result
