"""A CronJob's `spec.schedule` checked as the API server checks it: robfig/cron v3's `ParseStandard` (five
fields, or a descriptor such as `@hourly` or `@every 1h30m`), then batch validation's rule against `TZ=`
and `CRON_TZ=` prefixes (pkg/apis/batch/validation `validateScheduleFormat`, since 1.27). Pure functions;
the messages are the Go code's, so a 422 reads as a cluster's does.
"""

from __future__ import annotations

import json
import re
import zoneinfo
from dataclasses import dataclass

_STAR_FIELDS = ("*", "?")
_DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
_EVERY = "@every "
_MAX_INT64 = (1 << 63) - 1
_DURATION_NUMBER = re.compile(r"[0-9]*(\.[0-9]*)?")


@dataclass(frozen=True)
class _Bounds:
    minimum: int
    maximum: int
    names: dict[str, int]


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
#: minute, hour, day of month, month, day of week: the five fields of a standard spec, in order
_FIELDS = (
    _Bounds(0, 59, {}),
    _Bounds(0, 23, {}),
    _Bounds(1, 31, {}),
    _Bounds(1, 12, {name: number for number, name in enumerate(_MONTHS, start=1)}),
    _Bounds(0, 6, {name: number for number, name in enumerate(_DAYS)}),
)


class CronError(ValueError):
    """A schedule robfig/cron refuses; the text is its error's."""


def go_quote(text: str) -> str:
    """Go's `strconv.Quote` for the strings these messages show (printable text stays as it is)."""
    return json.dumps(text, ensure_ascii=False)


def schedule_problems(schedule: str, *, tz_allowed: bool = False, has_time_zone: bool = False) -> list[str]:
    """What batch validation says about a non-empty `spec.schedule` (each becomes `Invalid value`).

    `tz_allowed` is true on an update whose old schedule already held "TZ" (kept for CronJobs created
    before 1.27); such a schedule may not be combined with `spec.timeZone` (`has_time_zone`).
    """
    problems = []
    try:
        parse_standard(schedule)
    except CronError as error:
        problems.append(str(error))
    if "TZ" in schedule:
        if not tz_allowed:
            problems.append("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
        elif has_time_zone:
            problems.append("cannot use both timeZone field and TZ or CRON_TZ in schedule")
    return problems


def parse_standard(spec: str) -> None:
    """robfig/cron v3 `ParseStandard`: raises CronError with its message when `spec` is not a schedule."""
    if not spec:
        raise CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        location = spec[spec.index("=") + 1 : space if space >= 0 else len(spec)]
        problem = _location_problem(location)
        if problem:
            raise CronError(f"provided bad location {location}: {problem}")
        spec = spec[space:].strip() if space >= 0 else ""
    if spec.startswith("@"):
        _parse_descriptor(spec)
        return
    fields = spec.split()
    if len(fields) != len(_FIELDS):
        shown = "[" + " ".join(fields) + "]"
        raise CronError(f"expected exactly {len(_FIELDS)} fields, found {len(fields)}: {shown}")
    for text, bounds in zip(fields, _FIELDS, strict=True):
        for expression in (part for part in text.split(",") if part):
            _check_range(expression, bounds)


def _location_problem(name: str) -> str:
    """Why Go's `time.LoadLocation` refuses a name ("" and "UTC" are UTC, "Local" the machine's zone)."""
    if name in ("", "UTC", "Local"):
        return ""
    if ".." in name or name.startswith("/") or "\\" in name:
        return "time: invalid location name"
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {name}"
    return ""


def _parse_descriptor(descriptor: str) -> None:
    if descriptor in _DESCRIPTORS:
        return
    if descriptor.startswith(_EVERY):
        try:
            parse_go_duration(descriptor[len(_EVERY) :])
        except CronError as error:
            raise CronError(f"failed to parse duration {descriptor}: {error}") from None
        return
    raise CronError(f"unrecognized descriptor: {descriptor}")


def _check_range(expression: str, bounds: _Bounds) -> None:
    """robfig's getRange: `*`, `N`, `N-M`, each with an optional `/step`, names for months and days."""
    range_and_step = expression.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    if low_and_high[0] in _STAR_FIELDS:
        start, end = bounds.minimum, bounds.maximum
    else:
        start = _int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds.names)
        else:
            raise CronError(f"too many hyphens: {expression}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _non_negative_int(range_and_step[1])
        if single:  # "N/step" means "N-max/step"
            end = bounds.maximum
    else:
        raise CronError(f"too many slashes: {expression}")
    if start < bounds.minimum:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.minimum}): {expression}")
    if end > bounds.maximum:
        raise CronError(f"end of range ({end}) above maximum ({bounds.maximum}): {expression}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expression}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expression}")


def _int_or_name(text: str, names: dict[str, int]) -> int:
    named = names.get(text.lower())
    return named if named is not None else _non_negative_int(text)


def _non_negative_int(text: str) -> int:
    """robfig's mustParseInt over Go's `strconv.Atoi` (an optional sign, then decimal digits)."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not digits.isascii() or not digits.isdigit():
        raise CronError(
            f"failed to parse int from {text}: strconv.Atoi: parsing {go_quote(text)}: invalid syntax"
        )
    number = int(text)
    if not -_MAX_INT64 - 1 <= number <= _MAX_INT64:
        raise CronError(
            f"failed to parse int from {text}: strconv.Atoi: parsing {go_quote(text)}: value out of range"
        )
    if number < 0:
        raise CronError(f"negative number ({number}) not allowed: {text}")
    return number


_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}


def parse_go_duration(text: str) -> int:
    """Go's `time.ParseDuration` in nanoseconds: `[-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+`, or "0"."""
    invalid = CronError(f"time: invalid duration {go_quote(text)}")
    rest = text[1:] if text[:1] in ("+", "-") else text
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0.0
    while rest:
        match = _DURATION_NUMBER.match(rest)
        number = match.group(0) if match else ""
        if number in ("", "."):
            raise invalid
        number_end = len(number)
        unit_end = number_end
        while unit_end < len(rest) and rest[unit_end] not in "0123456789.":
            unit_end += 1
        unit = rest[number_end:unit_end]
        if not unit:
            raise CronError(f"time: missing unit in duration {go_quote(text)}")
        if unit not in _UNITS:
            raise CronError(f"time: unknown unit {go_quote(unit)} in duration {go_quote(text)}")
        total += float(number) * _UNITS[unit]
        rest = rest[unit_end:]
    if total > _MAX_INT64:
        raise invalid
    return int(-total if text.startswith("-") else total)
