"""autoscaling/v1 HorizontalPodAutoscalers: the stored autoscaling/v2 objects converted both ways, as the API
server's conversion does (kubernetes pkg/apis/autoscaling/v1/conversion.go).

v1 knows one metric, `targetCPUUtilizationPercentage` (the v2 Resource metric `cpu` with an average
utilization target) and `currentCPUUtilizationPercentage`. Everything else v2 holds travels through v1 in
annotations, so a v1 client that writes back what it read loses nothing: the other metrics
(`autoscaling.alpha.kubernetes.io/metrics`, in v1's MetricSpec shape), the current metrics
(`…/current-metrics`), the conditions (`…/conditions`) and the behavior (`…/behavior`, the internal type
as Go marshals it: field names capitalised).
"""

from __future__ import annotations

import json
from typing import Any

from kubesim.resources import Conversion

METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
ROUND_TRIP = (METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR)

Json = dict[str, Any]


def _go_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _pruned(value: Json) -> Json:
    """A struct as Go marshals it with `omitempty`: absent values left out."""
    return {k: v for k, v in value.items() if v is not None}


def _is_cpu_utilization(metric: Json) -> bool:
    resource = metric.get("resource") or {}
    return (
        metric.get("type") == "Resource"
        and resource.get("name") == "cpu"
        and (resource.get("target") or {}).get("averageUtilization") is not None
    )


# --- one metric, each way --------------------------------------------------------------------------------


def _reference(described: Json) -> Json:
    return _pruned(
        {
            "kind": described.get("kind"),
            "name": described.get("name"),
            "apiVersion": described.get("apiVersion"),
        }
    )


def _object_to_v1(source: Json, values: Json, value_field: str) -> Json:
    """A v2 Object metric's spec or status source in v1's shape: the described object, the metric, and
    the target's or current `values` (the value under `value_field`: targetValue or currentValue)."""
    identifier = source.get("metric") or {}
    body = {
        "target": _reference(source.get("describedObject") or {}),
        "metricName": identifier.get("name", ""),
        value_field: values.get("value", "0"),
        "selector": identifier.get("selector"),
        "averageValue": values.get("averageValue"),
    }
    return _pruned(body)


def metric_to_v1(metric: Json) -> Json:
    """A v2 MetricSpec in v1's shape (metricName, targetValue, targetAverageValue, …)."""
    kind = metric.get("type")
    if kind == "Object":
        source = metric.get("object") or {}
        return {"type": kind, "object": _object_to_v1(source, source.get("target") or {}, "targetValue")}
    if kind == "Pods":
        source = metric.get("pods") or {}
        identifier = source.get("metric") or {}
        body = {
            "metricName": identifier.get("name", ""),
            "targetAverageValue": (source.get("target") or {}).get("averageValue", "0"),
            "selector": identifier.get("selector"),
        }
        return {"type": kind, "pods": _pruned(body)}
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        source = metric.get(field) or {}
        target = source.get("target") or {}
        body = {
            "name": source.get("name", ""),
            "targetAverageUtilization": target.get("averageUtilization"),
            "targetAverageValue": target.get("averageValue"),
            "container": source.get("container"),
        }
        return {"type": kind, field: _pruned(body)}
    if kind == "External":
        source = metric.get("external") or {}
        target, identifier = source.get("target") or {}, source.get("metric") or {}
        body = {
            "metricName": identifier.get("name", ""),
            "metricSelector": identifier.get("selector"),
            "targetValue": target.get("value"),
            "targetAverageValue": target.get("averageValue"),
        }
        return {"type": kind, "external": _pruned(body)}
    return {"type": kind}


def metric_from_v1(metric: Json) -> Json:
    """A v1-shaped MetricSpec back in v2's (the target's type follows from which value is set)."""
    kind = metric.get("type")
    if kind == "Object":
        source = metric.get("object") or {}
        average = source.get("averageValue")
        target = _pruned(
            {
                "type": "AverageValue" if average is not None else "Value",
                "value": source.get("targetValue", "0"),
                "averageValue": average,
            }
        )
        identifier = _pruned({"name": source.get("metricName", ""), "selector": source.get("selector")})
        return {
            "type": kind,
            "object": {"describedObject": source.get("target") or {}, "target": target, "metric": identifier},
        }
    if kind == "Pods":
        source = metric.get("pods") or {}
        identifier = _pruned({"name": source.get("metricName", ""), "selector": source.get("selector")})
        target = {"type": "AverageValue", "averageValue": source.get("targetAverageValue", "0")}
        return {"type": kind, "pods": {"metric": identifier, "target": target}}
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        source = metric.get(field) or {}
        utilization = source.get("targetAverageUtilization")
        target = _pruned(
            {
                "type": "AverageValue" if utilization is None else "Utilization",
                "averageUtilization": utilization,
                "averageValue": source.get("targetAverageValue"),
            }
        )
        return {
            "type": kind,
            field: _pruned(
                {"name": source.get("name", ""), "target": target, "container": source.get("container")}
            ),
        }
    if kind == "External":
        source = metric.get("external") or {}
        average = source.get("targetAverageValue")
        target = _pruned(
            {
                "type": "AverageValue" if average is not None else "Value",
                "value": source.get("targetValue"),
                "averageValue": average,
            }
        )
        identifier = _pruned({"name": source.get("metricName", ""), "selector": source.get("metricSelector")})
        return {"type": kind, "external": {"metric": identifier, "target": target}}
    return {"type": kind}


_CURRENT_V1 = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "External": "external",
}


def _status_source(metric: Json) -> tuple[str, str | None, Json]:
    """A MetricStatus's type, the field holding its source in both versions (None for an unknown type), and
    that source."""
    kind = metric.get("type", "")
    field = _CURRENT_V1.get(kind)
    return kind, field, (metric.get(field) or {}) if field is not None else {}


def status_metric_to_v1(metric: Json) -> Json:
    """A v2 MetricStatus in v1's shape (currentValue, currentAverageValue, currentAverageUtilization)."""
    kind, field, source = _status_source(metric)
    if field is None:
        return {"type": kind}
    current, identifier = source.get("current") or {}, source.get("metric") or {}
    if kind == "Object":
        body = _object_to_v1(source, current, "currentValue")
    elif kind == "Pods":
        body = {
            "metricName": identifier.get("name", ""),
            "currentAverageValue": current.get("averageValue", "0"),
            "selector": identifier.get("selector"),
        }
    elif kind == "External":
        body = {
            "metricName": identifier.get("name", ""),
            "metricSelector": identifier.get("selector"),
            "currentValue": current.get("value", "0"),
            "currentAverageValue": current.get("averageValue"),
        }
    else:
        body = {
            "name": source.get("name", ""),
            "currentAverageUtilization": current.get("averageUtilization"),
            "currentAverageValue": current.get("averageValue", "0"),
            "container": source.get("container"),
        }
    return {"type": kind, field: _pruned(body)}


def status_metric_from_v1(metric: Json) -> Json:
    kind, field, source = _status_source(metric)
    if field is None:
        return {"type": kind}
    if kind == "Object":
        current = _pruned({"value": source.get("currentValue"), "averageValue": source.get("averageValue")})
        identifier = _pruned({"name": source.get("metricName", ""), "selector": source.get("selector")})
        body = {"describedObject": source.get("target") or {}, "metric": identifier, "current": current}
    elif kind == "Pods":
        identifier = _pruned({"name": source.get("metricName", ""), "selector": source.get("selector")})
        body = {"metric": identifier, "current": _pruned({"averageValue": source.get("currentAverageValue")})}
    elif kind == "External":
        identifier = _pruned({"name": source.get("metricName", ""), "selector": source.get("metricSelector")})
        current = _pruned(
            {"value": source.get("currentValue"), "averageValue": source.get("currentAverageValue")}
        )
        body = {"metric": identifier, "current": current}
    else:
        current = _pruned(
            {
                "averageUtilization": source.get("currentAverageUtilization"),
                "averageValue": source.get("currentAverageValue"),
            }
        )
        body = _pruned(
            {"name": source.get("name", ""), "current": current, "container": source.get("container")}
        )
    return {"type": kind, field: body}


# --- behavior: the internal Go type, marshalled without json tags ----------------------------------------

_RULES = (("stabilizationWindowSeconds", "StabilizationWindowSeconds"), ("selectPolicy", "SelectPolicy"))
_POLICY = (("type", "Type"), ("value", "Value"), ("periodSeconds", "PeriodSeconds"))


def behavior_to_internal(behavior: Json) -> Json:
    def rules(value: Json | None) -> Json | None:
        if value is None:
            return None
        converted: Json = {go: value.get(name) for name, go in _RULES}
        policies = value.get("policies")
        converted["Policies"] = (
            None if policies is None else [{go: p.get(name) for name, go in _POLICY} for p in policies]
        )
        converted["Tolerance"] = value.get("tolerance")
        return converted

    return {"ScaleUp": rules(behavior.get("scaleUp")), "ScaleDown": rules(behavior.get("scaleDown"))}


def behavior_from_internal(encoded: Json) -> Json:
    """json.Unmarshal into the internal type matches field names case-insensitively."""

    def field(value: Json, name: str) -> Any:
        return next((v for k, v in value.items() if k.lower() == name.lower()), None)

    def rules(value: Json | None) -> Json | None:
        if not isinstance(value, dict):
            return None
        converted = {name: field(value, name) for name, _go in _RULES}
        policies = field(value, "policies")
        if isinstance(policies, list):
            converted["policies"] = [{name: field(p, name) for name, _go in _POLICY} for p in policies]
        converted["tolerance"] = field(value, "tolerance")
        return _pruned(converted)

    return _pruned(
        {"scaleUp": rules(field(encoded, "scaleUp")), "scaleDown": rules(field(encoded, "scaleDown"))}
    )


# --- whole objects ---------------------------------------------------------------------------------------


def to_v1(stored: Json) -> Json:
    """A stored autoscaling/v2 HorizontalPodAutoscaler as autoscaling/v1 serves it."""
    spec, status = stored.get("spec") or {}, stored.get("status") or {}
    metadata = dict(stored.get("metadata") or {})
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if k not in ROUND_TRIP}
    metrics = spec.get("metrics") or []
    v1_spec = _pruned(
        {
            "scaleTargetRef": spec.get("scaleTargetRef"),
            "minReplicas": spec.get("minReplicas"),
            "maxReplicas": spec.get("maxReplicas", 0),
        }
    )
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    if cpu is not None:
        v1_spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    others = [metric_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRICS] = _go_json(others)
    current = status.get("currentMetrics") or []
    if current:
        annotations[CURRENT_METRICS] = _go_json([status_metric_to_v1(m) for m in current])
    if spec.get("behavior") is not None:
        annotations[BEHAVIOR] = _go_json(behavior_to_internal(spec["behavior"]))
    if status.get("conditions"):
        annotations[CONDITIONS] = _go_json(status["conditions"])
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    v1_status = _pruned(
        {
            "observedGeneration": status.get("observedGeneration"),
            "lastScaleTime": status.get("lastScaleTime"),
            "currentReplicas": status.get("currentReplicas", 0),
            "desiredReplicas": status.get("desiredReplicas", 0),
        }
    )
    for metric in current:
        utilization = ((metric.get("resource") or {}).get("current") or {}).get("averageUtilization")
        if (
            metric.get("type") == "Resource"
            and (metric.get("resource") or {}).get("name") == "cpu"
            and utilization is not None
        ):
            v1_status["currentCPUUtilizationPercentage"] = utilization
    return {
        **stored,
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": v1_spec,
        "status": v1_status,
    }


def _annotation(annotations: dict[str, str], key: str) -> Any:
    text = annotations.get(key)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def from_v1(served: Json) -> Json:
    """An autoscaling/v1 HorizontalPodAutoscaler (as a client sent it) in the stored autoscaling/v2 shape:
    the round-trip annotations become metrics, behavior, current metrics and conditions again."""
    spec, status = served.get("spec") or {}, served.get("status") or {}
    metadata = dict(served.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    v2_spec = _pruned(
        {
            "scaleTargetRef": spec.get("scaleTargetRef"),
            "minReplicas": spec.get("minReplicas"),
            "maxReplicas": spec.get("maxReplicas"),
        }
    )
    metrics = [metric_from_v1(m) for m in _annotation(annotations, METRICS) or [] if isinstance(m, dict)]
    if spec.get("targetCPUUtilizationPercentage") is not None:
        target = {"type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": target}})
    if metrics:
        v2_spec["metrics"] = metrics
    behavior = _annotation(annotations, BEHAVIOR)
    if isinstance(behavior, dict):
        v2_spec["behavior"] = behavior_from_internal(behavior)
    v2_status = _pruned(
        {
            "observedGeneration": status.get("observedGeneration"),
            "lastScaleTime": status.get("lastScaleTime"),
            "currentReplicas": status.get("currentReplicas"),
            "desiredReplicas": status.get("desiredReplicas"),
        }
    )
    current = _annotation(annotations, CURRENT_METRICS)
    if isinstance(current, list):
        v2_status["currentMetrics"] = [status_metric_from_v1(m) for m in current if isinstance(m, dict)]
    elif status.get("currentCPUUtilizationPercentage") is not None:
        utilization = {"averageUtilization": status["currentCPUUtilizationPercentage"]}
        v2_status["currentMetrics"] = [
            {"type": "Resource", "resource": {"name": "cpu", "current": utilization}}
        ]
    conditions = _annotation(annotations, CONDITIONS)
    if isinstance(conditions, list):
        v2_status["conditions"] = conditions
    kept = {k: v for k, v in annotations.items() if k not in ROUND_TRIP}
    if kept:
        metadata["annotations"] = kept
    else:
        metadata.pop("annotations", None)
    converted = {**served, "apiVersion": "autoscaling/v2", "metadata": metadata, "spec": v2_spec}
    if "status" in served:
        converted["status"] = v2_status
    return converted


HPA_V1 = Conversion(to_version=to_v1, to_storage=from_v1)
