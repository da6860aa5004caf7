"""End to end on a real cluster with the chart installed (`pytest -m cluster deploy/tests`, KUBECONFIG set).

What the simulator cannot show: real pods start from the image as non-root with a read-only root, the
migration Job and the init containers order the start, the API server calls our webhooks over TLS with the
CA the Job (or cert-manager) wrote, the RBAC the API server enforces is enough and no more, one controller
leads and another takes over, and a TFJob runs to success. CI runs this on kind
(.github/workflows/cluster-e2e.yaml); ARGOML_NAMESPACE and ARGOML_RELEASE name the install (default argoml).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

pytestmark = pytest.mark.cluster

NAMESPACE = os.environ.get("ARGOML_NAMESPACE", "argoml")
RELEASE = os.environ.get("ARGOML_RELEASE", "argoml")
FULLNAME = RELEASE if "argoml" in RELEASE else f"{RELEASE}-argoml"
KUBECTL = os.environ.get("KUBECTL") or shutil.which("kubectl") or str(Path(sys.executable).parent / "kubectl")
TEST_IMAGE = os.environ.get("ARGOML_E2E_IMAGE", "busybox:1.36")
T = TypeVar("T")


def kubectl(*args: str, stdin: str | None = None, check: bool = True, timeout: float = 120) -> str:
    result = subprocess.run(
        [KUBECTL, *args], input=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout if result.returncode == 0 else result.stderr


def kubectl_json(*args: str) -> Any:
    return json.loads(kubectl(*args, "-o", "json"))


def eventually(check: Callable[[], T | None], timeout: float, what: str, interval: float = 2.0) -> T:
    """The first truthy result of `check`, polling until `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def service_get(path: str) -> Any:
    """GET through the API server's proxy to the web Service (HTTPS; the proxy does not verify)."""
    proxy = f"/api/v1/namespaces/{NAMESPACE}/services/https:{FULLNAME}-web:https/proxy"
    return json.loads(kubectl("get", "--raw", proxy + path))


def pods(component: str) -> list[dict[str, Any]]:
    selector = f"app.kubernetes.io/instance={RELEASE},app.kubernetes.io/component={component}"
    return kubectl_json("get", "pods", "-n", NAMESPACE, "-l", selector)["items"]


@pytest.fixture(scope="module")
def workspace() -> Iterator[str]:
    """A namespace of our own for the test objects, removed afterwards."""
    name = f"argoml-e2e-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        kubectl("delete", "namespace", name, "--wait=false", check=False)


# -- the install ----------------------------------------------------------------------------------------
def test_the_crds_are_established():
    for plural in ("tfjobs", "mxjobs", "pytorchjobs", "mpijobs", "hyperparamworkflows", "tensorboards"):
        kubectl("wait", "--for=condition=Established", f"crd/{plural}.argoml.io", "--timeout=60s")


def test_the_migration_ran_and_every_deployment_is_available():
    selector = f"app.kubernetes.io/instance={RELEASE},app.kubernetes.io/component=migrate"
    kubectl("wait", "--for=condition=Complete", "job", "-n", NAMESPACE, "-l", selector, "--timeout=300s")
    for component in ("web", "webhooks", "controller", "worker", "beat"):
        kubectl("rollout", "status", f"deployment/{FULLNAME}-{component}", "-n", NAMESPACE, "--timeout=300s")


def test_the_web_is_live_and_ready_with_database_redis_and_cluster():
    assert service_get("/healthz") == {"status": "ok"}
    ready = service_get("/readyz")
    assert ready["status"] == "ok", ready
    assert ready["checks"] == {"database": "ok", "redis": "ok", "cluster": "ok"}


def test_the_processes_run_as_the_image_user_on_a_read_only_root():
    pod = pods("web")[0]["metadata"]["name"]
    assert kubectl("exec", "-n", NAMESPACE, pod, "-c", "web", "--", "id", "-u").strip() == "10001"
    denied = kubectl("exec", "-n", NAMESPACE, pod, "-c", "web", "--", "touch", "/app/x", check=False)
    assert "Read-only file system" in denied
    kubectl("exec", "-n", NAMESPACE, pod, "-c", "web", "--", "touch", "/tmp/x")


def test_the_api_server_enforces_least_privilege():
    def can(account: str, *what: str) -> bool:
        answer = kubectl(
            "auth", "can-i", f"--as=system:serviceaccount:{NAMESPACE}:{account}", *what, check=False
        )
        return answer.strip() == "yes"

    assert can(f"{FULLNAME}-controller", "watch", "tfjobs.argoml.io", "--all-namespaces")
    assert can(f"{FULLNAME}-worker", "delete", "pods", "--all-namespaces")
    assert can(f"{FULLNAME}-web", "create", "workflows.argoproj.io", "-n", "default")
    assert not can(f"{FULLNAME}-web", "list", "secrets", "-n", NAMESPACE)
    assert not can(f"{FULLNAME}-web", "delete", "pods", "--all-namespaces")
    assert not can(f"{FULLNAME}-worker", "watch", "pods", "--all-namespaces")
    assert not can(f"{FULLNAME}-controller", "get", "secrets", "-n", NAMESPACE)
    assert not can(FULLNAME, "get", "pods", "-n", NAMESPACE)  # beat and migrations


# -- leader election ----------------------------------------------------------------------------------------
def lease_holder() -> str:
    lease = kubectl_json("get", "lease", f"{FULLNAME}-controllers", "-n", NAMESPACE)
    return lease["spec"].get("holderIdentity") or ""


def test_exactly_one_controller_leads():
    holder = eventually(lease_holder, 120, "a controller to take the Lease")
    names = [pod["metadata"]["name"] for pod in pods("controller")]
    assert len(names) == 2
    assert [name for name in names if name in holder] != [], f"{holder} is none of {names}"


def test_another_controller_takes_over_when_the_leader_goes_away():
    holder = eventually(lease_holder, 120, "a controller to take the Lease")
    leader = next(p["metadata"]["name"] for p in pods("controller") if p["metadata"]["name"] in holder)
    kubectl("delete", "pod", leader, "-n", NAMESPACE, "--wait=false")
    # A clean shutdown releases the Lease; a lost one expires after leaseDurationSeconds (15).
    new_holder = eventually(lambda: (h := lease_holder()) and leader not in h and h, 90, "a new leader")
    assert leader not in new_holder


# -- webhooks and a training job --------------------------------------------------------------------------
def tfjob(name: str, namespace: str, container: str = "tensorflow") -> dict[str, Any]:
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": container,
                                    "image": TEST_IMAGE,
                                    "command": ["sh", "-c", "echo trained"],
                                }
                            ]
                        }
                    },
                }
            }
        },
    }


def test_the_validating_webhook_rejects_a_tfjob_without_its_framework_container(workspace):
    answer = kubectl(
        "apply", "-f", "-", stdin=yaml.safe_dump(tfjob("no-tf", workspace, "trainer")), check=False
    )
    assert 'admission webhook "validate.argoml.io" denied the request' in answer
    assert "needs a container named 'tensorflow'" in answer


def test_the_mutating_webhook_fills_in_defaults(workspace):
    manifest = yaml.safe_dump(tfjob("defaults", workspace))
    stored = json.loads(kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=manifest))
    container = stored["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert container["ports"][0]["name"] == "tfjob-port"


def test_a_tfjob_runs_to_success_and_is_mirrored(workspace):
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(tfjob("hello", workspace)))

    def succeeded() -> bool:
        status = kubectl_json("get", "tfjob", "hello", "-n", workspace).get("status") or {}
        return any(c["type"] == "Succeeded" and c["status"] == "True" for c in status.get("conditions", []))

    eventually(succeeded, 300, "TFJob hello to succeed")
    events = kubectl("get", "events.events.k8s.io", "-n", workspace, "-o", "name")
    assert events.strip(), "the controller records events about the job"


def test_argo_workflows_are_linted_in_namespaces_that_opt_in(workspace):
    kubectl("label", "namespace", workspace, "argoml.io/validate-argo=enabled", "--overwrite")
    broken = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "broken", "namespace": workspace},
        "spec": {
            "entrypoint": "missing",
            "templates": [{"name": "main", "container": {"image": TEST_IMAGE}}],
        },
    }
    answer = kubectl("create", "-f", "-", stdin=yaml.safe_dump(broken), check=False)
    assert 'admission webhook "argo.validate.argoml.io" denied the request' in answer


# -- metrics ----------------------------------------------------------------------------------------------
def test_the_controllers_and_workers_serve_their_metrics_port():
    # /metrics asks for the METRICS_TOKEN bearer token (docs/security.md), which this install does not set;
    # /healthz on the same port is what the probes use.
    for component in ("controller", "worker"):
        pod = pods(component)[0]["metadata"]["name"]
        text = kubectl("get", "--raw", f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}:9100/proxy/healthz")
        assert '"ok"' in text, component
