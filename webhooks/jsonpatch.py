"""RFC 6902 JSON Patch from two documents: what a mutating webhook returns to turn `old` into `new`.

Pure. Objects are diffed key by key, lists index by index (then grown or shrunk at the end), so a patch
that adds one env var to one container touches only that container's `env`. Keys are escaped as RFC 6901
says (`argoml.io/team` becomes `argoml.io~1team`), which label and annotation keys need.
"""

from __future__ import annotations

from typing import Any

Operation = dict[str, Any]


def escape(token: str) -> str:
    """One JSON Pointer reference token: `~` and `/` are the two characters with a meaning."""
    return token.replace("~", "~0").replace("/", "~1")


def diff(old: Any, new: Any, path: str = "") -> list[Operation]:
    """Operations that turn `old` into `new`, each addressed below `path` (a JSON Pointer)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return _diff_objects(old, new, path)
    if isinstance(old, list) and isinstance(new, list):
        return _diff_lists(old, new, path)
    if _same(old, new):
        return []
    return [{"op": "replace", "path": path, "value": new}]


def _diff_objects(old: dict[str, Any], new: dict[str, Any], path: str) -> list[Operation]:
    operations: list[Operation] = []
    for key in old:
        if key not in new:
            operations.append({"op": "remove", "path": f"{path}/{escape(key)}"})
    for key, value in new.items():
        where = f"{path}/{escape(key)}"
        if key in old:
            operations += diff(old[key], value, where)
        else:
            operations.append({"op": "add", "path": where, "value": value})
    return operations


def _diff_lists(old: list[Any], new: list[Any], path: str) -> list[Operation]:
    operations: list[Operation] = []
    for index in range(min(len(old), len(new))):
        operations += diff(old[index], new[index], f"{path}/{index}")
    for index in range(len(old), len(new)):
        operations.append({"op": "add", "path": f"{path}/{index}", "value": new[index]})
    # From the end, so every index still names the element it was computed for.
    for index in range(len(old) - 1, len(new) - 1, -1):
        operations.append({"op": "remove", "path": f"{path}/{index}"})
    return operations


def _same(old: Any, new: Any) -> bool:
    """Equal as JSON: `1 == True` and `1 == 1.0` in Python, but not in a manifest."""
    return type(old) is type(new) and old == new
