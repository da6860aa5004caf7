"""HorizontalPodAutoscalers through autoscaling/v1 and v2, as the API server serves one stored object in both
(pkg/apis/autoscaling/v1/conversion.go), driven by the real kubectl against the secured simulator; and the
conversion rules themselves (pure)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from kubesim import hpaviews
from kubesim.simulator import Simulator
from kubesim.testing import run_kubectl as kubectl

Factory = Callable[..., Simulator]
V1 = "horizontalpodautoscalers.v1.autoscaling"
V2 = "horizontalpodautoscalers.v2.autoscaling"


@pytest.fixture
def sim(kubesim_factory: Factory) -> Simulator:
    return kubesim_factory(https=True, auth=True)


def get(sim: Simulator, resource: str, name: str) -> Any:
    return json.loads(kubectl(sim, "get", resource, name, "-o", "json").stdout)


TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
CPU_60 = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
}
MEMORY = {
    "type": "Resource",
    "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}},
}
QPS = {
    "type": "Pods",
    "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}},
}


def hpa(version: str, name: str = "web", **spec: Any) -> str:
    body = {
        "apiVersion": f"autoscaling/{version}",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {"scaleTargetRef": TARGET, "maxReplicas": 5, **spec},
    }
    return json.dumps(body)


def test_autoscaling_v1_serves_the_stored_v2_object(sim: Simulator) -> None:
    """ "The autoscaling/v1 API [...] only supports scaling based on CPU utilization"
    (`targetCPUUtilizationPercentage`); a v1 HPA is the v2 one with a Resource cpu Utilization metric.
    Discovery serves both versions, v2 preferred, with the same names, short name and categories."""
    kubectl(sim, "apply", "-f", "-", stdin=hpa("v1", targetCPUUtilizationPercentage=60))
    stored = get(sim, V2, "web")
    assert stored["apiVersion"] == "autoscaling/v2"
    assert stored["spec"]["metrics"] == [CPU_60]
    assert stored["spec"]["minReplicas"] == 1
    served = get(sim, V1, "web")
    assert served["apiVersion"] == "autoscaling/v1"
    assert served["spec"] == {
        "scaleTargetRef": TARGET,
        "minReplicas": 1,
        "maxReplicas": 5,
        "targetCPUUtilizationPercentage": 60,
    }
    assert served["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    assert served["metadata"]["uid"] == stored["metadata"]["uid"]
    group = json.loads(kubectl(sim, "get", "--raw", "/apis/autoscaling").stdout)
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    assert group["preferredVersion"]["version"] == "v2"
    listed = json.loads(kubectl(sim, "get", "--raw", "/apis/autoscaling/v1").stdout)["resources"]
    assert [(r["name"], r.get("shortNames"), r.get("categories")) for r in listed] == [
        ("horizontalpodautoscalers", ["hpa"], ["all"]),
        ("horizontalpodautoscalers/status", None, None),
    ]
    row = kubectl(sim, "get", "hpa", "web").stdout.splitlines()[1].split()
    assert row[:6] == ["web", "Deployment/web", "cpu:", "<unknown>/60%", "1", "5"]


def test_a_v2_only_field_survives_a_round_trip_through_v1(sim: Simulator) -> None:
    """What v1 cannot say travels in the `autoscaling.alpha.kubernetes.io/…` annotations, so reading and
    writing back through v1 keeps every metric and the behavior (the CPU metric goes last)."""
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 60}}
    kubectl(
        sim, "apply", "-f", "-", stdin=hpa("v2", "multi", metrics=[CPU_60, MEMORY, QPS], behavior=behavior)
    )
    served = get(sim, V1, "multi")
    annotations = served["metadata"]["annotations"]
    assert json.loads(annotations["autoscaling.alpha.kubernetes.io/metrics"]) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "500Mi"}},
        {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}},
    ]
    assert (
        json.loads(annotations["autoscaling.alpha.kubernetes.io/behavior"])["ScaleDown"][
            "StabilizationWindowSeconds"
        ]
        == 60
    )
    assert served["spec"]["targetCPUUtilizationPercentage"] == 60
    kubectl(sim, "replace", "-f", "-", stdin=json.dumps(served))
    stored = get(sim, V2, "multi")
    assert stored["spec"]["metrics"] == [MEMORY, QPS, CPU_60]
    assert stored["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 60
    assert not [
        key for key in stored["metadata"].get("annotations") or {} if key.startswith("autoscaling.alpha")
    ]


def test_patches_through_v1_are_applied_to_the_v1_shape(sim: Simulator) -> None:
    kubectl(sim, "apply", "-f", "-", stdin=hpa("v1", targetCPUUtilizationPercentage=60))
    kubectl(sim, "patch", V1, "web", "--type=merge", "-p", '{"spec":{"targetCPUUtilizationPercentage":75}}')
    kubectl(sim, "patch", V1, "web", "-p", '{"spec":{"maxReplicas":9}}')  # strategic
    kubectl(
        sim,
        "patch",
        V1,
        "web",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/minReplicas","value":2}]',
    )
    spec = get(sim, V2, "web")["spec"]
    assert (
        spec["metrics"][0]["resource"]["target"]["averageUtilization"],
        spec["maxReplicas"],
        spec["minReplicas"],
    ) == (
        75,
        9,
        2,
    )
    unknown = kubectl(sim, "patch", V1, "web", "--type=merge", "-p", '{"spec":{"metrics":[]}}', check=False)
    assert 'unknown field "spec.metrics"' in unknown.stderr


def test_a_v2_hpa_without_metrics_targets_80_percent_cpu(sim: Simulator) -> None:
    """ "If not set, the default metric will be set to 80% average CPU utilization"
    (HorizontalPodAutoscalerSpec)."""
    kubectl(sim, "apply", "-f", "-", stdin=hpa("v2"))
    assert get(sim, V2, "web")["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }
    ]
    assert get(sim, V1, "web")["spec"]["targetCPUUtilizationPercentage"] == 80


def test_kubectl_autoscale_creates_a_v2_hpa(kubesim_factory: Factory) -> None:
    """ "kubectl autoscale deployment foo --min=2 --max=10 --cpu=80%" creates an autoscaling/v2 HPA."""
    sim = kubesim_factory(https=True, auth=True)
    kubectl(sim, "create", "deployment", "web", "--image=web:1")
    made = kubectl(sim, "autoscale", "deployment", "web", "--min=2", "--max=10", "--cpu=70%")
    assert made.stdout.strip() == "horizontalpodautoscaler.autoscaling/web autoscaled"
    spec = get(sim, V2, "web")["spec"]
    assert (spec["minReplicas"], spec["maxReplicas"], spec["scaleTargetRef"]) == (2, 10, TARGET)
    assert spec["metrics"] == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
        }
    ]


# --- the conversion rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "metric",
    [
        MEMORY,
        QPS,
        {
            "type": "Object",
            "object": {
                "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
                "metric": {"name": "requests"},
                "target": {"type": "Value", "value": "2k"},
            },
        },
        {
            "type": "External",
            "external": {
                "metric": {"name": "queue", "selector": {"matchLabels": {"q": "jobs"}}},
                "target": {"type": "AverageValue", "averageValue": "30"},
            },
        },
        {
            "type": "ContainerResource",
            "containerResource": {
                "name": "cpu",
                "container": "app",
                "target": {"type": "Utilization", "averageUtilization": 50},
            },
        },
    ],
)
def test_every_metric_kind_round_trips_through_the_v1_shape(metric: dict[str, Any]) -> None:
    assert hpaviews.metric_from_v1(hpaviews.metric_to_v1(metric)) == metric


def test_current_metrics_and_conditions_travel_in_annotations() -> None:
    condition = {
        "type": "AbleToScale",
        "status": "True",
        "reason": "ReadyForNewScale",
        "message": "ok",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    current = {
        "type": "Resource",
        "resource": {"name": "cpu", "current": {"averageUtilization": 42, "averageValue": "120m"}},
    }
    stored = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 5, "metrics": [CPU_60]},
        "status": {
            "currentReplicas": 3,
            "desiredReplicas": 4,
            "currentMetrics": [current],
            "conditions": [condition],
        },
    }
    served = hpaviews.to_v1(stored)
    assert served["status"] == {
        "currentReplicas": 3,
        "desiredReplicas": 4,
        "currentCPUUtilizationPercentage": 42,
    }
    assert set(served["metadata"]["annotations"]) == {hpaviews.CURRENT_METRICS, hpaviews.CONDITIONS}
    assert hpaviews.from_v1(served) == stored


def test_v1_without_a_target_has_no_metric_until_defaulted() -> None:
    served = json.loads(hpa("v1"))
    assert "metrics" not in hpaviews.from_v1(served)["spec"]


def test_behavior_is_marshalled_as_the_internal_type_and_read_back_case_insensitively() -> None:
    behavior = {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}],
        }
    }
    internal = hpaviews.behavior_to_internal(behavior)
    assert internal == {
        "ScaleUp": {
            "StabilizationWindowSeconds": 0,
            "SelectPolicy": "Max",
            "Policies": [{"Type": "Pods", "Value": 4, "PeriodSeconds": 15}],
            "Tolerance": None,
        },
        "ScaleDown": None,
    }
    assert hpaviews.behavior_from_internal(internal) == behavior
    assert hpaviews.behavior_from_internal({"scaleup": {"selectpolicy": "Min"}}) == {
        "scaleUp": {"selectPolicy": "Min"}
    }
