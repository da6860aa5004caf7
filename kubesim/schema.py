"""Structural OpenAPI v3 schemas of CRDs: defaulting, pruning of unknown fields and validation.

Pure functions over plain dicts. `check(obj, schema)` returns the object as the apiserver would store it
(defaults applied, unknown fields dropped), the field errors (as `Cause`s with paths like `spec.replicas`)
and the paths of the unknown fields that were pruned (for `fieldValidation=Strict|Warn`).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from kubesim.errors import Cause

_ROOT_META_FIELDS = ("apiVersion", "kind", "metadata")
# Go's encoding/json writes a float64 below 1e21 in plain decimals: a whole one comes back as an integer.
_GO_PLAIN_FLOAT_LIMIT = 1e21


@dataclass
class Result:
    obj: dict[str, Any]
    causes: list[Cause] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def _show(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


#: the JSON type of a decoded value, by its Python type (bool first: a bool is also an int)
_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _type_of(value: Any) -> str:
    return next((name for python, name in _JSON_TYPES if isinstance(value, python)), "null")


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return _type_of(value) in ("integer", "string")
    expected = schema.get("type")
    if not expected:
        return True
    actual = _type_of(value)
    if expected == "number":
        return actual in ("integer", "number")
    if expected == "integer" and actual == "number":
        return float(value).is_integer()
    return actual == expected


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class _Checker:
    def __init__(self) -> None:
        self.causes: list[Cause] = []
        self.unknown: list[str] = []

    def error(self, path: str, message: str, reason: str = "FieldValueInvalid") -> None:
        self.causes.append(Cause(path, message, reason))

    def walk(self, value: Any, schema: dict[str, Any], path: str, *, root: bool = False) -> Any:
        """Default, prune and validate `value` at `path`; returns the value to store."""
        if value is None and schema.get("nullable"):
            return None
        if not _type_ok(value, schema):
            expected = "integer or string" if schema.get("x-kubernetes-int-or-string") else schema.get("type")
            self.error(
                path,
                f'Invalid value: "{_type_of(value)}": {path} in body '
                f'must be of type {expected}: "{_type_of(value)}"',
                "FieldValueTypeInvalid",
            )
            return value
        if isinstance(value, dict):
            value = self._object(value, schema, path, root=root)
        elif isinstance(value, list):
            value = self._array(value, schema, path)
        self._value_checks(value, schema, path)
        return value

    def _object(
        self, value: dict[str, Any], schema: dict[str, Any], path: str, *, root: bool
    ) -> dict[str, Any]:
        properties: dict[str, Any] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        result: dict[str, Any] = {}
        for name, child in value.items():
            child_path = _join(path, name)
            child_schema = properties.get(name)
            if child is None and not (child_schema or {}).get("nullable"):
                continue  # the apiserver prunes nulls of non-nullable fields before defaulting
            if child_schema is not None:
                result[name] = self.walk(child, child_schema, child_path)
            elif isinstance(additional, dict):
                result[name] = self.walk(child, additional, child_path)
            elif additional is True or preserve or ((root or embedded) and name in _ROOT_META_FIELDS):
                result[name] = child
            else:
                self.unknown.append(child_path)
        for name, child_schema in properties.items():
            if name not in result and "default" in child_schema:
                result[name] = self.walk(
                    copy.deepcopy(child_schema["default"]), child_schema, _join(path, name)
                )
        for name in schema.get("required") or []:
            if name not in result:
                self.error(_join(path, name), "Required value", "FieldValueRequired")
        count = len(result)
        if "maxProperties" in schema and count > schema["maxProperties"]:
            self.error(
                path,
                f"Too many: {count}: must have at most {schema['maxProperties']} items",
                "FieldValueTooMany",
            )
        if "minProperties" in schema and count < schema["minProperties"]:
            self.error(
                path,
                f"Invalid value: {count}: {path} in body should have "
                f"at least {schema['minProperties']} properties",
            )
        return result

    def _array(self, value: list[Any], schema: dict[str, Any], path: str) -> list[Any]:
        items = schema.get("items")
        result = [
            self.walk(item, items, f"{path}[{i}]") if isinstance(items, dict) else item
            for i, item in enumerate(value)
        ]
        if "maxItems" in schema and len(result) > schema["maxItems"]:
            self.error(
                path,
                f"Too many: {len(result)}: must have at most {schema['maxItems']} items",
                "FieldValueTooMany",
            )
        if "minItems" in schema and len(result) < schema["minItems"]:
            self.error(
                path,
                f"Invalid value: {len(result)}: {path} in body "
                f"should have at least {schema['minItems']} items",
            )
        if schema.get("uniqueItems") and len({_show(item) for item in result}) != len(result):
            self.error(
                path, f"Duplicate value: {path} in body shouldn't contain duplicates", "FieldValueDuplicate"
            )
        return result

    def _value_checks(self, value: Any, schema: dict[str, Any], path: str) -> None:
        if "enum" in schema and value not in schema["enum"]:
            supported = ", ".join(_show(v) for v in schema["enum"])
            self.error(
                path,
                f"Unsupported value: {_show(value)}: supported values: {supported}",
                "FieldValueNotSupported",
            )
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self._number_checks(value, schema, path)
        if isinstance(value, str):
            self._string_checks(value, schema, path)
        for keyword in ("allOf", "anyOf", "oneOf", "not"):
            if keyword in schema:
                self._combinator(keyword, value, schema[keyword], path)

    def _number_checks(self, value: float, schema: dict[str, Any], path: str) -> None:
        if "minimum" in schema:
            low, exclusive = schema["minimum"], schema.get("exclusiveMinimum") is True
            if value < low or (exclusive and value == low):
                relation = "greater than" if exclusive else "greater than or equal to"
                self.error(path, f"Invalid value: {_show(value)}: {path} in body should be {relation} {low}")
        if "maximum" in schema:
            high, exclusive = schema["maximum"], schema.get("exclusiveMaximum") is True
            if value > high or (exclusive and value == high):
                relation = "less than" if exclusive else "less than or equal to"
                self.error(path, f"Invalid value: {_show(value)}: {path} in body should be {relation} {high}")
        if "multipleOf" in schema and schema["multipleOf"] and value % schema["multipleOf"]:
            self.error(
                path,
                f"Invalid value: {_show(value)}: {path} in body "
                f"should be a multiple of {schema['multipleOf']}",
            )

    def _string_checks(self, value: str, schema: dict[str, Any], path: str) -> None:
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            self.error(
                path, f"Too long: may not be more than {schema['maxLength']} bytes", "FieldValueTooLong"
            )
        if "minLength" in schema and len(value) < schema["minLength"]:
            self.error(
                path,
                f"Invalid value: {_show(value)}: {path} in body "
                f"should be at least {schema['minLength']} chars long",
            )
        if "pattern" in schema and not re.search(schema["pattern"], value):
            self.error(
                path, f"Invalid value: {_show(value)}: {path} in body should match '{schema['pattern']}'"
            )

    def _combinator(self, keyword: str, value: Any, schemas: Any, path: str) -> None:
        options = schemas if isinstance(schemas, list) else [schemas]
        passing = sum(1 for option in options if _passes(value, option, path))
        failed = {
            "allOf": passing != len(options),
            "anyOf": passing == 0,
            "oneOf": passing != 1,
            "not": passing == len(options),
        }[keyword]
        if failed:
            self.error(path, f"Invalid value: {_show(value)}: {path} in body must validate {keyword}")


def _passes(value: Any, schema: dict[str, Any], path: str) -> bool:
    """Value validation only (no pruning), as the combinators require."""
    checker = _Checker()
    checker.walk(copy.deepcopy(value), {**schema, "x-kubernetes-preserve-unknown-fields": True}, path)
    return not checker.causes


def whole_numbers_as_integers(value: Any) -> Any:
    """`value` as the apiserver stores a custom object: it decodes JSON numbers as int64, else float64, and
    writes a whole float64 back without its fraction, so `2.0` (what Python clients send for a float, e.g.
    Kubeflow's SDK for a CPU count) is validated and read back as the integer `2`."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _GO_PLAIN_FLOAT_LIMIT:
        return int(value)
    if isinstance(value, dict):
        return {key: whole_numbers_as_integers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [whole_numbers_as_integers(item) for item in value]
    return value


def check(obj: dict[str, Any], schema: dict[str, Any] | None) -> Result:
    """Default, prune and validate a whole custom object against its version's openAPIV3Schema."""
    obj = whole_numbers_as_integers(obj)
    if not schema:
        return Result(obj)
    checker = _Checker()
    body = {name: value for name, value in obj.items() if name not in _ROOT_META_FIELDS}
    checked = checker.walk(body, schema, "", root=True)
    stored = {name: obj[name] for name in _ROOT_META_FIELDS if name in obj}
    stored.update(checked if isinstance(checked, dict) else {})
    return Result(stored, checker.causes, checker.unknown)
