"""The TensorBoard proxy (`/tensorboards/<namespace>/<name>/…`): who may read through it, what crosses it
each way, and its bounds. The cluster is kubesim serving `services/<tb>:80/proxy` for real; its stream
backend dials a local HTTP server standing for the TensorBoard pod, which answers with what it received."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.test.utils import override_settings
from django.utils import timezone

import limits
from argoml_site import csp
from kube.client import reset_client
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from kubesim.tests.local_backend import LocalBackend
from tensorboard import manifests, proxy
from tensorboard.conf import TensorboardConf

from . import factories

pytestmark = pytest.mark.django_db

NAMESPACE, NAME = "team-a", "tb1"
BASE = f"/tensorboards/{NAMESPACE}/{NAME}"
BIG = 2000


class FakeTensorBoard(BaseHTTPRequestHandler):
    """Answers `<BASE>/…` with the request it received as JSON, plus what a hostile pod might send back."""

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        if self.path.endswith("/redirect"):
            self._send(302, b"", [("Location", f"{BASE}/")])
            return
        if self.path.endswith("/elsewhere"):
            self._send(302, b"", [("Location", "https://phishing.example/")])
            return
        if self.path.endswith("/big"):
            self._send(200, b"x" * BIG, [("Content-Type", "text/plain")])
            return
        if self.path.endswith("/big-chunked"):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for _ in range(4):
                self.wfile.write(b"%x\r\n%s\r\n" % (BIG // 4, b"y" * (BIG // 4)))
            self.wfile.write(b"0\r\n\r\n")
            return
        seen = {
            "method": self.command,
            "path": self.path,
            "headers": dict(self.headers.items()),
            "body": body,
        }
        extra = [
            ("Set-Cookie", "sessionid=stolen; Path=/"),
            ("Content-Security-Policy", "default-src 'self'"),
            ("Access-Control-Allow-Origin", "*"),
            ("Strict-Transport-Security", "max-age=1"),
        ]
        self._send(200, json.dumps(seen).encode(), [("Content-Type", "application/json"), *extra])

    def _send(self, status: int, data: bytes, headers: list[tuple[str, str]]) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_HEAD = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


def running_tensorboard_pod(sim: Simulator, name: str) -> None:
    """The instance's Service as the controller builds it, and a ready pod it selects."""
    tensorboard = {"metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"}}
    sim.store.create(manifests.build_service(tensorboard, TensorboardConf()))
    pod_name = f"{manifests.child_name(name)}-0"
    ports = [{"name": "http", "containerPort": manifests.PORT}]
    sim.store.create(
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": pod_name, "namespace": NAMESPACE, "labels": manifests.labels(tensorboard)},
         "spec": {"nodeName": "kubesim-node",
                  "containers": [{"name": "tensorboard", "image": "tb", "ports": ports}]}}
    )  # fmt: skip

    def ready(pod: dict[str, Any]) -> dict[str, Any]:
        pod["status"] = {
            "phase": "Running",
            "podIP": "10.244.0.7",
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        return pod

    sim.store.mutate("pods", pod_name, ready, namespace=NAMESPACE, subresource="status")


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulator]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeTensorBoard)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    backend = LocalBackend(Path(tmp_path_factory.mktemp("pod")))
    with running_simulator() as simulator:
        simulator.store.ensure_namespace(NAMESPACE)
        simulator.streams.backend = backend
        running_tensorboard_pod(simulator, NAME)
        backend.ports[(NAMESPACE, f"{manifests.child_name(NAME)}-0", manifests.PORT)] = server.server_address[
            1
        ]
        with override_settings(KUBECONFIG=str(simulator.kubeconfig_path), KUBE_IN_CLUSTER=False):
            reset_client()
            yield simulator
        reset_client()
    server.shutdown()


@pytest.fixture
def instance(sim) -> Any:
    return factories.tensorboard(NAME, NAMESPACE)


def body_of(response: Any) -> bytes:
    return b"".join(response.streaming_content)


def seen_by_pod(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content if hasattr(response, "content") else ""
    seen = json.loads(body_of(response))
    seen["headers"] = {key.lower(): value for key, value in seen["headers"].items()}
    return seen


# -- who may read ----------------------------------------------------------------------------------------
def test_a_viewer_reads_the_instance_through_the_proxy(instance, as_viewer):
    response = as_viewer.get(f"{BASE}/data/runs?experiment=&x=1", HTTP_ACCEPT_LANGUAGE="en")
    seen = seen_by_pod(response)
    assert seen["method"] == "GET"
    assert seen["path"] == f"{BASE}/data/runs?experiment=&x=1"  # TensorBoard's own prefix: relative URLs work
    assert seen["headers"]["accept-language"] == "en"


def test_the_users_cookies_csrf_token_and_credentials_never_reach_the_pod(instance, as_viewer):
    as_viewer.cookies["csrftoken"] = "secret-csrf"
    response = as_viewer.get(
        f"{BASE}/", HTTP_X_CSRFTOKEN="secret-csrf", HTTP_AUTHORIZATION="Token user-token", HTTP_X_CUSTOM="1"
    )
    headers = seen_by_pod(response)["headers"]
    for header in ("cookie", "x-csrftoken", "authorization", "x-custom"):
        assert header not in headers
    assert "sessionid" not in json.dumps(headers)


def test_a_pod_sets_no_cookie_and_grants_nothing_on_our_origin(instance, as_viewer):
    response = as_viewer.get(f"{BASE}/")
    assert response.status_code == 200
    assert "Set-Cookie" not in response
    assert "sessionid" not in response.cookies or response.cookies["sessionid"].value != "stolen"
    assert "Access-Control-Allow-Origin" not in response
    assert response["Content-Security-Policy"] == "default-src 'self'"  # TensorBoard's own, for its pages
    assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize("persona", ["as_outsider", "anonymous"])
def test_anyone_else_gets_no_tensorboard(instance, persona, request):
    client = Client() if persona == "anonymous" else request.getfixturevalue(persona)
    response = client.get(f"{BASE}/data/runs")
    if persona == "anonymous":
        assert response.status_code == 302
        assert response["Location"].startswith("/dashboard/login/?next=")
    else:
        assert response.status_code == 404


def test_an_instance_being_deleted_or_unknown_is_not_found(instance, as_viewer):
    instance.deleted_at = timezone.now()
    instance.save()
    assert as_viewer.get(f"{BASE}/").status_code == 404
    assert as_viewer.get(f"/tensorboards/{NAMESPACE}/never-spawned/").status_code == 404


# -- what crosses -----------------------------------------------------------------------------------------
def test_a_post_from_our_own_pages_passes_with_its_body(instance, as_viewer):
    response = as_viewer.post(
        f"{BASE}/data/plugin/timeseries/timeSeries", "requests=%5B%5D",
        content_type="application/x-www-form-urlencoded", HTTP_ORIGIN="http://testserver",
    )  # fmt: skip
    seen = seen_by_pod(response)
    assert (seen["method"], seen["body"]) == ("POST", "requests=%5B%5D")


@pytest.mark.parametrize("origin", [{"HTTP_ORIGIN": "https://evil.example"}, {}])
def test_a_post_from_another_site_is_refused(instance, as_viewer, origin):
    response = as_viewer.post(f"{BASE}/data/plugin/timeseries/timeSeries", "requests=%5B%5D",
                              content_type="application/x-www-form-urlencoded", **origin)  # fmt: skip
    assert response.status_code == 403


def test_other_methods_and_climbing_paths_are_refused(instance, as_viewer):
    assert as_viewer.put(f"{BASE}/data").status_code == 405
    climbing = as_viewer.get(f"{BASE}/data/../../../../../../../api/v1/namespaces/{NAMESPACE}/secrets")
    assert climbing.status_code == 400


def test_a_redirect_stays_on_our_origin(instance, as_viewer):
    moved = as_viewer.get(f"{BASE}/redirect")
    assert moved.status_code == 302
    assert moved["Location"] == f"{BASE}/"  # the API server's /api/v1/…/proxy prefix taken off again
    elsewhere = as_viewer.get(f"{BASE}/elsewhere")
    assert "Location" not in elsewhere


def test_an_instance_without_a_ready_pod_says_so(sim, as_viewer):
    factories.tensorboard("tb-pending", NAMESPACE, phase="Pending")
    sim.store.create(manifests.build_service(
        {"metadata": {"name": "tb-pending", "namespace": NAMESPACE, "uid": "u2"}}, TensorboardConf()
    ))  # fmt: skip
    response = as_viewer.get(f"/tensorboards/{NAMESPACE}/tb-pending/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    page = response.content.decode()
    assert "still starting" in page
    assert "no endpoints available for service &quot;tb-tb-pending&quot;" in page


# -- bounds ----------------------------------------------------------------------------------------------
def test_an_answer_that_says_it_is_too_large_is_refused_before_a_byte_is_sent(instance, as_viewer):
    with limits.overridden(tensorboard_proxy_bytes=BIG - 1):
        response = as_viewer.get(f"{BASE}/big")
    assert response.status_code == 502
    assert "MAX_TENSORBOARD_PROXY_BYTES" in response.content.decode()


def test_an_answer_that_grows_too_large_is_cut(instance, as_viewer):
    with limits.overridden(tensorboard_proxy_bytes=BIG - 1):
        response = as_viewer.get(f"{BASE}/big-chunked")
        assert response.status_code == 200
        with pytest.raises(proxy.BoundExceeded):
            body_of(response)
    with limits.overridden(tensorboard_proxy_bytes=BIG):
        assert body_of(as_viewer.get(f"{BASE}/big-chunked")) == b"y" * BIG


class _Stream:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.closed = False

    def stream(self, amount: int, decode_content: bool = False) -> Iterator[bytes]:
        yield from self.chunks

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        pass


def test_an_answer_past_its_time_is_cut_and_its_connection_closed():
    now = [0.0]
    stream = _Stream([b"a", b"b", b"c"])
    body = proxy.BoundedBody(stream, proxy.Bounds(100, 10), 10.0, "GET x", clock=lambda: now[0])  # type: ignore[arg-type]
    chunks = iter(body)
    assert next(chunks) == b"a"
    now[0] = 11.0
    with pytest.raises(proxy.BoundExceeded, match="longer than 10 s"):
        next(chunks)
    body.close()
    assert stream.closed


# -- pure parts ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("location", "local"),
    [
        (f"/api/v1/namespaces/team-a/services/tb-x:80/proxy{BASE}/?a=1", f"{BASE}/?a=1"),
        (f"{BASE}/", f"{BASE}/"),
        ("relative", "relative"),
        ("https://elsewhere.example/x", None),
        ("//elsewhere.example/x", None),
        ("http://127.0.0.1:6443/api/v1/namespaces/team-a/services/tb-x:80/proxy/p", "/p"),
    ],
)
def test_a_location_is_made_local_or_dropped(location, local):
    assert proxy.local_location(location, "/api/v1/namespaces/team-a/services/tb-x:80/proxy") == local


@pytest.mark.parametrize("path", ["..", "a/../b", "./x", "a/./b", "a\\..\\b"])
def test_a_path_that_could_climb_is_refused(path):
    with pytest.raises(ValueError, match="segments"):
        proxy.upstream_path(BASE, path)


def test_a_path_is_escaped_again_as_it_was_sent():
    assert proxy.upstream_path(BASE, "data/plugin/x y/é") == f"{BASE}/data/plugin/x%20y/%C3%A9"
    assert proxy.upstream_path(BASE, "") == f"{BASE}/"


def test_form_action_allows_a_tensorboard_base_url_on_another_origin():
    directives = dict(
        part.split(" ", 1) for part in csp.policy(("https://tb.example.com:8443/base",)).split("; ")
    )
    assert directives["form-action"] == "'self' https://tb.example.com:8443"
    assert csp.policy(("",)) == csp.POLICY
    assert csp.policy(("/relative",)) == csp.POLICY


def test_the_open_button_lands_on_the_proxy_when_the_base_url_is_ours(instance, as_viewer, settings, sim):
    """The dev stack's setting: status.url is the proxy on the dashboard's origin."""
    settings.TENSORBOARD_BASE_URL = "http://testserver"
    instance.url = ""
    instance.save()
    from tensorboard.tests.cluster import install_crds

    install_crds(sim)
    sim.store.create(
        {"apiVersion": "argoml.io/v1alpha1", "kind": "Tensorboard",
         "metadata": {"name": NAME, "namespace": NAMESPACE},
         "spec": {"logdirs": [{"name": "run", "path": "s3://bucket/run"}]}}
    )  # fmt: skip
    opened = as_viewer.post(f"/dashboard/tensorboards/{instance.pk}/open/")
    assert opened.status_code == 302
    assert opened["Location"] == f"http://testserver{BASE}/"
    assert seen_by_pod(as_viewer.get(opened["Location"]))["path"] == f"{BASE}/"
