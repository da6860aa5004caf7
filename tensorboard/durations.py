"""Go's duration syntax (`2h`, `90m`, `1h30m`): `spec.idleTimeout` uses it because kubectl users know it."""

from __future__ import annotations

import re
from datetime import timedelta

_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> timedelta:
    """`1h30m` → 1.5 hours. Raises ValueError naming the text when it is not a Go duration."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"idleTimeout: {text!r} is not a duration like 2h, 90m or 1h30m.")
    position, seconds = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != position:
            break
        seconds += float(match.group(1)) * _SECONDS[match.group(2)]
        position = match.end()
    if position != len(text):
        raise ValueError(f"idleTimeout: {text!r} is not a duration like 2h, 90m or 1h30m.")
    return timedelta(seconds=seconds)


def format_duration(duration: timedelta) -> str:
    """The shortest Go duration for a whole number of seconds: 7200 s → `2h`, 5400 s → `1h30m`."""
    total = int(duration.total_seconds())
    if total <= 0:
        return "0s"
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{value}{unit}" for value, unit in ((hours, "h"), (minutes, "m"), (seconds, "s")) if value]
    return "".join(parts)
