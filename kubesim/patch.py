"""The three patch formats of PATCH requests: JSON merge (RFC 7386), JSON Patch (RFC 6902), strategic merge.

Pure functions returning new documents; the inputs are never modified. Errors are ApiErrors with the codes
the apiserver uses (400 for a malformed patch, 422 for one that cannot be applied).
"""

from __future__ import annotations

import copy
from typing import Any

from kubesim.errors import ApiError, bad_request
from kubesim.resources import ListMeta, PatchMeta


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def patched(target: Any, patch: Any, patch_type: str, meta: PatchMeta | None) -> Any:
    """`target` with a `json` or `strategic` patch applied, or else a merge patch."""
    if patch_type == "json":
        return json_patch(target, patch)
    if patch_type == "strategic":
        return strategic_merge_patch(target, patch, meta)
    return merge_patch(target, patch)


def _unprocessable(message: str) -> ApiError:
    return ApiError(422, "Invalid", message)


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _unprocessable(f"json patch: invalid path {path!r}: must start with /")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(container: list[Any], token: str, *, for_add: bool) -> int:
    if for_add and token == "-":  # noqa: S105 - JSON Pointer's "past the end"
        return len(container)
    if not token.isdigit():
        raise _unprocessable(f"json patch: invalid array index {token!r}")
    index = int(token)
    limit = len(container) if for_add else len(container) - 1
    if index > limit:
        raise _unprocessable(f"json patch: array index {index} out of bounds")
    return index


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, for_add=False)]
        else:
            raise _unprocessable(f"json patch: path {path!r} does not exist (missing {token!r})")
    return node


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, for_add=False)]
    raise _unprocessable(f"json patch: path {path!r} does not exist")


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path)
    if isinstance(parent, dict):
        parent[tokens[-1]] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, tokens[-1], for_add=True), value)
    else:
        raise _unprocessable(f"json patch: cannot add at {path!r}: parent is not a container")
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    tokens = _pointer(path)
    if not tokens:
        raise _unprocessable("json patch: cannot remove the whole document")
    parent = _parent(doc, tokens, path)
    if isinstance(parent, dict) and tokens[-1] in parent:
        return doc, parent.pop(tokens[-1])
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, tokens[-1], for_add=False))
    raise _unprocessable(f"json patch: cannot remove {path!r}: it does not exist")


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 operations add/remove/replace/move/copy/test, applied in order to a copy of `target`."""
    if not isinstance(operations, list):
        raise bad_request("json patch: the patch must be a JSON array of operations")
    doc = copy.deepcopy(target)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation or "path" not in operation:
            raise bad_request(f"json patch: each operation needs 'op' and 'path', got {operation!r}")
        op, path = operation["op"], operation["path"]
        if op in ("add", "replace", "test") and "value" not in operation:
            raise bad_request(f"json patch: operation {op!r} at {path!r} needs a 'value'")
        if op == "add":
            doc = _add(doc, path, copy.deepcopy(operation["value"]))
        elif op == "remove":
            doc, _ = _remove(doc, path)
        elif op == "replace":
            doc, _ = _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(operation["value"]))
        elif op in ("move", "copy"):
            source = operation.get("from")
            if source is None:
                raise bad_request(f"json patch: operation {op!r} needs 'from'")
            if op == "move":
                doc, value = _remove(doc, source)
            else:
                value = copy.deepcopy(_get(doc, source))
            doc = _add(doc, path, value)
        elif op == "test":
            if _get(doc, path) != operation["value"]:
                raise _unprocessable(f"json patch: test operation failed at {path!r}")
        else:
            raise bad_request(f"json patch: unknown operation {op!r}")
    return doc


# --- strategic merge patch -----------------------------------------------------------------------------

_DELETE_FROM = "$deleteFromPrimitiveList/"
_SET_ORDER = "$setElementOrder/"


def strategic_merge_patch(target: Any, patch: Any, meta: PatchMeta | None) -> Any:
    """Strategic merge: like a merge patch, but lists with a merge key merge item by item.

    Supports `$patch: delete|replace|merge`, `$retainKeys`, `$deleteFromPrimitiveList/<list>` and ignores
    `$setElementOrder/<list>` (order is kept as in the live object, new items appended).
    """
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch: the patch must be a JSON object")
    return _merge_map(target if isinstance(target, dict) else {}, patch, meta or {})


def _merge_map(target: dict[str, Any], patch: dict[str, Any], meta: PatchMeta) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return {}
    if directive not in (None, "merge"):
        raise bad_request(f"strategic merge patch: unknown $patch directive {directive!r}")
    result = dict(target)
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith(_SET_ORDER):
            continue
        if key.startswith(_DELETE_FROM):
            field_name = key[len(_DELETE_FROM) :]
            remove = set(map(_hashable, value or []))
            result[field_name] = [
                item for item in result.get(field_name) or [] if _hashable(item) not in remove
            ]
            continue
        if value is None:
            result.pop(key, None)
            continue
        field_meta = meta.get(key)
        current = result.get(key)
        if (
            isinstance(value, dict)
            and value.get("$patch") == "delete"
            and not isinstance(field_meta, ListMeta)
        ):
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(field_meta, ListMeta):
            result[key] = _merge_list(current if isinstance(current, list) else [], value, field_meta)
        elif isinstance(value, dict):
            child_meta = field_meta if isinstance(field_meta, dict) else {}
            result[key] = _merge_map(current if isinstance(current, dict) else {}, value, child_meta)
        else:
            result[key] = copy.deepcopy(value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _hashable(value: Any) -> Any:
    return repr(value) if isinstance(value, (dict, list)) else value


def _merge_list(target: list[Any], patch: list[Any], meta: ListMeta) -> list[Any]:
    if meta.strategy != "merge":
        return copy.deepcopy(patch)
    if meta.merge_key is None:  # a set of primitives
        merged = list(target)
        for item in patch:
            if isinstance(item, dict) and item.get("$patch") == "replace":
                return [i for i in patch if not isinstance(i, dict)]
            if item not in merged:
                merged.append(item)
        return merged
    key = meta.merge_key
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    merged = [copy.deepcopy(i) for i in target]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise bad_request(f"strategic merge patch: list item {item!r} lacks its merge key {key!r}")
        position = next(
            (n for n, live in enumerate(merged) if isinstance(live, dict) and live.get(key) == item[key]),
            None,
        )
        if item.get("$patch") == "delete":
            if position is not None:
                merged.pop(position)
            continue
        if position is None:
            merged.append({k: copy.deepcopy(v) for k, v in item.items() if k != "$patch"})
        else:
            merged[position] = _merge_map(merged[position], item, meta.item or {})
    return merged
