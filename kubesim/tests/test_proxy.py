"""pods/{name}/proxy and services/{name}/proxy through the real kubectl (`get --raw`, `create --raw`,
`kubectl proxy`) against an HTTPS + RBAC simulator: first with a stream backend that dials a local echo
server standing for the pod, then with the process kubelet and a real `python -m http.server` pod."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from kubesim.processes import ProcessOptions
from kubesim.server.streams.proxy import (
    is_global_unicast,
    rewrite_location,
    service_endpoints,
    split_scheme_name_port,
)
from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL, running_simulator
from kubesim.tests.local_backend import LocalBackend, running_pod

POD_PORT = 8000
SERVICE = "/api/v1/namespaces/default/services"
PODS = "/api/v1/namespaces/default/pods"
RBAC = "rbac.authorization.k8s.io"


# --- pure pieces ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("identifier", "parsed"),
    [
        ("web", ("", "web", "")),
        ("web:80", ("", "web", "80")),
        ("web:http", ("", "web", "http")),
        ("https:web:443", ("https", "web", "443")),
        ("http:web:", ("http", "web", "")),
        (":80", None),
        ("ftp:web:21", None),
        ("a:b:c:d", None),
    ],
)
def test_a_proxy_name_is_split_as_the_api_server_splits_it(identifier, parsed):
    assert split_scheme_name_port(identifier) == parsed


@pytest.mark.parametrize(
    ("ip", "allowed"),
    [("10.244.0.5", True), ("fd00::5", True), ("127.0.0.1", False), ("169.254.1.1", False),
     ("0.0.0.0", False), ("224.0.0.1", False), ("255.255.255.255", False), ("", False),  # noqa: S104
     ("not-an-ip", False)],
)  # fmt: skip
def test_only_a_unicast_pod_address_is_proxied_to(ip, allowed):
    assert is_global_unicast(ip) is allowed


PREFIX = f"{SERVICE}/web:80/proxy"


@pytest.mark.parametrize(
    ("location", "rewritten"),
    [
        ("/target/", f"{PREFIX}/target/"),
        ("/a/../b?x=1#top", f"{PREFIX}/b?x=1#top"),
        ("http://10.244.0.5:8000/login", f"{PREFIX}/login"),  # the pod's own address
        ("https://127.0.0.1:6443/x", f"https://127.0.0.1:6443{PREFIX}/x"),  # the caller's host: kept as is
        ("relative/page", "relative/page"),
        ("https://example.com/elsewhere", "https://example.com/elsewhere"),
        (f"{PREFIX}/already", f"{PREFIX}/already"),
    ],
)
def test_a_location_into_the_pod_is_sent_back_through_the_proxy(location, rewritten):
    assert rewrite_location(location, PREFIX, "10.244.0.5:8000", "127.0.0.1:6443") == rewritten


def _pod(name: str, ready: bool, ports: list[dict[str, Any]], ip: str = "10.244.0.9") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "ports": ports}]},
        "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_a_service_port_resolves_to_each_ready_pods_named_container_port():
    service = {
        "spec": {
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": "web"}, {"name": "raw", "port": 81}],
        }
    }
    pods = [
        _pod("a", True, [{"name": "web", "containerPort": 8000}], "10.244.0.1"),
        _pod("b", True, [{"name": "web", "containerPort": 9000}], "10.244.0.2"),
        _pod("c", False, [{"name": "web", "containerPort": 8000}]),
        _pod("d", True, [], "10.244.0.4"),  # no port of that name: not an endpoint of `http`
    ]
    assert service_endpoints(service, "http", pods) == [("a", "10.244.0.1", 8000), ("b", "10.244.0.2", 9000)]
    assert service_endpoints(service, "raw", pods) == [
        ("a", "10.244.0.1", 81), ("b", "10.244.0.2", 81), ("d", "10.244.0.4", 81)
    ]  # fmt: skip
    assert service_endpoints(service, "", pods) == []
    assert service_endpoints({"spec": {"ports": [{"port": 80}]}}, "", pods) == []  # no selector


# --- through kubectl, a local server standing for the pod ----------------------------------------------


class Echo(BaseHTTPRequestHandler):
    """Answers every request with what it received, as JSON; /redirect answers 302 to /target/."""

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", "/target/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        headers = dict(self.headers.items())
        seen = {"method": self.command, "path": self.path, "headers": headers, "body": body}
        data = json.dumps(seen).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Set-Cookie", "pod=1")
        self.send_header("Access-Control-Allow-Origin", "*")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulator]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    backend = LocalBackend(tmp_path_factory.mktemp("pod"))
    with running_simulator(https=True, auth=True) as simulator:
        simulator.streams.backend = backend
        running_pod(simulator, "web", labels={"app": "web"}, ports=[POD_PORT])
        backend.ports[("default", "web", POD_PORT)] = server.server_address[1]
        simulator.store.create(
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
             "spec": {"selector": {"app": "web"},
                      "ports": [{"name": "http", "port": 80, "targetPort": f"port-{POD_PORT}"}]}}
        )  # fmt: skip
        yield simulator
    server.shutdown()


def kubectl(sim: Simulator, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(sim.kubeconfig_path), *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if check:
        assert result.returncode == 0, result.stderr
    return result


def raw(sim: Simulator, path: str) -> dict[str, Any]:
    return json.loads(kubectl(sim, "get", "--raw", path).stdout)


@pytest.mark.parametrize("name", ["web:80", "web:http", "http:web:80"])
def test_get_raw_reaches_the_pod_through_the_service_by_port_number_or_name(sim, name):
    seen = raw(sim, f"{SERVICE}/{name}/proxy/some/page?x=1&y=two")
    assert seen["method"] == "GET"
    assert seen["path"] == "/some/page?x=1&y=two"
    headers = {key.lower(): value for key, value in seen["headers"].items()}
    assert "authorization" not in headers  # the caller's token stays with the API server
    assert headers["x-forwarded-uri"] == f"{SERVICE}/{name}/proxy/some/page"
    assert headers["x-forwarded-for"] == "127.0.0.1"


def test_get_raw_reaches_the_pod_on_its_first_port_or_the_one_named(sim):
    assert raw(sim, f"{PODS}/web/proxy/")["path"] == "/"
    assert raw(sim, f"{PODS}/web:{POD_PORT}/proxy/a/b/")["path"] == "/a/b/"


def test_a_body_and_the_method_pass_through(sim, tmp_path):
    body = tmp_path / "body.json"
    body.write_text('{"hello": "pod"}')
    created = kubectl(sim, "create", "--raw", f"{SERVICE}/web:80/proxy/submit", "-f", str(body))
    seen = json.loads(created.stdout)
    assert seen["method"] == "POST"
    assert json.loads(seen["body"]) == {"hello": "pod"}
    seen = json.loads(kubectl(sim, "delete", "--raw", f"{PODS}/web:{POD_PORT}/proxy/thing").stdout)
    assert seen["method"] == "DELETE"


@contextmanager
def kubectl_proxy(sim: Simulator, *extra: str) -> Iterator[str]:
    """`kubectl proxy --port=0` running; yields its base URL."""
    process = subprocess.Popen(
        [str(KUBECTL), "--kubeconfig", str(sim.kubeconfig_path), "proxy", "--port=0", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        found = re.search(r"127\.0\.0\.1:(\d+)", process.stdout.readline())
        assert found is not None, process.communicate(timeout=10)
        yield f"http://127.0.0.1:{found.group(1)}"
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_kubectl_proxy_passes_headers_cookies_and_answers_through(sim):
    with kubectl_proxy(sim) as base:
        answer = requests.get(
            f"{base}{SERVICE}/web:http/proxy/page", headers={"X-Custom": "yes", "Cookie": "a=b"}, timeout=30
        )
        assert answer.status_code == 200
        seen = answer.json()
        headers = {key.lower(): value for key, value in seen["headers"].items()}
        assert headers["x-custom"] == "yes"
        assert headers["cookie"] == "a=b"  # the API server forwards cookies: a proxy in front strips them
        assert answer.headers["Set-Cookie"] == "pod=1"
        assert "Access-Control-Allow-Origin" not in answer.headers  # a pod's CORS grant is removed
        assert answer.headers["Content-Type"] == "application/json"
        assert answer.headers["Content-Length"] == str(len(answer.content))  # a known length passes on
        head = requests.head(f"{base}{SERVICE}/web:http/proxy/page", timeout=30)
        assert head.status_code == 200
        assert int(head.headers["Content-Length"]) > 0


def test_redirects_are_rewritten_into_the_proxy(sim):
    with kubectl_proxy(sim) as base:
        moved = requests.get(f"{base}{SERVICE}/web:80/proxy/redirect", allow_redirects=False, timeout=30)
        assert moved.status_code == 302
        assert moved.headers["Location"] == f"{SERVICE}/web:80/proxy/target/"
        bare = requests.get(f"{base}{SERVICE}/web:80/proxy?q=1", allow_redirects=False, timeout=30)
        assert bare.status_code == 301
        assert bare.headers["Location"] == f"{SERVICE}/web:80/proxy/?q=1"


def status_of(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1
    return result.stderr.strip()


def test_unreachable_backends_answer_as_a_cluster_does(sim):
    no_port = status_of(kubectl(sim, "get", "--raw", f"{SERVICE}/web:8080/proxy/", check=False))
    assert no_port == 'Error from server (ServiceUnavailable): no service port 8080 found for service "web"'
    unnamed = status_of(kubectl(sim, "get", "--raw", f"{SERVICE}/web/proxy/", check=False))
    assert unnamed == 'Error from server (ServiceUnavailable): no endpoints available for service "web"'
    closed = status_of(kubectl(sim, "get", "--raw", f"{PODS}/web:9999/proxy/", check=False))
    assert closed == (
        "Error from server (ServiceUnavailable): error trying to reach service: "
        "dial tcp 127.0.0.1:9999: connect: connection refused"  # the local backend's words for its dial
    )
    missing = status_of(kubectl(sim, "get", "--raw", f"{SERVICE}/nothing:80/proxy/", check=False))
    assert missing == 'Error from server (NotFound): services "nothing" not found'
    bad = status_of(kubectl(sim, "get", "--raw", f"{SERVICE}/a:b:c:d/proxy/", check=False))
    assert bad == 'Error from server (BadRequest): invalid service request "a:b:c:d"'


def test_a_pod_without_an_address_is_refused(sim):
    sim.store.create(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending", "namespace": "default"},
         "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}
    )  # fmt: skip
    refused = status_of(kubectl(sim, "get", "--raw", f"{PODS}/pending:80/proxy/", check=False))
    assert refused == "Error from server (BadRequest): address not allowed"


def test_a_scripted_pod_is_unreachable_with_the_api_servers_503():
    """Without a kubelet that runs processes nothing answers on a pod's port: 503 with a Status."""
    with running_simulator() as bare:
        running_pod(bare, "web", labels={"app": "web"}, ports=[POD_PORT])
        answer = requests.get(f"{bare.url}{PODS}/web/proxy/", timeout=30)
    assert answer.status_code == 503
    status = answer.json()
    assert status["kind"] == "Status"
    assert status["reason"] == "ServiceUnavailable"
    assert status["message"].startswith("error trying to reach service: dial tcp 10.244.0.5:8000: connect: ")


def grant(sim: Simulator, user: str, verbs: list[str]) -> None:
    rules = [{"apiGroups": [""], "resources": ["services/proxy"], "verbs": verbs}]
    sim.store.create(
        {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": user, "namespace": "default"},
         "rules": rules}
    )  # fmt: skip
    sim.store.create(
        {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
         "metadata": {"name": user, "namespace": "default"},
         "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": user},
         "subjects": [{"kind": "User", "name": user, "apiGroup": RBAC}]}
    )  # fmt: skip


def test_rbac_checks_services_proxy_with_the_methods_verb(sim, tmp_path):
    grant(sim, "reader", ["get"])
    assert raw_as(sim, "reader", "get", f"{SERVICE}/web:80/proxy/").returncode == 0
    body = tmp_path / "body.json"
    body.write_text("{}")
    refused = status_of(raw_as(sim, "reader", "create", f"{SERVICE}/web:80/proxy/", "-f", str(body)))
    assert refused == (
        'Error from server (Forbidden): services "web:80" is forbidden: User "reader" cannot create resource '
        '"services/proxy" in API group "" in the namespace "default"'
    )
    nobody = status_of(raw_as(sim, "nobody", "get", f"{PODS}/web/proxy/"))
    assert 'cannot get resource "pods/proxy"' in nobody


def raw_as(sim: Simulator, user: str, verb: str, path: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return kubectl(sim, "--as", user, verb, "--raw", path, *extra, check=False)


def test_discovery_lists_the_proxy_subresources(sim):
    listed = {r["name"]: r for r in raw(sim, "/api/v1")["resources"]}
    assert listed["pods/proxy"]["kind"] == "PodProxyOptions"
    assert listed["services/proxy"]["kind"] == "ServiceProxyOptions"
    assert listed["services/proxy"]["verbs"] == ["create", "delete", "get", "patch", "update"]


# --- the process kubelet: a real pod's server ---------------------------------------------------------


@pytest.fixture(scope="module")
def process_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulator]:
    root = tmp_path_factory.mktemp("proxy-processes")
    options = ProcessOptions(root=root / "pods", image_map=root / "image-map.yaml", base=Path.cwd())
    os.environ["KUBECACHEDIR"] = str(root / "kubectl-cache")
    with running_simulator(kubelet=True, https=True, auth=True, processes=options) as simulator:
        assert simulator.kubelet.processes is not None, "the process kubelet did not start"
        yield simulator


SERVED = """
import http.server, os
os.makedirs("/tmp/site", exist_ok=True)
open("/tmp/site/index.html", "w").write("<h1>served by a real pod</h1>")
os.chdir("/tmp/site")
http.server.ThreadingHTTPServer(("", 8080), http.server.SimpleHTTPRequestHandler).serve_forever()
"""


def test_a_real_pods_server_is_reached_through_get_raw_and_kubectl_proxy(process_cluster):
    sim = process_cluster
    manifest = {
        "apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "site", "labels": {"app": "site"}},
             "spec": {"containers": [{
                 "name": "main", "image": "python:3.11", "command": ["python", "-c", SERVED],
                 "ports": [{"name": "http", "containerPort": 8080}],
                 "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1}}]}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "site"},
             "spec": {"selector": {"app": "site"},
                      "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}},
        ],
    }  # fmt: skip
    subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(sim.kubeconfig_path), "-n", "default", "apply", "-f", "-"],
        input=json.dumps(manifest), text=True, check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    kubectl(sim, "-n", "default", "wait", "--for=condition=Ready", "pod/site", "--timeout=90s")
    page = kubectl(sim, "get", "--raw", f"{SERVICE}/site:80/proxy/index.html").stdout
    assert page == "<h1>served by a real pod</h1>"
    with kubectl_proxy(sim) as base:
        listing = requests.get(f"{base}{SERVICE}/site:web/proxy/", timeout=30)
        direct = requests.get(f"{base}{PODS}/site:8080/proxy/index.html", timeout=30)
    assert listing.status_code == 200
    assert listing.text == "<h1>served by a real pod</h1>"  # its index.html, for /
    assert direct.text == "<h1>served by a real pod</h1>"
