"""The command line's values: Go durations (``1h30m``, also ``2d``, ``1w``, ``1y`` as the
nats CLI takes them) and sizes (``512``, ``1KB``, ``10MiB``, ``1G``)."""

from __future__ import annotations

import re

from jsstore.cli.errors import UsageError
from jsstore.gocompat.durations import parse_go_duration

DAY = 86400 * 10**9
LONG_UNITS = {"d": DAY, "w": 7 * DAY, "y": 365 * DAY}
SIZE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([kmgtp]?)(i?)(b?)\s*$", re.IGNORECASE)
POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def duration_ns(text: str, flag: str) -> int:
    """Nanoseconds of a duration flag's value; UsageError naming the flag if it is none."""
    text = text.strip()
    match = re.fullmatch(r"(\d+)([dwy])", text)
    if match:
        return int(match.group(1)) * LONG_UNITS[match.group(2)]
    if text.isdigit():
        return int(text) * 10**9 if text != "0" else 0
    try:
        return parse_go_duration(text)
    except ValueError:
        raise UsageError(f"{flag}: invalid duration {text!r}") from None


def size_bytes(text: str, flag: str) -> int:
    """Bytes of a size flag's value (1K = 1024, as the nats CLI counts)."""
    match = SIZE.match(text)
    if match is None:
        raise UsageError(f"{flag}: invalid size {text!r}")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * 1024 ** POWERS[unit])
