"""Kubernetes label selectors, checked as metav1.LabelSelectorAsSelector does (podGC.labelSelector)."""

from __future__ import annotations

from typing import Any

from fields import as_dict
from workflows.lint.model import as_list
from workflows.lint.names import label_key_problems, label_value_problems, text

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def label_selector_problems(selector: Any) -> list[str]:
    """Why the selector would not compile, in Kubernetes' words; empty when it is valid."""
    selector = as_dict(selector)
    problems: list[str] = []
    for key, value in as_dict(selector.get("matchLabels")).items():
        problems.extend(_key_problems(str(key)))
        problems.extend(
            f'values[0][{key}]: Invalid value: "{text(value)}": {p}'
            for p in label_value_problems(text(value))
        )
    for expression in as_list(selector.get("matchExpressions")):
        expression = as_dict(expression)
        operator, key = text(expression.get("operator")), text(expression.get("key"))
        values = [text(value) for value in as_list(expression.get("values"))]
        if operator not in _OPERATORS:
            problems.append(f'"{operator}" is not a valid label selector operator')
            continue
        problems.extend(_key_problems(key))
        if operator in ("In", "NotIn") and not values:
            problems.append(
                "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
            )
        if operator in ("Exists", "DoesNotExist") and values:
            problems.append(
                f"values: Invalid value: {values}: values set must be empty for exists and does not exist"
            )
        for index, value in enumerate(values):
            problems.extend(
                f'values[{index}]: Invalid value: "{value}": {p}' for p in label_value_problems(value)
            )
    return problems


def _key_problems(key: str) -> list[str]:
    return [f'key: Invalid value: "{key}": {problem}' for problem in label_key_problems(key)]
