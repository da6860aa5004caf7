"""Go duration strings (``1h30m``, ``300ms``), which Argo parses for timeouts, delays and ``@every``."""

from __future__ import annotations

import re

_GO_DURATION = re.compile(r"[-+]?(0|((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)")
_INTEGER = re.compile(r"[+-]?\d+")


def is_duration(value: str) -> bool:
    """Whether Go's time.ParseDuration accepts the string."""
    return bool(_GO_DURATION.fullmatch(value))


def is_seconds_or_duration(value: str) -> bool:
    """Whether Argo's ParseStringToDuration accepts it: a whole number of seconds or a Go duration."""
    return bool(_INTEGER.fullmatch(value)) or is_duration(value)
