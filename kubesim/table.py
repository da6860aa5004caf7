"""`kubectl get` output: meta.k8s.io/v1 Table responses built from a type's printer columns."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from kubesim.clock import parse_timestamp
from kubesim.jsonpath import find
from kubesim.resources import Column, ResourceType


def human_duration(seconds: float) -> str:
    """Kubernetes' duration.HumanDuration: 45s, 3m20s, 5h10m, 3d4h, 2y30d."""
    seconds_int = int(seconds)
    if seconds_int < -1:
        return "<invalid>"
    if seconds_int < 0:
        return "0s"
    if seconds_int < 120:
        return f"{seconds_int}s"
    minutes = seconds_int // 60
    if minutes < 10:
        return _with_rest(minutes, "m", seconds_int % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds_int // 3600
    if hours < 8:
        return _with_rest(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return _with_rest(hours // 24, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        return _with_rest(hours // 24 // 365, "y", (hours // 24) % 365, "d")
    return f"{hours // 24 // 365}y"


def _with_rest(count: int, unit: str, rest: int, rest_unit: str) -> str:
    """`3m20s`; `3m` when the rest is 0."""
    return f"{count}{unit}{rest}{rest_unit}" if rest else f"{count}{unit}"


def _cell(column: Column, obj: dict[str, Any], now: datetime) -> Any:
    if column.cell is not None:
        return column.cell(obj)
    try:
        values = find(obj, column.json_path)
    except ValueError:
        return None
    if not values:
        return None
    value = values[0]
    if column.type == "date" and isinstance(value, str):
        try:
            return human_duration((now - parse_timestamp(value)).total_seconds())
        except ValueError:
            return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return value


def column_definitions(columns: tuple[Column, ...]) -> list[dict[str, Any]]:
    return [
        {
            "name": c.name,
            "type": "string" if c.type == "date" else c.type,
            "format": c.format,
            "description": c.description or c.name,
            "priority": c.priority,
        }
        for c in columns
    ]


def _row_object(obj: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def table(
    resource: ResourceType,
    version: str,
    objects: list[dict[str, Any]],
    list_metadata: dict[str, Any],
    now: datetime,
    include_object: str = "Metadata",
    with_definitions: bool = True,
) -> dict[str, Any]:
    columns = resource.columns_for(version) or (Column("Name", json_path=".metadata.name", format="name"),)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [_cell(c, obj, now) for c in columns]}
        shown = _row_object(obj, include_object)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    result = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_metadata,
        "columnDefinitions": column_definitions(columns) if with_definitions else [],
        "rows": rows,
    }
    return result
