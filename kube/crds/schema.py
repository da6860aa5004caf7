"""Small builders for structural OpenAPI v3 schemas, so a declaration reads like the resource it describes.

Every node gets a `type` (the apiserver requires it of a structural schema) except the two escape hatches:
`embedded()` for objects we pass through untouched (pod templates, Argo workflow specs) and `any_value()`
for a field whose values may be numbers or strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Schema = dict[str, Any]

#: A Kubernetes quantity (`4`, `500m`, `16Gi`), as core/v1 ResourceLists declare it.
QUANTITY: Schema = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
    "x-kubernetes-int-or-string": True,
}


def _described(schema: Schema, description: str) -> Schema:
    """`schema` with its description right after its type, so the rendered YAML reads top-down."""
    if not description:
        return schema
    head = {"type": schema["type"]} if "type" in schema else {}
    return {**head, "description": description, **schema}


def _given(schema: Schema, **keywords: Any) -> Schema:
    """`schema` with the keywords the caller set (None: left out), in the order the rendered YAML shows."""
    schema.update((keyword, value) for keyword, value in keywords.items() if value is not None)
    return schema


def obj(
    properties: Mapping[str, Schema],
    description: str = "",
    *,
    required: Iterable[str] = (),
    preserve_unknown: bool = False,
) -> Schema:
    """An object with known fields; unknown fields are pruned unless `preserve_unknown`."""
    schema: Schema = _described({"type": "object"}, description)
    required = list(required)
    missing = [name for name in required if name not in properties]
    if missing:
        raise ValueError(f"required fields {missing} are not among the properties {sorted(properties)}")
    if required:
        schema["required"] = required
    schema["properties"] = dict(properties)
    if preserve_unknown:
        schema["x-kubernetes-preserve-unknown-fields"] = True
    return schema


def map_of(values: Schema, description: str = "") -> Schema:
    """An object whose keys are data (replica types, phases) and whose values share one schema."""
    return _described({"type": "object", "additionalProperties": values}, description)


def embedded(description: str = "") -> Schema:
    """An object kept exactly as written (pod templates, Argo specs): too large to type, not ours to prune."""
    return _described({"type": "object", "x-kubernetes-preserve-unknown-fields": True}, description)


def any_value(description: str = "") -> Schema:
    """A value of any JSON type, kept as written (e.g. a hyperparameter value: 0.1, "adam" or 3)."""
    return _described({"x-kubernetes-preserve-unknown-fields": True}, description)


def string(
    description: str = "",
    *,
    enum: Iterable[str] | None = None,
    pattern: str | None = None,
    format: str | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
) -> Schema:
    return _given(
        _described({"type": "string"}, description),
        enum=None if enum is None else list(enum),
        pattern=pattern,
        format=format,
        minLength=min_length,
        maxLength=max_length,
    )


def date_time(description: str = "") -> Schema:
    return string(description, format="date-time")


def integer(
    description: str = "", *, minimum: int | None = None, maximum: int | None = None, bits: int = 32
) -> Schema:
    if bits not in (32, 64):
        raise ValueError(f"bits must be 32 or 64, not {bits}")
    schema = _described({"type": "integer", "format": f"int{bits}"}, description)
    return _given(schema, minimum=minimum, maximum=maximum)


def number(description: str = "") -> Schema:
    return _described({"type": "number"}, description)


def boolean(description: str = "") -> Schema:
    return _described({"type": "boolean"}, description)


def int_or_string(description: str = "") -> Schema:
    return _described({"x-kubernetes-int-or-string": True}, description)


def array(items: Schema, description: str = "", *, min_items: int | None = None) -> Schema:
    return _given(_described({"type": "array"}, description), minItems=min_items, items=items)


def list_map(items: Schema, keys: Iterable[str], description: str = "") -> Schema:
    """An array of objects keyed by `keys` (conditions by type), so server-side apply merges entries."""
    schema = array(items, description)
    schema["x-kubernetes-list-type"] = "map"
    schema["x-kubernetes-list-map-keys"] = list(keys)
    return schema


def conditions(
    description: str = "The latest observations of the object's state (API conventions).",
) -> Schema:
    return list_map(
        obj(
            {
                "type": string("The condition's type, e.g. Running or Succeeded.", min_length=1),
                "status": string("True, False or Unknown.", enum=("True", "False", "Unknown")),
                "reason": string("A CamelCase word saying why the condition last changed."),
                "message": string("A human-readable explanation."),
                "lastTransitionTime": date_time("When the status last changed."),
                "lastUpdateTime": date_time("When reason or message last changed."),
                "observedGeneration": integer("The generation the condition was set for.", bits=64),
            },
            required=("type", "status"),
        ),
        keys=("type",),
        description=description,
    )


def structural_problems(schema: Schema, path: str = "") -> list[str]:
    """Why `schema` is not structural as the apiserver defines it (empty when it is).

    Checked: every node has a type unless it preserves unknown fields or is int-or-string; `properties`
    and `additionalProperties` are not combined; arrays have `items`; junctors (anyOf, ...) declare no types.
    """
    problems: list[str] = []
    where = path or "<root>"
    escape = schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-int-or-string")
    if "type" not in schema and not escape:
        problems.append(f"{where}: no type")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{where}: both properties and additionalProperties")
    if schema.get("type") == "array" and "items" not in schema:
        problems.append(f"{where}: array without items")
    for junctor in ("allOf", "anyOf", "oneOf", "not"):
        branches = schema.get(junctor)
        for branch in branches if isinstance(branches, list) else [branches] if branches else []:
            if "type" in branch and not schema.get("x-kubernetes-int-or-string"):
                problems.append(f"{where}.{junctor}: a type inside a junctor")
    for name, child in (schema.get("properties") or {}).items():
        problems.extend(structural_problems(child, f"{path}.{name}" if path else name))
    if isinstance(schema.get("additionalProperties"), dict):
        problems.extend(structural_problems(schema["additionalProperties"], f"{path}.*"))
    if isinstance(schema.get("items"), dict):
        problems.extend(structural_problems(schema["items"], f"{path}[*]"))
    return problems


def with_rules(schema: Schema, *rules: tuple[str, str]) -> Schema:
    """`schema` with CEL rules (rule, message) the apiserver checks, as Kubebuilder's XValidation markers
    render them. (kubesim does not evaluate them; our webhooks check what matters.)"""
    return {
        **schema,
        "x-kubernetes-validations": [{"rule": rule, "message": message} for rule, message in rules],
    }


IMMUTABLE = ("self == oldSelf", "field is immutable")
