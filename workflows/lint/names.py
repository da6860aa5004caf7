"""Name rules: Argo's template/step/task/parameter/artifact names and Kubernetes object names and labels."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from kube.names import NameFormat
from workflows.lint.errors import LintError

WORKFLOW_FIELD_NAME_MAX = 128
_WORKFLOW_FIELD_NAME = re.compile(r"[a-zA-Z0-9][-a-zA-Z0-9]*")
_WORKFLOW_FIELD_NAME_MESSAGE = (
    "name must consist of alpha-numeric characters or '-', and must start with an alpha-numeric character"
    " (e.g. My-name1-2, 123-NAME)"
)
_PARAM_NAME = re.compile(r"[-a-zA-Z0-9_]+")
_PARAM_NAME_MESSAGE = (
    "Parameter/Artifact name must consist of alpha-numeric characters, '_' or '-' e.g. my_param_1, MY-PARAM-1"
)

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.',"
    " and must start and end with an alphanumeric character"
)
LABEL_VALUE_MAX = 63
QUALIFIED_NAME_MAX = 63


def _problems(value: str, max_length: int, pattern: re.Pattern[str], message: str) -> list[str]:
    """Kubernetes' two checks of a name: its length, then its form (`message` when `pattern` refuses it)."""
    problems = []
    if len(value) > max_length:
        problems.append(f"must be no more than {max_length} characters")
    if not pattern.fullmatch(value):
        problems.append(message)
    return problems


def workflow_field_name_problems(name: str) -> list[str]:
    """Why a template, step or task name is invalid (Argo's isValidWorkflowFieldName); empty when valid."""
    return _problems(name, WORKFLOW_FIELD_NAME_MAX, _WORKFLOW_FIELD_NAME, _WORKFLOW_FIELD_NAME_MESSAGE)


def param_name_problems(name: str) -> list[str]:
    """Why a parameter or artifact name is invalid; empty when valid."""
    return [] if _PARAM_NAME.fullmatch(name) else [_PARAM_NAME_MESSAGE]


def check_named_list(items: Any, path: str, *, parameters: bool) -> list[LintError]:
    """Argo's validateWorkflowFieldNames: every item has a valid name, and no name is used twice.

    ``parameters`` selects the looser parameter/artifact name rule over the template/step/task one.
    """
    if not isinstance(items, list):
        return []
    errors = []
    seen: set[str] = set()
    check = param_name_problems if parameters else workflow_field_name_problems
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        where = f"{path}[{index}].name"
        name = text(item.get("name"))
        if not name:
            errors.append(LintError(where, f"{where} is required"))
            continue
        problems = check(name)
        if problems:
            errors.append(LintError(where, f"{where}: '{name}' is invalid: {';'.join(problems)}"))
        elif name in seen:
            errors.append(LintError(where, f"{where} '{name}' is not unique"))
        seen.add(name)
    return errors


def named_items(items: Any) -> Iterable[tuple[int, dict[str, Any], str]]:
    """(index, item, name) for each object of a list, skipping what the structural check already reported."""
    if not isinstance(items, list):
        return
    for index, item in enumerate(items):
        if isinstance(item, dict):
            yield index, item, text(item.get("name"))


def text(value: Any) -> str:
    """A string field as Go reads it from YAML: absent or null is "", scalars become their text."""
    if value is None or isinstance(value, dict | list):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def label_key_problems(key: str) -> list[str]:
    """Why a label or annotation key is not a valid qualified name (``[prefix/]name``); empty when valid."""
    prefix, _, name = key.rpartition("/")
    problems = []
    if "/" in key and not prefix:
        problems.append("prefix part must be non-empty")
    elif "/" in key:
        problems += [f"prefix part {problem}" for problem in NameFormat.SUBDOMAIN.problems(prefix)]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        problems.append(f"name part must be no more than {QUALIFIED_NAME_MAX} characters")
    elif not _QUALIFIED_NAME.fullmatch(name):
        problems.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with"
            " an alphanumeric character"
        )
    return problems


def label_value_problems(value: str) -> list[str]:
    """Why a label value is invalid; empty when valid."""
    return _problems(value, LABEL_VALUE_MAX, _LABEL_VALUE, _LABEL_VALUE_MESSAGE)
