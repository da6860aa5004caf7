"""Argo's `{{...}}` substitution and fan-out (withItems, withParam, withSequence), as pure functions."""

from __future__ import annotations

import json
import re
from typing import Any

from kubesim.argo.names import expanded_name, go_string

_TAG = re.compile(r"\{\{\s*([^{}=][^{}]*?)\s*\}\}")


class WorkflowError(ValueError):
    """A workflow that cannot run as written; the message becomes the node's (or workflow's) message."""


def substitute(value: Any, scope: dict[str, str]) -> Any:
    """Replace `{{name}}` for every name in `scope` in all strings of `value`; other tags stay as written."""
    if isinstance(value, str):
        if "{{" not in value:
            return value
        return _TAG.sub(lambda match: scope.get(match.group(1), match.group(0)), value)
    if isinstance(value, dict):
        return {key: substitute(item, scope) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, scope) for item in value]
    return value


def item_scope(item: Any) -> dict[str, str]:
    """`{{item}}` and, for a map item, `{{item.<key>}}`."""
    scope = {"item": go_string(item)}
    if isinstance(item, dict):
        scope.update({f"item.{key}": go_string(value) for key, value in item.items()})
    return scope


def _sequence(spec: dict[str, Any]) -> list[str]:
    def number(field: str) -> int | None:
        raw = spec.get(field)
        if raw is None or raw == "":
            return None
        try:
            return int(str(raw))
        except ValueError:
            raise WorkflowError(f"withSequence.{field}: {raw!r} is not an integer") from None

    count, start, end = number("count"), number("start"), number("end")
    if count is not None and end is not None:
        raise WorkflowError("withSequence: only one of count or end can be defined")
    start = start or 0
    if count is not None:
        numbers = list(range(start, start + count))
    elif end is not None:
        numbers = list(range(start, end + 1)) if end >= start else list(range(start, end - 1, -1))
    else:
        raise WorkflowError("withSequence: one of count or end must be defined")
    pattern = spec.get("format")
    if pattern:
        try:
            return [str(pattern) % n for n in numbers]
        except (TypeError, ValueError) as error:
            raise WorkflowError(f"withSequence.format {pattern!r}: {error}") from None
    return [str(n) for n in numbers]


def fan_out_items(step: dict[str, Any]) -> list[Any] | None:
    """The items a step or task fans out over, or None when it does not fan out."""
    if step.get("withItems") is not None:
        items = step["withItems"]
        if not isinstance(items, list):
            raise WorkflowError("withItems must be a list")
        return items
    if step.get("withParam") is not None:
        raw = step["withParam"]
        try:
            items = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            raise WorkflowError(
                f"withParam value could not be parsed as a JSON list: {str(raw).strip()}"
            ) from None
        if not isinstance(items, list):
            raise WorkflowError(f"withParam value could not be parsed as a JSON list: {str(raw).strip()}")
        return items
    if step.get("withSequence") is not None:
        return list(_sequence(step["withSequence"]))
    return None


def expand(step: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Concrete copies of a fanned-out step (`name(i:item)`, item substituted); None if not fanned out."""
    items = fan_out_items(step)
    if items is None:
        return None
    body = {k: v for k, v in step.items() if k not in ("withItems", "withParam", "withSequence")}
    expanded = []
    for index, item in enumerate(items):
        concrete = substitute(body, item_scope(item))
        concrete["name"] = expanded_name(step["name"], index, item)
        concrete["template"] = step.get("template")
        expanded.append(concrete)
    return expanded


def parameter_values(parameters: list[dict[str, Any]] | None) -> dict[str, str]:
    """name → value of a list of Argo parameters (values as strings, as Argo passes them)."""
    found = {}
    for parameter in parameters or []:
        if isinstance(parameter, dict) and "value" in parameter and parameter.get("name"):
            found[str(parameter["name"])] = go_string(parameter["value"])
    return found


def resolve_inputs(template: dict[str, Any], arguments: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The template's input parameters with values from the arguments, else their own value or default."""
    given = parameter_values((arguments or {}).get("parameters"))
    resolved = []
    for parameter in (template.get("inputs") or {}).get("parameters") or []:
        name = str(parameter.get("name", ""))
        if name in given:
            value = given[name]
        elif parameter.get("value") is not None:
            value = go_string(parameter["value"])
        elif parameter.get("default") is not None:
            value = go_string(parameter["default"])
        else:
            raise WorkflowError(f"inputs.parameters.{name} was not supplied")
        resolved.append({"name": name, "value": value})
    return resolved


#: where an artifact can be: a location given means it needs no argument (Argo's HasLocationOrKey)
ARTIFACT_LOCATIONS = ("s3", "gcs", "oss", "hdfs", "http", "artifactory", "azure", "git", "raw", "plugin")


def has_location(artifact: dict[str, Any]) -> bool:
    return any(isinstance(artifact.get(kind), dict) for kind in ARTIFACT_LOCATIONS)


def _argument_artifact(argument: dict[str, Any]) -> dict[str, Any] | None:
    """An argument artifact with its `from` resolved (the scope held the output artifact as JSON); None
    when an optional one names an output that does not exist."""
    source = argument.get("from")
    if source is None:
        return dict(argument)
    text = str(source)
    if "{{" in text:
        if argument.get("optional"):
            return None
        tag = text.strip().removeprefix("{{").removesuffix("}}").strip()
        prefix = "unable to resolve references: " if tag.startswith("steps.") else ""
        raise WorkflowError(f'{prefix}Unable to resolve: "{tag}"')
    try:
        found = json.loads(text)
    except ValueError:
        raise WorkflowError(f"Variable {{{{{text}}}}} is not an artifact") from None
    if not isinstance(found, dict):
        raise WorkflowError(f"Variable {{{{{text}}}}} is not an artifact")
    return {**{k: v for k, v in found.items() if k != "name"}, "name": argument.get("name")}


def resolve_input_artifacts(
    template: dict[str, Any], arguments: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The template's input artifacts as the executor loads them (Argo's ProcessArgs): the argument of the
    same name (its `from` resolved) in place of the input, keeping the input's path and mode; an input
    with a location of its own stands; a required one with neither is the node's error."""
    given = {str(a.get("name")): a for a in (arguments or {}).get("artifacts") or [] if isinstance(a, dict)}
    resolved = []
    for artifact in (template.get("inputs") or {}).get("artifacts") or []:
        name = str(artifact.get("name", ""))
        argument = _argument_artifact(given[name]) if name in given else None
        if not artifact.get("optional") and not has_location(artifact):
            if name not in given:
                raise WorkflowError(f"inputs.artifacts.{name} was not supplied")
            if argument is not None and not has_location(argument):
                raise WorkflowError(f"inputs.artifacts.{name} missing location information")
        if argument is None:
            resolved.append(dict(artifact))
            continue
        for field in ("path", "mode", "recurseMode"):
            argument.pop(field, None)
            if field in artifact:
                argument[field] = artifact[field]
        resolved.append(argument)
    return resolved


def input_artifact_scope(artifacts: list[dict[str, Any]]) -> dict[str, str]:
    """`{{inputs.artifacts.<name>}}` (to pass it on with `from`) and `{{inputs.artifacts.<name>.path}}`."""
    scope = {}
    for artifact in artifacts:
        scope[f"inputs.artifacts.{artifact['name']}"] = json.dumps(artifact)
        if artifact.get("path"):
            scope[f"inputs.artifacts.{artifact['name']}.path"] = str(artifact["path"])
    return scope


def retries(policy: str, phase: str) -> bool:
    return {
        "Always": True,
        "OnFailure": phase == "Failed",
        "OnError": phase == "Error",
        "OnTransientError": phase == "Error",
    }.get(policy, phase == "Failed")


def parse_duration(text: str) -> float:
    """Argo durations: a number of seconds, or Go style (`30s`, `2m`, `1h30m`)."""
    try:
        return float(text)
    except ValueError:
        pass
    total, number = 0.0, ""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0}
    for char in text.strip():
        if char.isdigit() or char == ".":
            number += char
        elif char in units and number:
            total += float(number) * units[char]
            number = ""
        else:
            raise WorkflowError(f"invalid duration {text!r}")
    if number:
        raise WorkflowError(f"invalid duration {text!r}: missing unit")
    return total


def backoff_seconds(backoff: dict[str, Any], attempts: int) -> float:
    if not backoff.get("duration"):
        return 0.0
    base = parse_duration(str(backoff["duration"]))
    factor = float(str(backoff.get("factor") or 1))
    wait = base * factor ** (attempts - 1)
    if backoff.get("maxDuration"):
        wait = min(wait, parse_duration(str(backoff["maxDuration"])))
    return wait
