"""When a message schedule fires: the patterns of `Nats-Schedule` (`@at`, `@every`, 6-field
cron and its `@hourly`-style aliases), evaluated in a `Nats-Schedule-Time-Zone`.

Fire times follow nats-server's Go arithmetic: times are instants (Unix seconds) read in
the zone, hours/minutes/seconds step by absolute time, and a wall-clock time that a DST
change skips or repeats resolves as Go's time.Date does.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import date, datetime, timezone, tzinfo
from zoneinfo import ZoneInfo

from jsstore.gocompat.durations import SECOND, parse_go_duration
from jsstore.gocompat.times import format_go_time, from_unix_ns, parse_time_ns

_CRON_ALIASES = {
    "@yearly": "0 0 0 1 1 *", "@annually": "0 0 0 1 1 *", "@monthly": "0 0 0 1 * *",
    "@weekly": "0 0 0 * * 0", "@daily": "0 0 0 * * *", "@midnight": "0 0 0 * * *",
    "@hourly": "0 0 * * * *",
}
_MONTH_NAMES = {name: number + 1 for number, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DAY_NAMES = {name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (min, max, names) of: second, minute, hour, day of month, month, day of week
_CRON_FIELDS = ((0, 59, None), (0, 59, None), (0, 23, None), (1, 31, None), (1, 12, _MONTH_NAMES),
                (0, 6, _DAY_NAMES))
_STAR = 1 << 63          # set in a field's bits when it was written with * or ?
_YEARS_AHEAD = 5         # a cron with no time in this many years is invalid
_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_EPOCH = date(1970, 1, 1)


def _local_zone() -> tzinfo:
    name = os.environ.get("TZ")
    if name is not None:
        return timezone.utc if name in ("", "UTC") else ZoneInfo(name.lstrip(":"))
    try:
        with open("/etc/localtime", "rb") as file:
            return ZoneInfo.from_file(file, key="Local")
    except OSError:
        return timezone.utc


def load_zone(name: str | None) -> tzinfo:
    """The zone of a Nats-Schedule-Time-Zone value (None or "UTC": UTC; "Local": this
    machine's); ValueError when there is no such zone (an empty name included)."""
    if name is None or name == "UTC":
        return timezone.utc
    if not name:
        raise ValueError("empty time zone")
    if name == "Local":
        return _local_zone()
    try:
        return ZoneInfo(name)
    except (ValueError, OSError) as exc:  # ZoneInfoNotFoundError is a KeyError
        raise ValueError(f"unknown time zone {name!r}") from exc
    except KeyError as exc:
        raise ValueError(f"unknown time zone {name!r}") from exc


def valid_time_zone(name: str) -> bool:
    try:
        load_zone(name)
    except ValueError:
        return False
    return True


def format_rfc3339(ns: int, zone_name: str | None = None) -> str:
    """Go's Format(time.RFC3339) of Unix ns in a zone: whole seconds, "Z" for offset 0."""
    moment = datetime.fromtimestamp(ns // SECOND, load_zone(zone_name))
    return format_go_time(from_unix_ns(ns, int(moment.utcoffset().total_seconds())),
                          fraction=False)


def _round_second(ns: int) -> int:
    """Unix seconds of `ns` rounded to the nearest second, halves up (Go's Round)."""
    seconds, rest = divmod(ns, SECOND)
    return seconds if rest * 2 < SECOND else seconds + 1


def first_fire(pattern: str, zone_name: str | None, ts: int, now: int | None) -> tuple[int, bool]:
    """(fire ns, repeating) of a pattern counted from `ts`, as nats-server's
    parseMsgSchedule: `@at` gives its time (even a past one); `@every d` round(ts) + d;
    cron the first matching second after round(ts). A repeating time before `now` is
    counted again from `now`. ValueError for an invalid pattern or time zone (a zone is
    only allowed with cron)."""
    if pattern.startswith("@at "):
        if zone_name is not None:
            raise ValueError("@at takes no time zone")
        return parse_time_ns(pattern[4:]), False
    if pattern.startswith("@every "):
        if zone_name is not None:
            raise ValueError("@every takes no time zone")
        interval = parse_go_duration(pattern[7:])
        if interval < SECOND:
            raise ValueError("@every needs at least one second")
        fire = _round_second(ts) * SECOND + interval
        if now is not None and fire < now:
            fire = _round_second(now) * SECOND + interval
        return fire, True
    fields = CronFields.parse(_CRON_ALIASES.get(pattern, pattern))
    zone = load_zone(zone_name)
    fire = fields.next_after(_round_second(ts), zone) * SECOND
    if now is not None and fire < now:
        fire = fields.next_after(_round_second(now), zone) * SECOND
    return fire, True


def _cron_bits(field: str, low: int, high: int, names: dict | None) -> int:
    bits = 0
    for part in (piece for piece in field.split(",") if piece):
        range_step = part.split("/")
        low_high = range_step[0].split("-")
        star = 0
        if low_high[0] in ("*", "?"):
            start, end, star = low, high, _STAR
        else:
            start = _cron_int(low_high[0], names)
            if len(low_high) == 1:
                end = start
            elif len(low_high) == 2:
                end = _cron_int(low_high[1], names)
            else:
                raise ValueError(f"too many hyphens: {part}")
        if len(range_step) == 1:
            step = 1
        elif len(range_step) == 2:
            step = _cron_int(range_step[1], None)
            if len(low_high) == 1:
                end = high
            if step > 1:
                star = 0
        else:
            raise ValueError(f"too many slashes: {part}")
        if start < low or end > high or start > end or step == 0:
            raise ValueError(f"range out of bounds: {part}")
        for value in range(start, end + 1, step):
            bits |= 1 << value
        bits |= star
    return bits


def _cron_int(text: str, names: dict | None) -> int:
    if names is not None and text.lower() in names:
        return names[text.lower()]
    if not _INT.fullmatch(text):
        raise ValueError(f"not a number: {text!r}")
    value = int(text)
    if value < 0:
        raise ValueError(f"negative number: {text!r}")
    return value


class _Clock:
    """An instant (Unix seconds) read in a zone, with Go's time.Date/AddDate arithmetic."""

    __slots__ = ("zone", "unix", "wall")

    def __init__(self, zone: tzinfo, unix: int):
        self.zone: tzinfo = zone
        self.set(unix)

    def set(self, unix: int) -> None:
        self.unix: int = unix                                        # the instant
        self.wall: datetime = datetime.fromtimestamp(unix, self.zone)  # its wall clock

    def _offset(self, unix: int) -> int:
        return int(datetime.fromtimestamp(unix, self.zone).utcoffset().total_seconds())

    def set_date(self, year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> None:
        """time.Date: the fields normalised (month 13 is next January, day 32 the next
        month), then the wall clock resolved to an instant as Go does across DST changes."""
        year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
        days = (date(year, month, 1) - _EPOCH).days + day - 1
        wall = days * 86400 + hour * 3600 + minute * 60 + second
        offset = self._offset(wall)
        if offset != 0:
            offset = self._offset(wall - offset)
        self.set(wall - offset)

    def add_date(self, months: int, days: int) -> None:
        wall = self.wall
        self.set_date(wall.year, wall.month + months, wall.day + days, wall.hour, wall.minute, wall.second)

    def weekday(self) -> int:
        return (self.wall.weekday() + 1) % 7  # Sunday = 0


@dataclass(frozen=True, slots=True)
class CronFields:
    """A 6-field cron pattern as bit sets (bit n set: value n matches; bit 63: written *)."""

    second: int
    minute: int
    hour: int
    day_of_month: int
    month: int
    day_of_week: int

    @classmethod
    def parse(cls, pattern: str) -> "CronFields":
        fields = pattern.split()
        if len(fields) != 6:
            raise ValueError(f"pattern requires 6 fields, got {len(fields)}")
        return cls(*(_cron_bits(field, *bounds) for field, bounds in zip(fields, _CRON_FIELDS)))

    def _day_matches(self, clock: _Clock) -> bool:
        dom = bool(self.day_of_month >> clock.wall.day & 1)
        dow = bool(self.day_of_week >> clock.weekday() & 1)
        if self.day_of_month & _STAR or self.day_of_week & _STAR:
            return dom and dow
        return dom or dow

    def next_after(self, start: int, zone: tzinfo) -> int:
        """The first matching Unix second after `start` in `zone`; ValueError when there
        is none within five years."""
        clock = _Clock(zone, start + 1)
        year_limit = clock.wall.year + _YEARS_AHEAD
        truncated = False
        while True:
            if clock.wall.year > year_limit:
                raise ValueError("pattern exceeds maximum range")
            wrapped = False
            while not self.month >> clock.wall.month & 1:
                if not truncated:
                    truncated = True
                    clock.set_date(clock.wall.year, clock.wall.month, 1)
                clock.add_date(1, 0)
                if clock.wall.month == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self._day_matches(clock):
                if not truncated:
                    truncated = True
                    clock.set_date(clock.wall.year, clock.wall.month, clock.wall.day)
                clock.add_date(0, 1)
                if clock.wall.day == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self.hour >> clock.wall.hour & 1:
                if not truncated:
                    truncated = True
                    clock.set_date(clock.wall.year, clock.wall.month, clock.wall.day, clock.wall.hour)
                clock.set(clock.unix + 3600)
                if clock.wall.hour == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self.minute >> clock.wall.minute & 1:
                if not truncated:
                    truncated = True
                    clock.set(clock.unix - clock.unix % 60)
                clock.set(clock.unix + 60)
                if clock.wall.minute == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self.second >> clock.wall.second & 1:
                truncated = True
                clock.set(clock.unix + 1)
                if clock.wall.second == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            return clock.unix
