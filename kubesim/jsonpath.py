"""The JSONPath subset of CRD printer columns: `.a.b`, `['a.b']`, `[0]`, `[-1:]`, `[*]`, `[?(@.k=="v")]`."""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_\-$]+)
      |\[\s*'(?P<quoted>(?:[^'\\]|\\.)*)'\s*\]
      |\[\s*"(?P<dquoted>(?:[^"\\]|\\.)*)"\s*\]
      |\[(?P<index>-?\d+)\]
      |\[(?P<slice>-?\d*:-?\d*)\]
      |\[\*\]|\.\*
      |\[\?\(@\.(?P<filter_path>[A-Za-z0-9_.\-]+)\s*(?P<filter_op>==|!=)\s*(?P<filter_value>"[^"]*"|'[^']*'|[^)\s]+)\s*\)\]
    """,
    re.VERBOSE,
)


def _steps(expression: str) -> list[tuple[str, Any]]:
    text = expression.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    text = text.removeprefix("$")
    steps: list[tuple[str, Any]] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match:
            raise ValueError(f"unsupported JSONPath {expression!r} at {text[position:]!r}")
        if match.group("field") is not None:
            steps.append(("field", match.group("field")))
        elif match.group("quoted") is not None or match.group("dquoted") is not None:
            steps.append(
                ("field", (match.group("quoted") or match.group("dquoted") or "").replace("\\.", "."))
            )
        elif match.group("index") is not None:
            steps.append(("index", int(match.group("index"))))
        elif match.group("slice") is not None:
            start, _, end = match.group("slice").partition(":")
            steps.append(("slice", (int(start) if start else None, int(end) if end else None)))
        elif match.group("filter_path") is not None:
            value = match.group("filter_value").strip("\"'")
            steps.append(("filter", (match.group("filter_path"), match.group("filter_op"), value)))
        else:
            steps.append(("all", None))
        position = match.end()
    return steps


def _dig(node: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def find(obj: Any, expression: str) -> list[Any]:
    """Every value the expression selects, in document order."""
    current = [obj]
    for kind, argument in _steps(expression):
        following: list[Any] = []
        for node in current:
            if (kind == "field" and isinstance(node, dict) and argument in node) or (
                kind == "index" and isinstance(node, list) and -len(node) <= argument < len(node)
            ):
                following.append(node[argument])
            elif kind == "slice" and isinstance(node, list):
                following.extend(node[argument[0] : argument[1]])
            elif kind == "all":
                following.extend(
                    node if isinstance(node, list) else node.values() if isinstance(node, dict) else []
                )
            elif kind == "filter" and isinstance(node, list):
                path, operator, value = argument
                for item in node:
                    equal = _as_text(_dig(item, path)) == value
                    if equal == (operator == "=="):
                        following.append(item)
        current = following
    return current
