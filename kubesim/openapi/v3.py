"""The built-in kinds' schemas in the shape `/openapi/v3/<group-version>` serves them.

kubernetes-validate ships JSON Schema (`"type": ["string", "null"]`, `$ref: #/$defs/…`, IntOrString as a
`oneOf`); the API server's OpenAPI v3 says `"type": "string"`, refers to `#/components/schemas/…` (wrapping a
reference that carries a description or patch extensions in `allOf`, as the server does) and marks
IntOrString `format: int-or-string`. Converted per group-version on first use, then cached.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from kubesim.openapi import catalog

_COMPONENTS = "#/components/schemas/"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"


def _converted(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref":
            continue
        if key == "type" and isinstance(value, list):
            kept = [t for t in value if t != "null"]
            if kept:
                out["type"] = kept[0]
        elif key == "oneOf" and all(isinstance(option, dict) and "type" in option for option in value):
            out["type"] = "string"  # IntOrString and Quantity are strings (or integers) on the wire
        elif key == "enum" and isinstance(value, list):
            out["enum"] = [item for item in value if item is not None]
        elif key == "properties":
            out[key] = {name: _converted(child) for name, child in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = _converted(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_converted(option) for option in value]
        else:
            out[key] = value
    reference = schema.get("$ref")
    if isinstance(reference, str):
        target = {"$ref": _COMPONENTS + catalog.ref_name(reference)}
        return {"allOf": [target], **out} if out else target
    return out


def _references(node: Any, found: set[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _references(item, found)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(catalog.ref_name(value))
            else:
                _references(value, found)


@functools.cache
def components(kinds: tuple[str, ...]) -> dict[str, Any]:
    """The named definitions and every definition they refer to, converted (keyed by definition name)."""
    definitions = catalog.definitions()
    pending, seen = list(kinds), set(kinds)
    converted: dict[str, Any] = {}
    while pending:
        name = pending.pop()
        definition = definitions[name]
        schema = _converted(definition)
        if name == _INT_OR_STRING:
            schema["format"] = "int-or-string"
        converted[name] = schema
        found: set[str] = set()
        _references(definition, found)
        for reference in sorted(found - seen):
            seen.add(reference)
            pending.append(reference)
    return dict(sorted(converted.items()))


@functools.cache
def digest(kinds: tuple[str, ...]) -> str:
    """A stable hash of `components(kinds)`, for the index's `?hash=` (computed once per set)."""
    return hashlib.sha256(json.dumps(components(kinds), sort_keys=True).encode()).hexdigest()
