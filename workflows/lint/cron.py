"""CronWorkflow rules: schedules in the standard five-field cron syntax (as robfig/cron parses them) and
the cron-only fields (timezone, concurrencyPolicy, startingDeadlineSeconds, name length)."""

from __future__ import annotations

import functools
import zoneinfo
from typing import Any

from workflows.lint.durations import is_duration
from workflows.lint.model import SpecContext, as_list
from workflows.lint.names import text

CRON_NAME_MAX = 52  # the name gets "-<unix time>" appended and must then fit 63 characters
CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace", "")
_DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
_MONTHS = {
    name: number
    for number, name in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1
    )
}
_DAYS = {name: number for number, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# (lowest, highest, names) of minute, hour, day of month, month and day of week.
_FIELDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
)


class _CronError(ValueError):
    pass


def schedule_problem(schedule: str) -> str | None:
    """Why robfig/cron's standard parser rejects the schedule, in its words; None when it parses."""
    try:
        _parse_schedule(schedule)
    except _CronError as exc:
        return str(exc)
    return None


def _parse_schedule(spec: str) -> None:
    if not spec:
        raise _CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        zone = spec[spec.index("=") + 1 : space if space != -1 else len(spec)]
        if timezone_problem(zone):
            raise _CronError(f"provided bad location {zone}: unknown time zone {zone}")
        spec = spec[space:].strip() if space != -1 else ""
    if spec.startswith("@"):
        if spec.startswith("@every "):
            duration = spec.removeprefix("@every ").strip()
            if not is_duration(duration):
                raise _CronError(f'failed to parse duration {spec}: time: invalid duration "{duration}"')
        elif spec not in _DESCRIPTORS:
            raise _CronError(f"unrecognized descriptor: {spec}")
        return
    fields = spec.split()
    if len(fields) != len(_FIELDS):
        raise _CronError(f"expected exactly {len(_FIELDS)} fields, found {len(fields)}: [{' '.join(fields)}]")
    for field, (lowest, highest, names) in zip(fields, _FIELDS, strict=True):
        for part in field.split(","):
            _parse_range(part, lowest, highest, names)


def _parse_range(expression: str, lowest: int, highest: int, names: dict[str, int]) -> None:
    range_and_step = expression.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = lowest, highest
    else:
        start = _number(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _number(low_and_high[1], names)
        else:
            raise _CronError(f"too many hyphens: {expression}")
    step = 1
    if len(range_and_step) == 2:
        step = _number(range_and_step[1], {})
        if len(low_and_high) == 1:
            end = highest
    elif len(range_and_step) > 2:
        raise _CronError(f"too many slashes: {expression}")
    if start < lowest:
        raise _CronError(f"beginning of range ({start}) below minimum ({lowest}): {expression}")
    if end > highest:
        raise _CronError(f"end of range ({end}) above maximum ({highest}): {expression}")
    if start > end:
        raise _CronError(f"beginning of range ({start}) beyond end of range ({end}): {expression}")
    if step == 0:
        raise _CronError(f"step of range should be a positive number: {expression}")


def _number(token: str, names: dict[str, int]) -> int:
    if token.lower() in names:
        return names[token.lower()]
    if not token.lstrip("+-").isdigit() or not token.isascii():
        raise _CronError(f'failed to parse int from {token}: strconv.Atoi: parsing "{token}": invalid syntax')
    number = int(token)
    if number < 0:
        raise _CronError(f"negative number ({number}) not allowed: {token}")
    return number


def timezone_problem(zone: str) -> str | None:
    """Why Go's time.LoadLocation would reject the zone name; None when it is known (or we cannot tell)."""
    if zone in ("", "UTC", "Local") or not _zone_database_available():
        return None
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {zone}"
    return None


@functools.cache
def _zone_database_available() -> bool:
    """Without a time zone database every name looks unknown; then we accept them rather than reject all."""
    return bool(zoneinfo.available_timezones())


def check_cron_spec(ctx: SpecContext, name: str, spec: dict[str, Any]) -> None:
    """The rules Argo applies to a CronWorkflow before validating the workflow it starts."""
    if len(name) > CRON_NAME_MAX:
        ctx.report_message(
            "metadata.name",
            f'cron workflow name "{name}" must not be more than {CRON_NAME_MAX} characters long'
            f" (currently {len(name)})",
        )
    schedules = as_list(spec.get("schedules"))
    if not schedules:
        ctx.report_message("spec.schedules", "cron workflow must have at least one schedule")
    for index, schedule in enumerate(schedules):
        if problem := schedule_problem(text(schedule)):
            ctx.report_message(
                f"spec.schedules[{index}]", f"cron schedule {text(schedule)} is malformed: {problem}"
            )
    zone = text(spec.get("timezone"))
    if problem := timezone_problem(zone):
        ctx.report_message("spec.timezone", f'invalid timezone "{zone}": {problem}')
    policy = text(spec.get("concurrencyPolicy"))
    if policy not in CONCURRENCY_POLICIES:
        ctx.report_message("spec.concurrencyPolicy", f"'{policy}' is not a valid concurrencyPolicy")
    deadline = spec.get("startingDeadlineSeconds")
    if isinstance(deadline, int | float) and not isinstance(deadline, bool) and deadline < 0:
        ctx.report_message("spec.startingDeadlineSeconds", "startingDeadlineSeconds must be positive")
