"""Server-side apply and managedFields, in a deliberately simplified model (see docs/kubesim.md).

Ownership is tracked per leaf field path (`f:spec`, `f:replicas`; `k:{"name":"c"}` for keyed list items;
`v:"x"` for set members; atomic lists are single leaves). An apply conflicts when another manager owns a
leaf the configuration sets to a different value; `force=true` takes it over. Fields the applier owned
before and no longer sets are removed unless someone else owns them. Plain updates give their manager the
leaves whose value they changed. Pure functions over dicts.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from kubesim.errors import ApiError
from kubesim.resources import ListMeta, PatchMeta

Path = tuple[str, ...]
_MANAGED_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")


def schema_patch_meta(schema: dict[str, Any] | None) -> PatchMeta:
    """List merge rules of a CRD schema (`x-kubernetes-list-type: map|set`) in the built-ins' form."""
    meta: PatchMeta = {}
    for name, child in ((schema or {}).get("properties") or {}).items():
        if child.get("type") == "array":
            list_type = child.get("x-kubernetes-list-type")
            keys = child.get("x-kubernetes-list-map-keys") or []
            item_meta = schema_patch_meta(child.get("items"))
            if list_type == "map" and keys:
                meta[name] = ListMeta(merge_key=keys[0], strategy="merge", item=item_meta)
            elif list_type == "set":
                meta[name] = ListMeta(strategy="merge")
        elif child.get("type") == "object" or "properties" in child:
            nested = schema_patch_meta(child)
            if nested:
                meta[name] = nested
    return meta


def _managed_view(obj: dict[str, Any]) -> dict[str, Any]:
    """The part of an object whose fields managers own: everything but identity and server metadata."""
    view = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k in _MANAGED_METADATA}
    if metadata:
        view["metadata"] = metadata
    return view


def leaves(value: Any, meta: PatchMeta | None, prefix: Path = ()) -> dict[Path, Any]:
    """Every owned leaf path of `value` with the value found there."""
    found: dict[Path, Any] = {}
    if not isinstance(value, dict) or (not value and prefix):
        found[prefix] = value
        return found
    for name, child in value.items():
        path = (*prefix, f"f:{name}")
        rule = (meta or {}).get(name)
        if isinstance(child, list) and isinstance(rule, ListMeta) and rule.strategy == "merge":
            for item in child:
                if rule.merge_key and isinstance(item, dict) and rule.merge_key in item:
                    key = json.dumps({rule.merge_key: item[rule.merge_key]}, separators=(",", ":"))
                    found.update(leaves(item, rule.item, (*path, f"k:{key}")))
                else:
                    found[(*path, f"v:{json.dumps(item, sort_keys=True)}")] = True
        elif isinstance(child, dict) and child:
            found.update(leaves(child, rule if isinstance(rule, dict) else None, path))
        else:
            found[path] = child
    return found


def fields_v1(paths: set[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for part in path:
            node = node.setdefault(part, {})
    return tree


def paths_of(tree: dict[str, Any], prefix: Path = ()) -> set[Path]:
    found: set[Path] = set()
    for part, child in tree.items():
        if part == ".":
            continue
        path = (*prefix, part)
        if isinstance(child, dict) and any(k != "." for k in child):
            found |= paths_of(child, path)
        else:
            found.add(path)
    return found


def _entries(obj: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [dict(e) for e in ((obj or {}).get("metadata") or {}).get("managedFields") or []]


def _owned(entry: dict[str, Any]) -> set[Path]:
    return paths_of(entry.get("fieldsV1") or {})


def _entry(
    manager: str, operation: str, api_version: str, now: str, paths: set[Path], subresource: str
) -> dict[str, Any]:
    entry = {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1(paths),
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def _rewrite(entries: list[dict[str, Any]], owned: dict[int, set[Path]]) -> list[dict[str, Any]]:
    kept = []
    for index, entry in enumerate(entries):
        paths = owned.get(index, _owned(entry))
        if paths:
            entry["fieldsV1"] = fields_v1(paths)
            kept.append(entry)
    return kept


def record_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    meta: PatchMeta | None,
    now: str,
    subresource: str = "",
) -> None:
    """Give `manager` (operation Update) the leaves a non-apply write changed; set new.managedFields."""
    before = leaves(_managed_view(old), meta) if old else {}
    after = leaves(_managed_view(new), meta)
    changed = {p for p, v in after.items() if p not in before or before[p] != v}
    removed = set(before) - set(after)
    entries = _entries(old)
    owned: dict[int, set[Path]] = {}
    mine = None
    for index, entry in enumerate(entries):
        paths = _owned(entry) - removed
        if (
            entry.get("manager") == manager
            and entry.get("operation") == "Update"
            and entry.get("subresource", "") == subresource
        ):
            mine = index
        else:
            paths -= changed
        owned[index] = paths
    api_version = new.get("apiVersion", "")
    if mine is None:
        if changed:
            entries.append(_entry(manager, "Update", api_version, now, changed, subresource))
    else:
        owned[mine] = owned[mine] | changed
        if changed:
            entries[mine]["time"] = now
    new.setdefault("metadata", {})["managedFields"] = _rewrite(entries, owned)


def _structured_merge(live: Any, config: Any, meta: PatchMeta | None) -> Any:
    if not isinstance(config, dict) or not isinstance(live, dict):
        return copy.deepcopy(config)
    result = dict(live)
    for name, value in config.items():
        rule = (meta or {}).get(name)
        current = result.get(name)
        if (
            isinstance(value, list)
            and isinstance(rule, ListMeta)
            and rule.strategy == "merge"
            and isinstance(current, list)
        ):
            result[name] = _merge_list(current, value, rule)
        elif isinstance(value, dict) and isinstance(current, dict):
            result[name] = _structured_merge(current, value, rule if isinstance(rule, dict) else None)
        else:
            result[name] = copy.deepcopy(value)
    return result


def _merge_list(live: list[Any], config: list[Any], rule: ListMeta) -> list[Any]:
    merged = [copy.deepcopy(i) for i in live]
    for item in config:
        if rule.merge_key and isinstance(item, dict):
            position = next(
                (
                    n
                    for n, i in enumerate(merged)
                    if isinstance(i, dict) and i.get(rule.merge_key) == item.get(rule.merge_key)
                ),
                None,
            )
            if position is None:
                merged.append(copy.deepcopy(item))
            else:
                merged[position] = _structured_merge(merged[position], item, rule.item)
        elif item not in merged:
            merged.append(copy.deepcopy(item))
    return merged


def _remove_path(obj: Any, path: Path, meta: PatchMeta | None) -> None:
    """Delete one owned leaf from an object; silently does nothing when it is already gone."""
    node: Any = obj
    rule: Any = meta
    for depth, part in enumerate(path):
        last = depth == len(path) - 1
        kind, _, name = part.partition(":")
        if kind == "f" and isinstance(node, dict):
            if last:
                node.pop(name, None)
                return
            next_rule = (rule or {}).get(name) if isinstance(rule, dict) else None
            node, rule = node.get(name), next_rule
        elif kind == "k" and isinstance(node, list) and isinstance(rule, ListMeta):
            key = json.loads(name)
            index = next(
                (
                    i
                    for i, item in enumerate(node)
                    if isinstance(item, dict) and all(item.get(k) == v for k, v in key.items())
                ),
                None,
            )
            if index is None:
                return
            if last or all(p.startswith("f:" + rule.merge_key) for p in path[depth + 1 :] if rule.merge_key):
                node.pop(index)
                return
            node, rule = node[index], rule.item
        elif kind == "v" and isinstance(node, list):
            value = json.loads(name)
            if value in node:
                node.remove(value)
            return
        else:
            return


def server_side_apply(
    live: dict[str, Any] | None,
    config: dict[str, Any],
    manager: str,
    meta: PatchMeta | None,
    *,
    force: bool,
    now: str,
    subresource: str = "",
) -> dict[str, Any]:
    """Merge an apply configuration into the live object (or create it) and update managedFields."""
    config_values = leaves(_managed_view(config), meta)
    live_values = leaves(_managed_view(live), meta) if live else {}
    entries = _entries(live)
    owned = {index: _owned(entry) for index, entry in enumerate(entries)}
    mine = next(
        (
            i
            for i, e in enumerate(entries)
            if e.get("manager") == manager
            and e.get("operation") == "Apply"
            and e.get("subresource", "") == subresource
        ),
        None,
    )
    conflicts: list[tuple[str, Path]] = []
    for index, entry in enumerate(entries):
        if index == mine:
            continue
        for path in sorted(owned[index] & set(config_values)):
            if live_values.get(path) != config_values[path]:
                conflicts.append((manager_name(entry), path))
    if conflicts and not force:
        raise _conflict_error(conflicts)
    if force:
        for index in owned:
            if index != mine:
                owned[index] -= set(config_values)
    previously = owned.get(mine, set()) if mine is not None else set()
    others = set().union(*(paths for index, paths in owned.items() if index != mine)) if owned else set()
    result = _structured_merge(copy.deepcopy(live) if live else {}, config, meta)
    for path in sorted(previously - set(config_values) - others, key=len, reverse=True):
        _remove_path(result, path, meta)
    if mine is None:
        entries.append(
            _entry(manager, "Apply", config.get("apiVersion", ""), now, set(config_values), subresource)
        )
        owned[len(entries) - 1] = set(config_values)
    else:
        entries[mine]["time"] = now
        owned[mine] = set(config_values)
    result.setdefault("metadata", {})["managedFields"] = _rewrite(entries, owned)
    return result


def _render(path: Path) -> str:
    """A field path as the apiserver prints it: `.spec.containers[name="web"].image`."""
    return "".join(_render_part(part) for part in path)


def _render_part(part: str) -> str:
    kind, _, name = part.partition(":")
    if kind == "f":
        return f".{name}"
    if kind == "k":
        key = json.loads(name)
        return "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in key.items()) + "]"
    return f"[={name}]"


def manager_name(entry: dict[str, Any]) -> str:
    """A manager as a conflict names it (the apiserver's `printManager`): quoted, with its subresource, and
    for an Update the API version and time it wrote with."""
    name = json.dumps(entry.get("manager", ""))
    if entry.get("subresource"):
        name = f"{name} with subresource {json.dumps(entry['subresource'])}"
    if entry.get("operation") == "Update":
        name = f"{name} using {entry.get('apiVersion', '')}"
        if entry.get("time"):
            name = f"{name} at {entry['time']}"
    return name


def _conflict_error(conflicts: list[tuple[str, Path]]) -> ApiError:
    """409 worded as the apiserver's `NewConflictError`: one cause per field naming its manager; the
    message lists the fields under each manager (sorted), or the single conflict on one line."""
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {manager}", "field": _render(path)}
        for manager, path in conflicts
    ]
    if len(conflicts) == 1:
        manager, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {manager}: {_render(path)}"
    else:
        lines = []
        for manager in sorted({m for m, _ in conflicts}):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {_render(path)}" for m, path in conflicts if m == manager)
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, {"causes": causes})
