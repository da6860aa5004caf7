"""kubectl scenarios as a CI script runs them: prune, scale, rollout status, events, top, port-forward.

The first ones use the contract fixtures (`kubectl`, bound to a fresh namespace), so they run against a real
cluster too with KUBESIM_CONTRACT_KUBECONFIG; those that need pods to run use a simulator with its kubelet.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from collections.abc import Callable
from typing import Any

from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL


def manifest(*documents: str) -> str:
    return "\n---\n".join(textwrap.dedent(d).strip() for d in documents)


def config_map(name: str) -> str:
    return f"""
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: {name}, labels: {{app: shop}}}}
        data: {{k: v}}
    """


SERVICE = """
    apiVersion: v1
    kind: Service
    metadata: {name: shop, labels: {app: shop}}
    spec: {selector: {app: shop}, ports: [{port: 80}]}
"""


def replicated(kind: str, name: str) -> str:
    service_name = "\n          serviceName: shop" if kind == "StatefulSet" else ""
    return f"""
        apiVersion: apps/v1
        kind: {kind}
        metadata: {{name: {name}, labels: {{app: shop}}}}
        spec:
          replicas: 1{service_name}
          selector: {{matchLabels: {{app: {name}}}}}
          template:
            metadata: {{labels: {{app: {name}}}}}
            spec: {{containers: [{{name: main, image: "shop:1"}}]}}
    """


def test_apply_prune_deletes_what_the_manifest_no_longer_lists(kubectl: Any) -> None:
    """`kubectl apply --prune -l app=shop` "[deletes] resource objects that are not present in the current
    configuration" among those with the label, looking through its default allow-list of kinds (ConfigMaps,
    Endpoints, PVCs, Pods, ReplicationControllers, Secrets, Services, Jobs, CronJobs, Ingresses, DaemonSets,
    Deployments, ReplicaSets, StatefulSets, …), so every one of them must be listable (kubectl apply
    reference; Declarative Management of Kubernetes Objects: "Alternative: kubectl apply -f <directory>
    --prune")."""
    full = manifest(config_map("keep"), config_map("drop"), SERVICE, replicated("Deployment", "web"))
    applied = kubectl("apply", "--prune", "-l", "app=shop", "-f", "-", stdin=full)
    assert "configmap/drop created" in applied.stdout
    smaller = manifest(config_map("keep"), SERVICE)
    pruned = kubectl("apply", "--prune", "-l", "app=shop", "-f", "-", stdin=smaller)
    assert "configmap/drop pruned" in pruned.stdout
    assert "deployment.apps/web pruned" in pruned.stdout
    names = kubectl("get", "configmaps,services,deployments", "-l", "app=shop", "-o", "name").stdout.split()
    assert names == ["configmap/keep", "service/shop"]


def test_kubectl_scale_statefulsets_and_replicasets(kubectl: Any) -> None:
    """ "Set a new size for a deployment, replica set, replication controller, or stateful set." (kubectl
    scale): through their `scale` subresource, with `--current-replicas` as a precondition."""
    kubectl(
        "apply", "-f", "-", stdin=manifest(replicated("StatefulSet", "db"), replicated("ReplicaSet", "cache"))
    )
    for resource in ("statefulset/db", "replicaset/cache"):
        scaled = kubectl("scale", resource, "--current-replicas=1", "--replicas=3")
        assert "scaled" in scaled.stdout
        assert kubectl("get", resource, "-o", "jsonpath={.spec.replicas}").stdout == "3"
        refused = kubectl("scale", resource, "--current-replicas=1", "--replicas=2", check=False)
        assert refused.returncode != 0
        assert "Expected replicas to be 1, was 3" in refused.stderr


# --- scenarios that need pods to run: the simulator with its kubelet -------------------------------------


def run_kubectl(sim: Simulator, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path)}
    return subprocess.run(
        [str(KUBECTL), "--namespace", "default", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


def test_rollout_status_waits_for_a_deployment_to_be_available(
    kubesim_factory: Callable[..., Simulator],
) -> None:
    """ "kubectl rollout status deployment/nginx-deployment [...] deployment "nginx-deployment" successfully
    rolled out" (Deployments: Updating a Deployment): it watches until the updated replicas are available."""
    sim = kubesim_factory(kubelet=True)
    sim.kubelet.settings.start_delay = 0.2
    applied = run_kubectl(sim, "apply", "-f", "-", stdin=manifest(replicated("Deployment", "web")))
    assert applied.returncode == 0, applied.stderr
    status = run_kubectl(sim, "rollout", "status", "deployment/web", "--timeout=30s")
    assert status.returncode == 0, status.stderr
    assert 'deployment "web" successfully rolled out' in status.stdout


def test_kubectl_get_events_lists_what_was_recorded(kubesim_factory: Callable[..., Simulator]) -> None:
    """`kubectl get events` reads core v1 Events; what a controller records through events.k8s.io/v1 shows
    up there with its reason and message ("Events are ... stored in the API server", kubectl events)."""
    sim = kubesim_factory()
    sim.store.create(
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "train.1", "namespace": "default"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "regarding": {"kind": "TFJob", "name": "train", "namespace": "default"},
            "reason": "JobRunning",
            "note": "TFJob train is running.",
            "type": "Normal",
            "action": "Reconcile",
            "reportingController": "argoml.io/jobs",
            "reportingInstance": "controller-0",
        }
    )
    listed = run_kubectl(sim, "get", "events")
    assert listed.returncode == 0, listed.stderr
    assert "JobRunning" in listed.stdout
    assert "TFJob train is running." in listed.stdout


def test_kubectl_top_says_the_metrics_api_is_not_available(kubesim_factory: Callable[..., Simulator]) -> None:
    """No metrics-server, so no `metrics.k8s.io` group: kubectl answers as on any cluster without one."""
    sim = kubesim_factory()
    top = run_kubectl(sim, "top", "pods")
    assert top.returncode != 0
    assert "Metrics API not available" in top.stderr


def test_kubectl_port_forward_prints_the_simulators_message(
    kubesim_factory: Callable[..., Simulator],
) -> None:
    sim = kubesim_factory(kubelet=True)
    sim.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "main", "image": "web:1", "ports": [{"containerPort": 80}]}]},
        }
    )
    assert sim.run_until(lambda: sim.store.get("pods", "web")["status"].get("phase") == "Running", within=30)
    forwarded = run_kubectl(sim, "port-forward", "pod/web", "18080:80")
    assert forwarded.returncode != 0
    assert "pods/portforward is not supported by the simulator (kubesim)" in forwarded.stderr
