"""What the command prints: JSON answers, aligned tables, sizes and times; bold headings
only on a terminal (and never with NO_COLOR set)."""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone

import msgspec


def on_terminal(stream=None) -> bool:
    """Whether `stream` (stdout) is a terminal: colour and progress only then."""
    stream = stream or sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def bold(text: str) -> str:
    if on_terminal() and not os.environ.get("NO_COLOR"):
        return f"\x1b[1m{text}\x1b[0m"
    return text


def print_json(value) -> None:
    """A JSON document indented as the nats CLI prints it."""
    if isinstance(value, (bytes, bytearray)):
        value = msgspec.json.decode(value)
    print(msgspec.json.format(msgspec.json.encode(value), indent=2).decode())


def table(title: str, header: list[str], rows: list[list]) -> str:
    """An aligned table with a title line (the nats CLI's list look, without frames)."""
    cells = [[str(c) for c in header]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = [bold(title), ""] if title else []
    for n, row in enumerate(cells):
        line = "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
        lines.append(bold(line) if n == 0 else line)
    return "\n".join(lines)


def size(n: int | None) -> str:
    """Bytes as the nats CLI shows them (1,024-based units)."""
    value = float(n or 0)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def count(n: int | None) -> str:
    return f"{int(n or 0):,}"


def when(stamp: str | None) -> str:
    """An RFC 3339 time of an answer as a UTC date and time (empty for Go's zero time)."""
    if not stamp or stamp.startswith("0001-01-01"):
        return ""
    try:
        head, _, frac = stamp.rstrip("Z").partition(".")
        moment = datetime.fromisoformat(head).replace(tzinfo=timezone.utc)
    except ValueError:
        return stamp
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def duration(ns: int | None) -> str:
    """Nanoseconds as a short duration (0 or none: "unlimited")."""
    if not ns:
        return "unlimited"
    seconds = ns / 1e9
    parts = []
    for unit, span in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= span:
            parts.append(f"{int(seconds // span)}{unit}")
            seconds %= span
    if seconds or not parts:
        parts.append(f"{seconds:g}s")
    return "".join(parts)


def limit(n: int | None) -> str:
    """A limit of a configuration: -1 and 0 read "unlimited"."""
    return "unlimited" if n is None or n <= 0 else count(n)


def fields(pairs: list[tuple[str, str]]) -> str:
    """Label: value lines with the labels right-aligned, as `nats stream info` shows them."""
    width = max((len(k) for k, _ in pairs), default=0)
    return "\n".join(f"{k.rjust(width)}: {v}" for k, v in pairs)
