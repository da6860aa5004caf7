"""Label and field selectors as the apiserver parses them from `labelSelector` / `fieldSelector`.

Pure: parse once per request into a `Selector`, then `matches(obj)` for every candidate object.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesim.errors import ApiError, bad_request

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VALUE = r"[-A-Za-z0-9_.]*"
_EXISTS = re.compile(rf"^(!?)\s*({_KEY})$")
_SET = re.compile(rf"^({_KEY})\s+(in|notin)\s*\((.*)\)$")
_EQUALITY = re.compile(rf"^({_KEY})\s*(==|=|!=|>|<)\s*({_VALUE})$")
_FIELD = re.compile(r"^([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*)$")

Predicate = Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class Selector:
    """A conjunction of requirements; the empty selector matches everything."""

    text: str
    requirements: tuple[Predicate, ...]

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: dict[str, Any]) -> bool:
        return all(requirement(obj) for requirement in self.requirements)


EVERYTHING = Selector("", ())


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside a `(a,b)` value set."""
    terms: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    terms.append("".join(current).strip())
    return [term for term in terms if term]


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _label_requirement(term: str) -> Predicate:
    if match := _EXISTS.match(term):
        negate, key = match.group(1) == "!", match.group(2)
        return lambda obj: (key in _labels(obj)) != negate
    if match := _SET.match(term):
        key, operator = match.group(1), match.group(2)
        values = frozenset(v.strip() for v in match.group(3).split(",") if v.strip())
        if operator == "in":
            return lambda obj: _labels(obj).get(key) in values
        return lambda obj: _labels(obj).get(key) not in values
    if match := _EQUALITY.match(term):
        key, operator, value = match.groups()
        if operator in ("=", "=="):
            return lambda obj: _labels(obj).get(key) == value
        if operator == "!=":
            return lambda obj: _labels(obj).get(key) != value
        try:
            bound = int(value)
        except ValueError:
            raise bad_request(
                f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer: {term}"
            ) from None
        greater = operator == ">"
        return lambda obj: _compare_int(_labels(obj).get(key), bound, greater)
    raise bad_request(f"unable to parse requirement: {term!r} is not a valid label selector term")


def _compare_int(actual: str | None, bound: int, greater: bool) -> bool:
    try:
        number = int(actual) if actual is not None else None
    except ValueError:
        return False
    if number is None:
        return False
    return number > bound if greater else number < bound


def parse_label_selector(text: str | None) -> Selector:
    """Parse `a=b,c!=d,e in (f,g),!h`; raises a 400 ApiError naming the bad term."""
    if not text:
        return EVERYTHING
    return Selector(text, tuple(_label_requirement(term) for term in _split_terms(text)))


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string form of a dotted field path (`spec.nodeName`); missing fields read as ""."""
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, dict):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def _field_requirement(term: str) -> Predicate:
    match = _FIELD.match(term)
    if not match:
        raise bad_request(f"invalid selector: '{term}'; can't understand '{term}'")
    path, operator, value = match.group(1), match.group(2), match.group(3).strip()
    if operator == "!=":
        return lambda obj: field_value(obj, path) != value
    return lambda obj: field_value(obj, path) == value


_METADATA_FIELDS = ("metadata.name", "metadata.namespace")


def parse_field_selector(text: str | None, supported: tuple[str, ...] | None = None) -> Selector:
    """Parse `metadata.name=x,status.phase!=Running`. With `supported` (the kind's field labels), any other
    field is a 400 "field label not supported" as the apiserver answers; without, any dotted path goes."""
    if not text:
        return EVERYTHING
    terms = _split_terms(text)
    if supported is not None:
        for term in terms:
            match = _FIELD.match(term)
            if match and match.group(1) not in _METADATA_FIELDS and match.group(1) not in supported:
                raise bad_request(f"field label not supported: {match.group(1)}")
    return Selector(text, tuple(_field_requirement(term) for term in terms))


def match_labels_selector(selector: dict[str, Any] | None) -> Selector:
    """A metav1.LabelSelector (`matchLabels` + `matchExpressions`) as a Selector, for webhooks and owners."""
    if not selector:
        return EVERYTHING
    terms = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(expression.get("values") or [])
        rendered = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }
        if operator not in rendered:
            raise ApiError(422, "Invalid", f"matchExpressions: unsupported operator {operator!r}")
        terms.append(rendered[operator])
    return parse_label_selector(",".join(terms))
