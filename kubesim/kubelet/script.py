"""What a simulated container does: pure parsing of the script format (pod annotation or Python rules).

The format is a JSON object from container name (or "*" for any container) to a behaviour, or to a list of
behaviours, one per run: run N uses entry N, and the last entry repeats for every later restart.

    {"main": {"duration": 5, "exitCode": 0, "output": ["epoch 1", "epoch 2"]},
     "sidecar": {"duration": null},
     "flaky": [{"duration": 1, "exitCode": 1}, {"duration": 2, "exitCode": 0}]}

A behaviour's keys (all optional): duration (seconds, null = until killed), exitCode, reason (default
Completed/Error by exit code), message, output (lines, or one string split on newlines, emitted evenly over
the duration, the first at start), waiting (a reason such as ImagePullBackOff: the container never starts),
terminationDelay (seconds it ignores SIGTERM when its pod is deleted, capped by the grace period).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SCRIPT_ANNOTATION = "kubesim.argoml.io/script"
#: an Argo step's scripted outputs (kubesim/argo/scripting.py); a pod carrying it is scripted, never run
OUTPUTS_ANNOTATION = "kubesim.argoml.io/outputs"
ANY_CONTAINER = "*"
_KEYS = frozenset({"duration", "exitCode", "reason", "message", "output", "waiting", "terminationDelay"})


class ScriptError(ValueError):
    """A script that cannot be understood; the message names the field and the problem."""


@dataclass(frozen=True)
class Run:
    """One run of a container (its first start, or one restart)."""

    duration: float | None = 2.0
    exit_code: int = 0
    reason: str = ""
    message: str = ""
    output: tuple[str, ...] = ()
    waiting: str = ""
    termination_delay: float = 0.0


@dataclass(frozen=True)
class ContainerScript:
    """Every run of one container; the last one repeats."""

    runs: tuple[Run, ...]

    def run(self, attempt: int) -> Run:
        return self.runs[min(attempt, len(self.runs) - 1)]


Script = dict[str, ContainerScript]


def _number(value: Any, path: str, *, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        expected = "a number of seconds >= 0" + (" or null" if allow_none else "")
        raise ScriptError(f"{path}: must be {expected}, got {value!r}")
    return float(value)


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ScriptError(f"{path}: must be a string, got {value!r}")
    return value


def _output(value: Any, path: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(value.splitlines())
    if not isinstance(value, list) or not all(isinstance(line, str) for line in value):
        raise ScriptError(f"{path}: must be a list of strings or a string, got {value!r}")
    return tuple(value)


def parse_run(raw: Any, path: str, default_duration: float | None = 2.0) -> Run:
    """One behaviour object; `default_duration` applies when it names no duration."""
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{path}: must be an object, got {raw!r}")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ScriptError(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    exit_code = raw.get("exitCode", 0)
    if isinstance(exit_code, bool) or not isinstance(exit_code, int) or not 0 <= exit_code <= 255:
        raise ScriptError(f"{path}.exitCode: must be an integer from 0 to 255, got {exit_code!r}")
    duration = (
        _number(raw["duration"], f"{path}.duration", allow_none=True)
        if "duration" in raw
        else default_duration
    )
    return Run(
        duration=duration,
        exit_code=exit_code,
        reason=_string(raw.get("reason", ""), f"{path}.reason"),
        message=_string(raw.get("message", ""), f"{path}.message"),
        output=_output(raw.get("output", []), f"{path}.output"),
        waiting=_string(raw.get("waiting", ""), f"{path}.waiting"),
        termination_delay=_number(raw.get("terminationDelay", 0), f"{path}.terminationDelay") or 0.0,
    )


def parse_container_script(raw: Any, path: str, default_duration: float | None = 2.0) -> ContainerScript:
    """A behaviour or a non-empty list of behaviours (one per run)."""
    if isinstance(raw, list):
        if not raw:
            raise ScriptError(f"{path}: a list of runs must not be empty")
        return ContainerScript(
            tuple(parse_run(item, f"{path}[{i}]", default_duration) for i, item in enumerate(raw))
        )
    return ContainerScript((parse_run(raw, path, default_duration),))


def parse_script(raw: Any, path: str = SCRIPT_ANNOTATION, default_duration: float | None = 2.0) -> Script:
    """A whole script: JSON text or an already decoded object, container name → behaviour(s)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as error:
            raise ScriptError(f"{path}: not valid JSON: {error}") from None
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{path}: must be a JSON object of container name to behaviour, got {raw!r}")
    return {
        str(name): parse_container_script(value, f"{path}.{name}", default_duration)
        for name, value in raw.items()
    }


def for_container(scripts: list[Script], name: str) -> ContainerScript | None:
    """The script for container `name` from the first source that has one (by name, else "*")."""
    for script in scripts:
        found = script.get(name) or script.get(ANY_CONTAINER)
        if found is not None:
            return found
    return None
