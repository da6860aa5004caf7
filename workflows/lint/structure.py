"""Structural checks: unknown fields and values of the wrong type, as `argo lint --strict` reports them.

The walk follows the compiled schema (schema.py). Unknown fields are reported with their full JSON path,
``unknown field "spec.templates[0].containr"``, the way Kubernetes' strict decoder words them. Type checks
are as lenient as Argo's YAML reader: any scalar fits a string field (YAML ``1`` or ``true`` becomes the
string "1" or "true"), but an integer field wants an integer and a boolean field a boolean.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from workflows.lint.errors import LintError
from workflows.lint.schema import (
    ANY,
    BOOLEAN,
    INT_OR_STRING,
    INTEGER,
    LIST,
    MAP,
    NUMBER,
    OBJECT,
    SCALAR,
    STRING,
    SchemaNode,
)


def check_structure(document: Any, schema: SchemaNode) -> list[LintError]:
    """Every unknown field and type mismatch in the document, in document order."""
    errors: list[LintError] = []
    _walk(document, schema, "", errors)
    return errors


def _walk(value: Any, node: SchemaNode, path: str, errors: list[LintError]) -> None:
    kind = node.kind
    if value is None or kind == ANY:
        return  # null decodes to the zero value of any Go type
    if kind == OBJECT:
        if not isinstance(value, dict):
            errors.append(_type_error(value, node, path))
            return
        fields = node.fields
        for key, child in value.items():
            child_path = f"{path}.{key}" if path else str(key)
            child_node = fields.get(key) if isinstance(key, str) else None
            if child_node is None:
                errors.append(LintError(child_path, f'unknown field "{child_path}"'))
            else:
                _walk(child, child_node, child_path, errors)
    elif kind in (LIST, MAP):  # every entry of a list or of a map has the shape of `node.item`
        is_list = kind == LIST
        if not isinstance(value, list if is_list else dict):
            errors.append(_type_error(value, node, path))
            return
        item = node.item
        assert item is not None
        entries: Iterable[tuple[Any, Any]] = enumerate(value) if is_list else value.items()
        for key, child in entries:
            _walk(child, item, f"{path}[{key}]" if is_list else f"{path}.{key}", errors)
    elif not _scalar_fits(value, kind):
        errors.append(_type_error(value, node, path))


def _scalar_fits(value: Any, kind: str) -> bool:
    if isinstance(value, dict | list):
        return False
    if kind in (STRING, SCALAR):
        return True
    if kind == BOOLEAN:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == INTEGER:
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if kind == NUMBER:
        return isinstance(value, int | float)
    if kind == INT_OR_STRING:
        return isinstance(value, int | str) or (isinstance(value, float) and value.is_integer())
    return True


def json_kind(value: Any) -> str:
    """How JSON would name the type of a decoded YAML value."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string"


def _type_error(value: Any, node: SchemaNode, path: str) -> LintError:
    expected = node.type_name if node.kind == OBJECT and node.type_name else node.kind
    where = path or "document"
    return LintError(where, f"cannot unmarshal {json_kind(value)} into {where} of type {expected}")
