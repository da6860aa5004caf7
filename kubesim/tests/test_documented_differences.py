"""Every difference from a real API server that docs/kubesim.md lists, run as the scenario it describes.

Each test carries the id of the difference it checks (`@documents("D-…")`) and asserts the simulator still
behaves as documented, so a difference that gets fixed fails here and must leave the list. The meta-test at
the end keeps the two in step. These run against the simulator only: they describe where it is not a cluster.
"""

from __future__ import annotations

import base64
import inspect
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest
import requests

from kubesim.__main__ import _arguments
from kubesim.kubelet import rollout
from kubesim.processes import ProcessOptions
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from kubesim.tests import protobuf_wire as wire
from kubesim.tests.local_backend import LocalBackend, running_pod
from kubesim.tests.webhook_server import WebhookServer, make_certificates, running_webhook_server

DOC = Path(__file__).resolve().parents[2] / "docs" / "kubesim.md"
ID_PATTERN = re.compile(r"^- `(D-[a-z0-9-]+)` — ", re.MULTILINE)
DOCUMENTED: dict[str, str] = {}  # id → test name, filled by @documents

Test = TypeVar("Test", bound=Callable[..., Any])


def documents(difference: str) -> Callable[[Test], Test]:
    """Mark a test as the scenario of one documented difference."""

    def mark(test: Test) -> Test:
        assert difference not in DOCUMENTED, f"{difference} has two scenario tests"
        DOCUMENTED[difference] = test.__name__
        return test

    return mark


Http = Callable[..., requests.Response]


def http_for(sim: Simulator) -> Http:
    def call(method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, sim.url + path, timeout=10, **kwargs)

    return call


@pytest.fixture
def sim(kubesim: Simulator) -> Simulator:
    return kubesim


@pytest.fixture
def http(sim: Simulator) -> Http:
    return http_for(sim)


@pytest.fixture
def running(kubesim_factory: Callable[..., Simulator]) -> Simulator:
    """A simulator with the kubelet and its controllers on a frozen clock (tests move time)."""
    return kubesim_factory(frozen_clock=True, kubelet=True)


def created(response: requests.Response) -> dict[str, Any]:
    assert response.status_code == 201, response.text
    return dict(response.json())


def pod(name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", **spec.pop("container", {})}
    return {"metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def merge(http: Http, path: str, patch: dict[str, Any]) -> requests.Response:
    return http("PATCH", path, json=patch, headers={"Content-Type": "application/merge-patch+json"})


def phase(sim: Simulator, name: str, namespace: str = "default") -> str:
    return str((sim.store.get("pods", name, namespace).get("status") or {}).get("phase"))


PODS = "/api/v1/namespaces/default/pods"


# --- the API server -----------------------------------------------------------------------------------


@documents("D-loopback-only")
def test_it_listens_on_loopback_only(sim: Simulator) -> None:
    assert sim.server.address.startswith("127.0.0.1:")
    assert "host" not in inspect.signature(Simulator).parameters
    with pytest.raises(SystemExit):
        _arguments(["--kubeconfig", "k", "--host", "192.0.2.1"])


@documents("D-plain-http-from-python")
def test_from_python_it_is_plain_http_and_open(http: Http) -> None:
    created(http("POST", "/api/v1/namespaces/default/secrets", json={"metadata": {"name": "s"}}))
    assert http("GET", "/api/v1/namespaces/default/secrets/s").status_code == 200


@documents("D-authenticators")
def test_a_token_signed_by_anyone_else_is_unauthorized(kubesim_factory: Callable[..., Simulator]) -> None:
    sim = kubesim_factory(https=True, auth=True)
    foreign = ".".join(
        base64.urlsafe_b64encode(json.dumps(part).encode()).decode().rstrip("=")
        for part in ({"alg": "RS256", "typ": "JWT"}, {"iss": "https://accounts.example.com", "sub": "alice"})
    )
    foreign += ".c2lnbmF0dXJl"  # an OIDC provider's ID token, as far as the simulator can tell
    response = requests.get(
        f"{sim.url}/api",
        headers={"Authorization": f"Bearer {foreign}"},
        verify=str(sim.security.ca_path),
        timeout=10,
    )
    assert response.status_code == 401


@documents("D-legacy-tokens-need-auth")
def test_without_auth_a_service_account_token_secret_gets_no_token(sim: Simulator, http: Http) -> None:
    secret = {
        "metadata": {"name": "legacy", "annotations": {"kubernetes.io/service-account.name": "default"}},
        "type": "kubernetes.io/service-account-token",
    }
    created(http("POST", "/api/v1/namespaces/default/secrets", json=secret))
    assert sim.store.wait_idle()
    assert "token" not in (http("GET", "/api/v1/namespaces/default/secrets/legacy").json().get("data") or {})


@documents("D-no-audit-log")
def test_pod_security_audit_mode_has_no_visible_effect(http: Http) -> None:
    labels = {"pod-security.kubernetes.io/audit": "restricted"}
    created(http("POST", "/api/v1/namespaces", json={"metadata": {"name": "audited", "labels": labels}}))
    response = http("POST", "/api/v1/namespaces/audited/pods", json=pod("root"))
    assert created(response)["metadata"].get("annotations") is None
    assert "warning" not in {k.lower() for k in response.headers}


@documents("D-access-review-attributes")
def test_access_reviews_ignore_extra_and_selectors(kubesim_factory: Callable[..., Simulator]) -> None:
    sim = kubesim_factory(https=True, auth=True)
    path = f"{sim.url}/apis/authorization.k8s.io/v1/subjectaccessreviews"
    headers = {"Authorization": f"Bearer {sim.security.admin_token}"}
    attributes = {"verb": "list", "resource": "pods", "namespace": "default"}

    def allowed(**extra: Any) -> bool:
        spec = {"user": "alice", "resourceAttributes": {**attributes, **extra.pop("attributes", {})}, **extra}
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        answer = requests.post(
            path, json=review, headers=headers, verify=str(sim.security.ca_path), timeout=10
        )
        return bool(answer.json()["status"]["allowed"])

    sim.store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "alice-views", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}],
        }
    )
    assert allowed()
    assert allowed(extra={"scopes": ["none"]})
    assert allowed(attributes={"fieldSelector": {"rawSelector": "metadata.name=x"}})
    assert allowed(attributes={"labelSelector": {"rawSelector": "a=b"}})


@documents("D-bootstrap-abridged")
def test_component_bootstrap_roles_do_not_exist(kubesim_factory: Callable[..., Simulator]) -> None:
    sim = kubesim_factory(https=True, auth=True)
    roles = "rbac.authorization.k8s.io"
    assert sim.store.exists(f"clusterroles.{roles}", "cluster-admin")
    assert sim.store.exists(f"clusterroles.{roles}", "system:basic-user")
    assert not sim.store.exists(f"clusterroles.{roles}", "system:kube-controller-manager")
    assert not sim.store.exists(f"clusterroles.{roles}", "system:node")


@documents("D-psa-versions")
def test_pod_security_versions_only_change_the_message(http: Http) -> None:
    labels = {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": "v1.22",
    }
    created(http("POST", "/api/v1/namespaces", json={"metadata": {"name": "old", "labels": labels}}))
    labels["pod-security.kubernetes.io/enforce-version"] = "latest"
    created(http("POST", "/api/v1/namespaces", json={"metadata": {"name": "new", "labels": labels}}))
    old = http("POST", "/api/v1/namespaces/old/pods", json=pod("p")).json()["message"]
    new = http("POST", "/api/v1/namespaces/new/pods", json=pod("p")).json()["message"]
    assert 'violates PodSecurity "restricted:v1.22"' in old
    assert old.replace("v1.22", "latest") == new


@documents("D-no-cbor")
def test_cbor_bodies_are_unsupported(http: Http) -> None:
    response = http(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        data=b"\xa0",
        headers={"Content-Type": "application/cbor"},
    )
    assert response.status_code == 415


@documents("D-protobuf-kinds")
def test_protobuf_crds_and_unknown_field_numbers_are_refused(http: Http) -> None:
    """A CRD sent as protobuf is a 415 offering JSON and YAML; a field number the decoding table lacks is
    a 400 naming it (the apiserver would skip it)."""
    crd = wire.envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", b"")
    response = http(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        data=crd,
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    )
    assert response.status_code == 415
    assert "accepted media types include: application/json, application/yaml;" in response.json()["message"]
    config_map = wire.envelope("v1", "ConfigMap", wire.field(9, 1))
    response = http(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        data=config_map,
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    )
    assert response.status_code == 400
    assert "field 9 of k8s.io.api.core.v1.ConfigMap" in response.json()["message"]


@documents("D-pod-validation-subset")
def test_a_pod_with_an_unknown_affinity_operator_is_accepted(http: Http) -> None:
    term = {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "near"},
        "spec": {
            "containers": [{"name": "main", "image": "busybox"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                }
            },
        },
    }
    assert http("POST", "/api/v1/namespaces/default/pods", json=pod).status_code == 201


def _crd(versions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.kubesim.test"},
        "spec": {
            "group": "kubesim.test",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": versions,
        },
    }


def _version(name: str, spec: dict[str, Any], storage: bool = True) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"spec": {"type": "object", **spec}}}
    return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": schema}}


@documents("D-crd-no-conversion")
def test_every_crd_version_serves_the_stored_object(http: Http) -> None:
    loose = {"x-kubernetes-preserve-unknown-fields": True}
    created(
        http(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            json=_crd([_version("v1", loose), _version("v2", loose, False)]),
        )
    )
    gadget = {
        "apiVersion": "kubesim.test/v1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {"size": 3},
    }
    created(http("POST", "/apis/kubesim.test/v1/namespaces/default/gadgets", json=gadget))
    seen = http("GET", "/apis/kubesim.test/v2/namespaces/default/gadgets/g").json()
    assert seen["apiVersion"] == "kubesim.test/v2"
    assert seen["spec"] == {"size": 3}


@documents("D-crd-no-cel")
def test_crd_cel_rules_are_not_evaluated(http: Http) -> None:
    rules = {
        "properties": {"size": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.size < 10", "message": "too big"}],
    }
    created(
        http(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            json=_crd([_version("v1", rules)]),
        )
    )
    gadget = {
        "apiVersion": "kubesim.test/v1",
        "kind": "Gadget",
        "metadata": {"name": "big"},
        "spec": {"size": 99},
    }
    created(http("POST", "/apis/kubesim.test/v1/namespaces/default/gadgets", json=gadget))


@documents("D-crd-no-format")
def test_crd_formats_are_not_checked(http: Http) -> None:
    formats = {"properties": {"when": {"type": "string", "format": "date-time"}}}
    created(
        http(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            json=_crd([_version("v1", formats)]),
        )
    )
    gadget = {
        "apiVersion": "kubesim.test/v1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {"when": "soon"},
    }
    created(http("POST", "/apis/kubesim.test/v1/namespaces/default/gadgets", json=gadget))


def _deployment(name: str = "web", replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "web:1"}]},
            },
        },
    }


DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


@documents("D-hpa-v1-apply")
def test_apply_through_autoscaling_v1_answers_415(http: Http) -> None:
    hpa = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3},
    }
    path = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
    created(http("POST", path, json=hpa))
    response = http(
        "PATCH",
        f"{path}/web?fieldManager=me",
        data=json.dumps(hpa),
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert response.status_code == 415


@documents("D-scale-no-apply")
def test_scale_refuses_apply_patches(http: Http) -> None:
    created(http("POST", DEPLOYMENTS, json=_deployment()))
    scale = {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2},
    }
    response = http(
        "PATCH",
        f"{DEPLOYMENTS}/web/scale?fieldManager=me",
        data=json.dumps(scale),
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert response.status_code == 415


@documents("D-ssa-simplified")
def test_the_creator_owns_the_status_the_server_set(http: Http) -> None:
    made = created(http("POST", f"{PODS}?fieldManager=alice", json=pod("p")))
    (entry,) = made["metadata"]["managedFields"]
    assert entry["manager"] == "alice"
    assert "f:phase" in entry["fieldsV1"]["f:status"]


@documents("D-continue-current-state")
def test_a_later_page_shows_objects_created_after_the_first(http: Http) -> None:
    for name in ("a", "c"):
        created(http("POST", "/api/v1/namespaces/default/configmaps", json={"metadata": {"name": name}}))
    first = http("GET", "/api/v1/namespaces/default/configmaps?limit=1").json()
    created(http("POST", "/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "b"}}))
    token = first["metadata"]["continue"]
    rest = http("GET", f"/api/v1/namespaces/default/configmaps?limit=10&continue={token}").json()
    names = [item["metadata"]["name"] for item in first["items"] + rest["items"]]
    assert "b" in names


@documents("D-resource-version-match")
def test_an_exact_resource_version_still_lists_the_latest_state(http: Http) -> None:
    before = http("GET", "/api/v1/namespaces/default/configmaps").json()["metadata"]["resourceVersion"]
    created(http("POST", "/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "later"}}))
    exact = http(
        "GET", f"/api/v1/namespaces/default/configmaps?resourceVersion={before}&resourceVersionMatch=Exact"
    )
    assert exact.status_code == 200
    assert "later" in [item["metadata"]["name"] for item in exact.json()["items"]]


@documents("D-gc-synchronous")
def test_a_namespace_and_a_bound_pod_go_at_once(http: Http) -> None:
    created(http("POST", "/api/v1/namespaces", json={"metadata": {"name": "gone"}}))
    created(http("POST", "/api/v1/namespaces/gone/configmaps", json={"metadata": {"name": "x"}}))
    deleted = http("DELETE", "/api/v1/namespaces/gone").json()
    assert deleted["status"]["phase"] == "Terminating"
    assert http("GET", "/api/v1/namespaces/gone").status_code == 404
    created(http("POST", PODS, json=pod("bound", nodeName="kubesim-node")))
    http("DELETE", f"{PODS}/bound")
    assert http("GET", f"{PODS}/bound").status_code == 404


@documents("D-events-core-apply")
def test_apply_through_the_core_event_view_is_unsupported(http: Http) -> None:
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "reason": "Test"}
    response = http(
        "PATCH",
        "/api/v1/namespaces/default/events/e?fieldManager=me",
        data=json.dumps(event),
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert response.status_code == 415


@documents("D-no-builtin-controllers")
def test_stored_workloads_run_nothing(running: Simulator) -> None:
    http = http_for(running)
    template = {"metadata": {"labels": {"app": "ds"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    service = {"metadata": {"name": "svc"}, "spec": {"selector": {"app": "ds"}, "ports": [{"port": 80}]}}
    created(http("POST", "/api/v1/namespaces/default/services", json=service))
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    created(http("POST", "/api/v1/namespaces/default/persistentvolumeclaims", json=claim))
    daemons = {"selector": {"matchLabels": {"app": "ds"}}, "template": template}
    created(
        http(
            "POST",
            "/apis/apps/v1/namespaces/default/daemonsets",
            json={"metadata": {"name": "ds"}, "spec": daemons},
        )
    )
    sets = {"selector": {"matchLabels": {"app": "ds"}}, "serviceName": "svc", "template": template}
    created(
        http(
            "POST",
            "/apis/apps/v1/namespaces/default/statefulsets",
            json={"metadata": {"name": "sts"}, "spec": sets},
        )
    )
    job_template = {
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}
    }
    cron = {"schedule": "* * * * *", "jobTemplate": {"spec": job_template}}
    created(
        http(
            "POST",
            "/apis/batch/v1/namespaces/default/cronjobs",
            json={"metadata": {"name": "cj"}, "spec": cron},
        )
    )
    running.advance(180)
    assert running.store.list("pods", "default", label_selector="app=ds")["items"] == []
    assert running.store.list("jobs.batch", "default")["items"] == []
    assert running.store.list("endpoints", "default")["items"] == []
    assert running.store.list("endpointslices.discovery.k8s.io", "default")["items"] == []
    assert running.store.get("persistentvolumeclaims", "data", "default").get("status") is None


@documents("D-policies-not-enforced")
def test_a_quota_of_no_pods_admits_a_pod(http: Http) -> None:
    quota = {"metadata": {"name": "none"}, "spec": {"hard": {"pods": "0"}}}
    created(http("POST", "/api/v1/namespaces/default/resourcequotas", json=quota))
    created(http("POST", PODS, json=pod("p")))


@documents("D-eviction-admission")
def test_an_eviction_reaches_admission_only_as_the_pods_deletion(running: Simulator) -> None:
    seen: list[tuple[str, str, str]] = []
    running.store.add_admission(lambda r: seen.append((r.operation, r.resource.key, r.subresource)))
    http = http_for(running)
    created(http("POST", PODS, json=pod("p")))
    assert running.run_until(lambda: phase(running, "p") == "Running", within=60)
    seen.clear()
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}}
    assert http("POST", f"{PODS}/p/eviction", json=eviction).status_code == 201
    assert ("DELETE", "pods", "") in seen
    assert not [request for request in seen if request[2] == "eviction"]


@documents("D-no-streams")
def test_exec_answers_400_naming_the_simulator(http: Http) -> None:
    created(http("POST", PODS, json=pod("p")))
    response = http("POST", f"{PODS}/p/exec?command=ls&container=main")
    assert response.status_code == 400
    assert "not supported by the simulator (kubesim)" in response.json()["message"]


@documents("D-stream-protocols")
def test_channel_protocols_older_than_v4_are_refused(sim: Simulator, http: Http, tmp_path: Path) -> None:
    sim.streams.backend = LocalBackend(tmp_path)
    running_pod(sim, "shell")
    exec_path = f"{PODS}/shell/exec?command=true&stdout=1"
    websocket = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13"}
    key = base64.b64encode(b"sixteen byte key").decode()
    for old in ("channel.k8s.io", "base64.channel.k8s.io", "v4.base64.channel.k8s.io"):
        answer = http(
            "GET", exec_path, headers={**websocket, "Sec-WebSocket-Key": key, "Sec-WebSocket-Protocol": old}
        )
        assert answer.status_code == 400
        assert answer.json()["message"].startswith(f"requested protocol(s) are not supported: [{old}]")
    spdy = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1", "X-Stream-Protocol-Version": "v3.channel.k8s.io"}
    answer = http("POST", exec_path, headers=spdy)
    assert answer.status_code == 403
    assert "unable to negotiate protocol: client supports [v3.channel.k8s.io]" in answer.json()["message"]


class _LinkPage(BaseHTTPRequestHandler):
    """A pod's page with an absolute link, as an API server would rewrite it."""

    def do_GET(self) -> None:
        page = b'<a href="/next/">next</a>'
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def proxied(sim: Simulator, tmp_path: Path) -> Iterator[Http]:
    """A pod `web` whose port 8000 serves `_LinkPage`, reached through pods/web/proxy."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _LinkPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    backend = LocalBackend(tmp_path)
    backend.ports[("default", "web", 8000)] = server.server_address[1]
    sim.streams.backend = backend
    running_pod(sim, "web", ports=[8000])
    yield http_for(sim)
    server.shutdown()


@documents("D-proxy-html-links")
def test_proxied_html_keeps_its_absolute_links(proxied: Http) -> None:
    answer = proxied("GET", "/api/v1/namespaces/default/pods/web/proxy/")
    assert answer.status_code == 200
    assert answer.text == '<a href="/next/">next</a>'  # a cluster: href="/api/v1/namespaces/…/proxy/next/"


@documents("D-no-node-proxy")
def test_nodes_have_no_proxy_subresource(http: Http) -> None:
    assert http("GET", "/api/v1/nodes/kubesim-node/proxy/").status_code == 404


@documents("D-proxy-no-upgrade")
def test_an_upgrade_through_the_proxy_is_refused(proxied: Http) -> None:
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket"}
    answer = proxied("GET", "/api/v1/namespaces/default/pods/web/proxy/", headers=upgrade)
    assert answer.status_code == 400
    assert answer.json()["message"] == "kubesim does not proxy Upgrade requests (docs/kubesim.md)"


@documents("D-static-nodes")
def test_nodes_never_heartbeat_again_nor_carry_taints(running: Simulator) -> None:
    node = running.store.get("nodes", "kubesim-node")
    running.store.patch("nodes", "kubesim-node", {"spec": {"unschedulable": True}})  # kubectl cordon
    running.advance(3600)
    later = running.store.get("nodes", "kubesim-node")
    assert later["status"]["conditions"] == node["status"]["conditions"]
    assert "taints" not in (later.get("spec") or {})
    ready = {c["type"]: c["status"] for c in later["status"]["conditions"]}
    assert ready["Ready"] == "True"


@documents("D-no-aggregated-discovery")
def test_discovery_answers_the_legacy_document(http: Http) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    answer = http("GET", "/apis", headers={"Accept": accept}).json()
    assert answer["kind"] == "APIGroupList"


# --- the simulated controllers ----------------------------------------------------------------------------


@documents("D-kubelet-no-probes")
def test_a_container_whose_probe_would_fail_is_ready(running: Simulator) -> None:
    probe = {"exec": {"command": ["false"]}, "periodSeconds": 1}
    running.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            **pod("p", restartPolicy="Always", container={"readinessProbe": probe}),
        }
    )
    assert running.run_until(lambda: phase(running, "p") == "Running", within=60)
    running.advance(30)
    conditions = {
        c["type"]: c["status"] for c in running.store.get("pods", "p", "default")["status"]["conditions"]
    }
    assert conditions["Ready"] == "True"


@documents("D-kubelet-no-scheduling")
def test_a_pod_nothing_could_hold_runs(running: Simulator) -> None:
    huge = {"resources": {"requests": {"cpu": "1000"}}}
    running.store.create(
        {"apiVersion": "v1", "kind": "Pod", **pod("huge", container=huge, nodeSelector={"gpu": "h100"})}
    )
    assert running.run_until(lambda: phase(running, "huge") in ("Running", "Succeeded"), within=60)


@documents("D-controllers-no-events")
def test_running_pods_and_jobs_record_no_events(running: Simulator) -> None:
    running.store.create({"apiVersion": "v1", "kind": "Pod", **pod("p", restartPolicy="Never")})
    assert running.run_until(lambda: phase(running, "p") == "Succeeded", within=60)
    assert running.store.list("events.events.k8s.io", "default")["items"] == []


@documents("D-kubelet-restore-restarts")
def test_a_restored_running_pod_starts_its_containers_again(tmp_path: Path) -> None:
    def started() -> str:
        status = sim.store.get("pods", "server", "default")["status"]["containerStatuses"][0]
        return str((status["state"].get("running") or {}).get("startedAt"))

    with running_simulator(frozen_clock=True, kubelet=True, state_dir=tmp_path) as sim:
        sim.store.create({"apiVersion": "v1", "kind": "Pod", **pod("server", restartPolicy="Always")})
        assert sim.run_until(lambda: phase(sim, "server") == "Running", within=60)
        first = started()
    later = datetime(2030, 1, 1, tzinfo=UTC)
    with running_simulator(frozen_clock=True, kubelet=True, state_dir=tmp_path, start_time=later) as sim:
        assert sim.run_until(lambda: phase(sim, "server") == "Running" and started() != "None", within=60)
        assert started() != first


@documents("D-kubelet-no-ephemeral")
def test_an_ephemeral_container_is_never_started(running: Simulator) -> None:
    http = http_for(running)
    created(http("POST", PODS, json=pod("p", restartPolicy="Always")))
    assert running.run_until(lambda: phase(running, "p") == "Running", within=60)
    debugger = {"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}}
    response = http(
        "PATCH",
        f"{PODS}/p/ephemeralcontainers",
        data=json.dumps(debugger),
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert response.status_code == 200, response.text
    running.advance(60)
    assert "ephemeralContainerStatuses" not in running.store.get("pods", "p", "default")["status"]


@documents("D-template-hash")
def test_the_pod_template_hash_hashes_the_templates_json(running: Simulator) -> None:
    created(http_for(running)("POST", DEPLOYMENTS, json=_deployment()))
    running.store.wait_idle()
    web = running.store.get("deployments.apps", "web", "default")
    (replica_set,) = running.store.list("replicasets.apps", "default")["items"]
    assert replica_set["metadata"]["name"] == f"web-{rollout.template_hash(web['spec']['template'])}"


@documents("D-jobs-subset")
def test_a_finished_job_with_a_ttl_stays(running: Simulator) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once"},
        "spec": {
            "ttlSecondsAfterFinished": 0,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "i"}]}},
        },
    }
    running.store.create(job)

    def done() -> bool:
        status = running.store.get("jobs.batch", "once", "default").get("status") or {}
        return any(c["type"] == "Complete" for c in status.get("conditions") or [])

    assert running.run_until(done, within=120)
    running.advance(60)
    assert running.store.exists("jobs.batch", "once", "default")


@documents("D-argo-subset")
def test_a_resource_template_is_an_invalid_spec(kubesim_factory: Callable[..., Simulator]) -> None:
    sim = kubesim_factory(frozen_clock=True, argo=True)
    workflow = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "wf"},
        "spec": {
            "entrypoint": "make",
            "templates": [{"name": "make", "resource": {"action": "create", "manifest": "{}"}}],
        },
    }
    sim.store.create(workflow)

    def status() -> dict[str, Any]:
        return dict(sim.store.get("workflows.argoproj.io", "wf", "default").get("status") or {})

    assert sim.run_until(lambda: status().get("phase") == "Error", within=60)
    assert status()["message"].startswith("invalid spec: ")


@pytest.fixture
def hooks() -> Iterator[WebhookServer]:
    with running_webhook_server(make_certificates("hooks.kst.svc", "localhost")) as server:
        yield server


@documents("D-webhooks-subset")
def test_webhook_warnings_are_not_returned(http: Http, hooks: WebhookServer) -> None:
    hooks.answer("/validate", lambda request: {"allowed": True, "warnings": ["careful"]})
    webhook = {
        "name": "warn.kst.argoml.io",
        "clientConfig": {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle},
        "rules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    configuration = {"metadata": {"name": "warn"}, "webhooks": [webhook]}
    created(
        http(
            "POST",
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            json=configuration,
        )
    )
    response = http("POST", PODS, json=pod("p"))
    created(response)
    assert len(hooks.requests_to("/validate")) == 1
    assert "warning" not in {k.lower() for k in response.headers}


@documents("D-controller-identity")
def test_webhooks_see_the_simulators_own_writes_as_the_fixed_user(
    http: Http, hooks: WebhookServer, sim: Simulator
) -> None:
    hooks.answer("/validate", lambda request: {"allowed": True})
    webhook = {
        "name": "who.kst.argoml.io",
        "clientConfig": {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle},
        "rules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    configuration = {"metadata": {"name": "who"}, "webhooks": [webhook]}
    created(
        http(
            "POST",
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            json=configuration,
        )
    )
    sim.store.create({"apiVersion": "v1", "kind": "Pod", **pod("made-by-a-controller")})
    (review,) = hooks.requests_to("/validate")
    assert review["userInfo"] == {
        "username": "kubernetes-admin",
        "groups": ["system:masters", "system:authenticated"],
    }


@documents("D-process-pods")
def test_process_pods_run_as_the_invoking_user_and_their_config_files_are_written_once(
    tmp_path: Path,
) -> None:
    options = ProcessOptions(root=tmp_path / "pods", image_map=tmp_path / "image-map.yaml", base=Path.cwd())
    with running_simulator(kubelet=True, processes=options) as sim:
        sim.store.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "1"}}
        )
        watcher = pod(
            "as-user",
            securityContext={"runAsUser": 4242},
            volumes=[{"name": "cm", "configMap": {"name": "cm"}}],
        )
        watcher["spec"]["containers"][0].update(
            image="busybox",
            command=["sh", "-c", "id -u; sleep 3; cat /etc/cm/k"],
            volumeMounts=[{"name": "cm", "mountPath": "/etc/cm"}],
        )
        watcher["spec"]["restartPolicy"] = "Never"
        sim.store.create({"apiVersion": "v1", "kind": "Pod", **watcher})
        logs = sim.kubelet.logs
        deadline = time.monotonic() + 30
        while "\n" not in logs.text("default", "as-user", "main") and time.monotonic() < deadline:
            time.sleep(0.1)
        configmaps = sim.store.resource("configmaps")
        sim.store.mutate(configmaps, "cm", lambda cm: {**cm, "data": {"k": "2"}}, namespace="default")
        while (sim.store.get("pods", "as-user", "default").get("status") or {}).get("phase") != "Succeeded":
            assert time.monotonic() < deadline, logs.text("default", "as-user", "main")
            time.sleep(0.1)
        assert logs.text("default", "as-user", "main").split() == [str(os.getuid()), "1"]


# --- the list and the tests stay in step ------------------------------------------------------------------


def test_every_documented_difference_has_a_scenario_and_every_scenario_is_documented() -> None:
    listed = ID_PATTERN.findall(DOC.read_text())
    assert len(listed) == len(set(listed)), "an id is listed twice in docs/kubesim.md"
    assert sorted(set(listed) - set(DOCUMENTED)) == [], "documented differences without a scenario test"
    assert sorted(set(DOCUMENTED) - set(listed)) == [], (
        "scenario tests naming an id docs/kubesim.md does not list"
    )


def test_the_meta_test_reads_ids_only_from_list_items() -> None:
    text = "- `D-one` — a difference\n  - `D-nested` — not top-level\nSee `D-two` — prose.\n- `D-three` — x"
    assert ID_PATTERN.findall(text) == ["D-one", "D-three"]
