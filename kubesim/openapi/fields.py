"""Decoding a built-in object as the API server does: unknown fields found (and dropped), wrong types refused.

The API server decodes a built-in kind into its Go struct: a field the struct lacks is an "unknown field"
(an error under `fieldValidation=Strict`, a warning under `Warn`, silently dropped under `Ignore`), and a
value of the wrong JSON type stops decoding with Go's `json: cannot unmarshal …` message. This module walks
the object along the kind's schema to do the same; null is accepted anywhere (Go leaves the zero value).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesim.openapi import catalog

_GO_JSON_TYPES = {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}


@dataclass
class Decoded:
    """The object as the Go struct would keep it, its unknown fields' paths and the first type error."""

    obj: dict[str, Any]
    unknown: list[str] = field(default_factory=list)
    type_error: str = ""


def _resolved(schema: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The schema behind a `$ref` (with the definition's name), or the schema itself."""
    reference = schema.get("$ref")
    if reference is None:
        return schema, ""
    name = catalog.ref_name(reference)
    return catalog.definitions()[name], name


def _types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a schema accepts (`oneOf` for IntOrString and Quantity); empty means any."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if t != "null"}
    if "oneOf" in schema:
        return set().union(*(_types(option) for option in schema["oneOf"]))
    return set()


def _json_type_matches(value: Any, types: set[str]) -> bool:
    if not types:
        return True
    if isinstance(value, bool):
        return "boolean" in types
    if isinstance(value, int):
        return bool(types & {"integer", "number"})
    if isinstance(value, float):
        return "number" in types or ("integer" in types and value.is_integer())
    if isinstance(value, str):
        return "string" in types
    if isinstance(value, list):
        return "array" in types
    return "object" in types


def _go_type(schema: dict[str, Any], name: str) -> str:
    """How Go names a field's type in an unmarshal error: `int32`, `[]v1.Container`, `map[string]string`."""
    if name:
        parts = name.split(".")
        if name == "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
            return "intstr.IntOrString"
        if name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
            return "resource.Quantity"
        if _types(schema) <= {"string"} and "properties" not in schema:
            return "string"
        return f"{parts[-2]}.{parts[-1]}"
    types = _types(schema)
    if "array" in types:
        items, item_name = _resolved(schema.get("items") or {})
        return "[]" + _go_type(items, item_name)
    if "object" in types and isinstance(schema.get("additionalProperties"), dict):
        values, value_name = _resolved(schema["additionalProperties"])
        return "map[string]" + _go_type(values, value_name)
    if "integer" in types:
        return str(schema.get("format") or "int64")
    if "number" in types:
        return "float64"
    if "boolean" in types:
        return "bool"
    if "string" in types:
        return "string"
    return "interface {}"


class _Walker:
    def __init__(self) -> None:
        self.unknown: list[str] = []
        self.type_error = ""

    def value(self, value: Any, schema: dict[str, Any], path: str, go_path: str, owner: str) -> Any:
        if value is None:
            return None
        schema, name = _resolved(schema)
        if not _json_type_matches(value, _types(schema)):
            if not self.type_error:
                shown = _GO_JSON_TYPES.get(type(value), "value")
                if shown == "number" and "integer" in _types(schema):
                    shown = f"number {value}"
                self.type_error = (
                    f"json: cannot unmarshal {shown} into Go struct field {owner}.{go_path} "
                    f"of type {_go_type(schema, name)}"
                )
            return value
        if isinstance(value, dict):
            return self._object(value, schema, path, go_path, name.rsplit(".", 1)[-1] if name else owner)
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            items = schema["items"]
            return [self.value(item, items, f"{path}[{i}]", go_path, owner) for i, item in enumerate(value)]
        return value

    def _object(
        self, value: dict[str, Any], schema: dict[str, Any], path: str, go_path: str, owner: str
    ) -> dict[str, Any]:
        properties: dict[str, Any] | None = schema.get("properties")
        additional = schema.get("additionalProperties")
        if properties is None:
            if isinstance(additional, dict):
                return {
                    key: self.value(item, additional, f"{path}[{key}]", go_path, owner)
                    for key, item in value.items()
                }
            return value  # free-form (RawExtension, JSON): kept as written
        kept: dict[str, Any] = {}
        for key, item in value.items():
            child = properties.get(key)
            child_path = f"{path}.{key}" if path else key
            if child is None:
                self.unknown.append(child_path)
                continue
            kept[key] = self.value(item, child, child_path, f"{go_path}.{key}" if go_path else key, owner)
        return kept


def decode(obj: dict[str, Any], definition: str) -> Decoded:
    """Walk `obj` along the named definition (see `catalog.definition_name`)."""
    walker = _Walker()
    schema = catalog.definitions()[definition]
    kept = walker._object(obj, schema, "", "", definition.rsplit(".", 1)[-1])
    return Decoded(kept, walker.unknown, walker.type_error)
