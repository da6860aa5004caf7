"""A task step's own fields: its command (translated to a shell command), its `command_type` (only `shell`
runs here) and its retry policy (limit, policy, backoff), each problem with its step and field."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .commands import translate_command
from .errors import Problems, unknown_key_message
from .model import Retry, TaskStep

RETRY_POLICIES = ("Always", "OnFailure", "OnError", "OnTransientError")
_DURATION = re.compile(r"^(\d+|(\d+(\.\d+)?(ns|us|ms|s|m|h))+)$")
_RETRY_KEYS = ("limit", "policy", "backoff")
_BACKOFF_KEYS = ("duration", "factor", "max_duration")
# Magnus's `command_type`: `shell` is what every task is here; the others ran code through Magnus inside the
# container, which nothing here does, so each says what to write instead.
SHELL_COMMAND_TYPE = "shell"
_UNSUPPORTED_COMMAND_TYPES = {
    "python": "a Python function Magnus called in the container; write the shell command that runs it "
    "(command: python -m your.module, or python -c 'from your.module import f; f()')",
    "notebook": "a notebook Magnus executed in the container; write the shell command that runs it "
    "(command: papermill notebook.ipynb out.ipynb, or jupyter nbconvert --execute --to notebook "
    "notebook.ipynb)",
}


def read_task(
    raw: Mapping[str, Any],
    common: dict[str, Any],
    where: str,
    parameters: Mapping[str, Any],
    items: tuple[str, ...],
    problems: Problems,
) -> TaskStep:
    """A task step from its document: `common` holds the fields every step has (name, path, flow);
    `parameters` and `items` are the names its command may refer to."""
    command = None
    if "command" not in raw:
        problems.add(where, "command", "is required for a task")
    else:
        try:
            command = translate_command(raw["command"], parameters, items)
        except ValueError as error:
            problems.add(where, "command", str(error))
    _check_command_type(raw.get("command_type", SHELL_COMMAND_TYPE), where, problems)
    retry = _read_retry(raw.get("retry"), where, problems)
    if command is None:
        return TaskStep(**common, retry=retry)
    return TaskStep(**common, command=command, retry=retry)


def _check_command_type(value: Any, where: str, problems: Problems) -> None:
    """Magnus's `command_type`: `shell` (its default) is how every task runs here, so it is accepted as it
    is; Magnus's other types are refused with the command to write instead."""
    if value == SHELL_COMMAND_TYPE:
        return
    if isinstance(value, str) and value in _UNSUPPORTED_COMMAND_TYPES:
        problems.add(
            where, "command_type", f"{value!r} is not supported: it was {_UNSUPPORTED_COMMAND_TYPES[value]}"
        )
        return
    problems.add(where, "command_type", f"{value!r} must be shell: every task's command runs in a shell here")


def _read_retry(value: Any, where: str, problems: Problems) -> Retry | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = {"limit": value}
    if not isinstance(value, Mapping):
        problems.add(where, "retry", "must be a number of retries or {limit, policy, backoff}")
        return None
    for key in value:
        if key not in _RETRY_KEYS:
            problems.add(where, f"retry.{key}", unknown_key_message(str(key), _RETRY_KEYS))
    limit = value.get("limit")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        problems.add(where, "retry.limit", f"{limit!r} must be a whole number of retries, 0 or more")
        limit = 0
    policy = value.get("policy", "OnFailure")
    if policy not in RETRY_POLICIES:
        problems.add(where, "retry.policy", f"{policy!r} must be one of {', '.join(RETRY_POLICIES)}")
        policy = "OnFailure"
    backoff = value.get("backoff") or {}
    if not isinstance(backoff, Mapping):
        problems.add(where, "retry.backoff", "must be a mapping of duration, factor, max_duration")
        backoff = {}
    for key in backoff:
        if key not in _BACKOFF_KEYS:
            problems.add(where, f"retry.backoff.{key}", unknown_key_message(str(key), _BACKOFF_KEYS))
    durations = {
        key: _read_duration(backoff.get(key), where, f"retry.backoff.{key}", problems)
        for key in ("duration", "max_duration")
    }
    factor = backoff.get("factor")
    if factor is not None and (not isinstance(factor, int) or isinstance(factor, bool) or factor < 1):
        problems.add(where, "retry.backoff.factor", f"{factor!r} must be a whole number, 1 or more")
        factor = None
    if backoff and durations["duration"] is None:
        problems.add(where, "retry.backoff.duration", "is required when backoff is set")
    return Retry(
        limit=limit,
        policy=policy,
        backoff_duration=durations["duration"],
        backoff_factor=factor,
        backoff_max_duration=durations["max_duration"],
    )


def _read_duration(value: Any, where: str, field_name: str, problems: Problems) -> str | None:
    if value is None:
        return None
    text = str(value)
    if isinstance(value, bool) or not _DURATION.match(text):
        problems.add(where, field_name, f"{value!r} is not a duration (examples: 30s, 2m, 1h30m, or seconds)")
        return None
    return text
