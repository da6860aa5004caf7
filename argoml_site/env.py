"""Small typed readers for environment variables that fail loudly on bad values (healthchecks style).

Every reader names the variable in its error, so a bad deployment stops at start-up with a message a
person can act on instead of misbehaving later.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_Number = TypeVar("_Number", int, float)


def env_str(name: str, default: str = "") -> str:
    """A string, read from NAME or from the file named by NAME_FILE (Kubernetes Secret mounts)."""
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        if name in os.environ:
            raise ImproperlyConfigured(f"Set either {name} or {name}_FILE, not both.")
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_path!r} cannot be read: {exc.strerror}.") from exc
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={raw!r} is not a boolean; use one of true/false, 1/0, yes/no, on/off."
    )


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    return _env_number(name, default, int, "an integer", minimum)


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    return _env_number(name, default, float, "a number", minimum)


def _env_number(
    name: str, default: _Number, parse: Callable[[str], _Number], what: str, minimum: _Number | None
) -> _Number:
    """NAME read by `parse`, or `default` when it is unset or blank; a value that is not `what` or is below
    `minimum` stops the start-up naming the variable."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not {what}.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below its minimum of {minimum}.")
    return value


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    """A comma-separated list; blanks around items are dropped."""
    raw = os.environ.get(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    value = os.environ.get(name, default).strip()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of: {', '.join(choices)}.")
    return value
