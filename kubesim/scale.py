"""The `scale` subresource's pure half: an object → its autoscaling/v1 Scale, and a Scale's replicas → the
object. Any kind that declares `ResourceType.scale` (CRDs with `subresources.scale`, Deployments) gets it."""

from __future__ import annotations

from typing import Any

from kubesim.errors import ApiError, Cause, internal_error, invalid
from kubesim.resources import ScalePaths

_IDENTITY = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")


def path_parts(path: str) -> list[str]:
    """`.spec.replicas` → ["spec", "replicas"]: CRDs allow only dotted paths without array notation."""
    return [part for part in path.split(".") if part]


def _read(obj: dict[str, Any], path: str) -> Any:
    value: Any = obj
    for part in path_parts(path):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def selector_string(selector: Any) -> str:
    """A LabelSelector object rendered as the apiserver's `metav1.LabelSelectorAsSelector(...).String()`
    (requirements sorted by key); a string is already one."""
    if selector is None:
        return ""
    if isinstance(selector, str):
        return selector
    requirements: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        requirements.append((key, f"{key}={value}"))
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(sorted(expression.get("values") or []))
        rendered = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(operator, f"{key} {operator}")
        requirements.append((key, rendered))
    return ",".join(text for _key, text in sorted(requirements))


def scale_of(obj: dict[str, Any], paths: ScalePaths) -> dict[str, Any]:
    """The Scale an object shows. A missing spec replicas is an error, as for a CRD upstream; a missing
    status replicas reads 0 and a missing selector reads empty (the documented defaults)."""
    replicas = _read(obj, paths.spec_replicas)
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise internal_error(f'the spec replicas field "{paths.spec_replicas}" does not exist')
    status_replicas = _read(obj, paths.status_replicas)
    metadata = obj["metadata"]
    status: dict[str, Any] = {"replicas": status_replicas if isinstance(status_replicas, int) else 0}
    selector = selector_string(_read(obj, paths.label_selector)) if paths.label_selector else ""
    if selector:
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {key: metadata[key] for key in _IDENTITY if key in metadata},
        "spec": {"replicas": replicas},
        "status": status,
    }


def desired_replicas(scale: Any, name: str) -> int:
    """The replicas a Scale body asks for, or 422 naming `spec.replicas` as the apiserver words it."""
    if not isinstance(scale, dict):
        raise ApiError(400, "BadRequest", "the body of a scale request must be a Scale object")
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        cause = Cause("spec.replicas", f"Invalid value: {replicas!r}: must be an integer")
        raise invalid("Scale", "autoscaling", name, [cause])
    if replicas < 0:
        cause = Cause("spec.replicas", f"Invalid value: {replicas}: must be greater than or equal to 0")
        raise invalid("Scale", "autoscaling", name, [cause])
    return replicas


def with_replicas(obj: dict[str, Any], paths: ScalePaths, replicas: int) -> dict[str, Any]:
    """The object with its spec replicas set (intermediate objects made as needed); edits `obj`."""
    parts = path_parts(paths.spec_replicas)
    target = obj
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = replicas
    return obj
