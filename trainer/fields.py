"""Tolerant readers of a manifest's fields: each returns a usable value and records, with its path, why a
field is wrong, so a parser reports every problem at once."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from hyperparam.space import errors

RawDict = dict[str, Any]


def obj(found: errors.ErrorList, path: str, value: object, *, required: bool = False) -> RawDict:
    if value is None:
        if required:
            found.add(path, "is required")
        return {}
    if not isinstance(value, dict):
        found.add(path, f"must be an object, not {type(value).__name__}")
        return {}
    return value


def items(found: errors.ErrorList, path: str, value: object) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        found.add(path, f"must be a list, not {type(value).__name__}")
        return []
    return value


def text(found: errors.ErrorList, path: str, value: object, *, required: bool = False) -> str | None:
    if value is None or value == "":
        if required:
            found.add(path, "is required")
        return None
    if not isinstance(value, str):
        found.add(path, f"must be a string, not {type(value).__name__}")
        return None
    return value


def texts(found: errors.ErrorList, path: str, value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    entries = items(found, path, value)
    if not all(isinstance(item, str) for item in entries):
        found.add(path, "must be a list of strings")
        return None
    return tuple(entries)


def text_map(found: errors.ErrorList, path: str, value: object) -> dict[str, str]:
    mapping = obj(found, path, value)
    if not all(isinstance(v, str) for v in mapping.values()):
        found.add(path, "must map names to strings")
        return {}
    return dict(mapping)


def integer(found: errors.ErrorList, path: str, value: object, *, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        found.add(path, f"must be an integer, not {value!r}")
        return None
    if value < minimum:
        found.add(path, f"must be at least {minimum}, not {value}")
        return None
    return value


def flag(found: errors.ErrorList, path: str, value: object) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        found.add(path, f"must be true or false, not {value!r}")
        return False
    return value


def env(found: errors.ErrorList, path: str, value: object) -> tuple[RawDict, ...]:
    entries = []
    for index, item in enumerate(items(found, path, value)):
        entry = obj(found, f"{path}[{index}]", item)
        if text(found, f"{path}[{index}].name", entry.get("name"), required=True) is not None:
            entries.append(copy.deepcopy(entry))
    return tuple(entries)


def upsert_by_name(items: list[dict[str, Any]], extra: Iterable[dict[str, Any]]) -> None:
    """Set each named entry (env variable, volume, volume mount) in `items`, replacing a same-named one in
    place (Trainer's apply.Upsert*: the order of first appearance is kept, so pod specs do not churn)."""
    for item in extra:
        same = next((i for i, old in enumerate(items) if old.get("name") == item["name"]), None)
        if same is None:
            items.append(copy.deepcopy(item))
        else:
            items[same] = copy.deepcopy(item)
