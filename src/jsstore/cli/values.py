"""The command line's values: Go durations (``1h30m``, also ``2d``, ``1w``, ``1y`` as the
nats CLI takes them), sizes (``512``, ``1KB``, ``10MiB``, ``1G``), names and subjects."""

from __future__ import annotations

import argparse
import re

from jsstore._core.storage.subjects import is_valid_subject
from jsstore.cli.errors import UsageError
from jsstore.gocompat.durations import parse_go_duration
from jsstore.stream.config import is_valid_asset_name

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


def asset_name(text: str) -> str:
    """A stream, consumer or bucket name, refused at once where nats-server would never
    answer a request naming it (the name is a token of the API subject)."""
    if not is_valid_asset_name(text):
        raise argparse.ArgumentTypeError(
            f"invalid name {text!r}: a name can not be empty or contain whitespace, '.', "
            f"'*', '>', '/' or '\\'")
    return text


def publish_subject(text: str) -> str:
    """A subject to publish to: not empty, no whitespace (what a client may send)."""
    if not text or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(
            f"invalid subject {text!r}: a subject can not be empty or contain whitespace")
    return text


def subscribe_subject(text: str) -> str:
    """A subject to subscribe to: valid, wildcards allowed."""
    if not is_valid_subject(text, True):
        raise argparse.ArgumentTypeError(f"invalid subject {text!r}")
    return text
