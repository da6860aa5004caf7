"""The TensorBoard proxy (`/tensorboards/<namespace>/<name>/…` on the TensorBoard origin): who may read
through it, what crosses it each way, and its bounds. The cluster is kubesim serving
`services/<tb>:80/proxy` for real; its stream backend dials a local HTTP server standing for the
TensorBoard pod, which answers with what it received. Tickets, passes and the two origins' separation are
in test_tensorboard_origin.py."""

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
from dashboard import tensorboardpass
from kube.client import reset_client
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from kubesim.tests.local_backend import LocalBackend
from tensorboard import manifests, proxy
from tensorboard.spec import Identity
from web import csp

from . import factories

pytestmark = pytest.mark.django_db

NAMESPACE, NAME = "team-a", "tb1"
BASE = f"/tensorboards/{NAMESPACE}/{NAME}"
BIG = 2000
TB_HOST = "tb.testserver"
TB_ORIGIN = f"http://{TB_HOST}"


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
    sim.store.create(manifests.build_service(Identity(name, NAMESPACE, f"uid-{name}")))
    pod_name = f"{manifests.child_name(name)}-0"
    ports = [{"name": "http", "containerPort": manifests.PORT}]
    sim.store.create(
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": pod_name, "namespace": NAMESPACE, "labels": manifests.labels(name)},
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


@pytest.fixture(autouse=True)
def tensorboard_origin(settings) -> None:
    """The TensorBoard origin is another host than the dashboard's (`testserver`)."""
    settings.TENSORBOARD_BASE_URL = TB_ORIGIN
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, TB_HOST]


def tb_client(user: Any = None, namespace: str = NAMESPACE, name: str = NAME) -> Client:
    """A browser on the TensorBoard origin, holding `user`'s pass for `namespace/name` (if a user)."""
    client = Client(HTTP_HOST=TB_HOST)
    if user is not None:
        value = tensorboardpass.issue_pass(tensorboardpass.bearer_of(user), namespace, name)
        client.cookies[tensorboardpass.COOKIE_NAME] = value
    return client


@pytest.fixture
def instance(sim) -> Any:
    return factories.tensorboard(NAME, NAMESPACE)


@pytest.fixture
def tb(viewer) -> Client:
    """The viewer of team-a, with a pass for the instance."""
    return tb_client(viewer)


def body_of(response: Any) -> bytes:
    return b"".join(response.streaming_content)


def seen_by_pod(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content if hasattr(response, "content") else ""
    seen = json.loads(body_of(response))
    seen["headers"] = {key.lower(): value for key, value in seen["headers"].items()}
    return seen


# -- who may read ----------------------------------------------------------------------------------------
def test_a_viewer_reads_the_instance_through_the_proxy(instance, tb):
    response = tb.get(f"{BASE}/data/runs?experiment=&x=1", HTTP_ACCEPT_LANGUAGE="en")
    seen = seen_by_pod(response)
    assert seen["method"] == "GET"
    assert seen["path"] == f"{BASE}/data/runs?experiment=&x=1"  # TensorBoard's own prefix: relative URLs work
    assert seen["headers"]["accept-language"] == "en"


def test_the_users_cookies_csrf_token_and_credentials_never_reach_the_pod(instance, tb):
    tb.cookies["csrftoken"] = "secret-csrf"
    response = tb.get(
        f"{BASE}/", HTTP_X_CSRFTOKEN="secret-csrf", HTTP_AUTHORIZATION="Token user-token", HTTP_X_CUSTOM="1"
    )
    headers = seen_by_pod(response)["headers"]
    for header in ("cookie", "x-csrftoken", "authorization", "x-custom"):
        assert header not in headers
    assert tensorboardpass.COOKIE_NAME not in json.dumps(headers)


def test_a_pod_sets_no_cookie_and_grants_nothing_on_our_origin(instance, tb):
    response = tb.get(f"{BASE}/")
    assert response.status_code == 200
    assert "Set-Cookie" not in response
    assert "sessionid" not in response.cookies or response.cookies["sessionid"].value != "stolen"
    assert "Access-Control-Allow-Origin" not in response
    assert response["Content-Security-Policy"] == "default-src 'self'"  # TensorBoard's own, for its pages
    assert response["Content-Type"] == "application/json"


def test_an_outsiders_pass_gets_no_tensorboard(instance, outsider):
    """A pass names its user; the user's grants decide (an outsider gets no ticket from Open, and a pass
    minted for them all the same reads nothing)."""
    response = tb_client(outsider).get(f"{BASE}/data/runs")
    assert response.status_code == 404
    assert NAME not in response.content.decode()


def test_an_instance_being_deleted_or_unknown_is_not_found(instance, viewer, tb):
    instance.deleted_at = timezone.now()
    instance.save()
    assert tb.get(f"{BASE}/").status_code == 404
    other = tb_client(viewer, name="never-spawned")
    assert other.get(f"/tensorboards/{NAMESPACE}/never-spawned/").status_code == 404


# -- what crosses -----------------------------------------------------------------------------------------
def test_a_post_from_our_own_pages_passes_with_its_body(instance, tb):
    response = tb.post(
        f"{BASE}/data/plugin/timeseries/timeSeries", "requests=%5B%5D",
        content_type="application/x-www-form-urlencoded", HTTP_ORIGIN=TB_ORIGIN,
    )  # fmt: skip
    seen = seen_by_pod(response)
    assert (seen["method"], seen["body"]) == ("POST", "requests=%5B%5D")


@pytest.mark.parametrize(
    "origin", [{"HTTP_ORIGIN": "https://evil.example"}, {"HTTP_ORIGIN": "http://testserver"}, {}]
)
def test_a_post_from_another_origin_is_refused(instance, tb, origin):
    """Another site, and the dashboard's own origin too: a TensorBoard takes its own pages' POSTs only."""
    response = tb.post(f"{BASE}/data/plugin/timeseries/timeSeries", "requests=%5B%5D",
                              content_type="application/x-www-form-urlencoded", **origin)  # fmt: skip
    assert response.status_code == 403


def test_other_methods_and_climbing_paths_are_refused(instance, tb):
    assert tb.put(f"{BASE}/data").status_code == 405
    climbing = tb.get(f"{BASE}/data/../../../../../../../api/v1/namespaces/{NAMESPACE}/secrets")
    assert climbing.status_code == 400


def test_a_redirect_stays_on_our_origin(instance, tb):
    moved = tb.get(f"{BASE}/redirect")
    assert moved.status_code == 302
    assert moved["Location"] == f"{BASE}/"  # the API server's /api/v1/…/proxy prefix taken off again
    elsewhere = tb.get(f"{BASE}/elsewhere")
    assert "Location" not in elsewhere


def test_an_instance_without_a_ready_pod_says_so(sim, viewer):
    factories.tensorboard("tb-pending", NAMESPACE, phase="Pending")
    sim.store.create(manifests.build_service(Identity("tb-pending", NAMESPACE, "u2")))
    response = tb_client(viewer, name="tb-pending").get(f"/tensorboards/{NAMESPACE}/tb-pending/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    page = response.content.decode()
    assert "still starting" in page
    assert "no endpoints available for service &quot;tb-tb-pending&quot;" in page


# -- bounds ----------------------------------------------------------------------------------------------
def test_an_answer_that_says_it_is_too_large_is_refused_before_a_byte_is_sent(instance, tb):
    with limits.overridden(tensorboard_proxy_bytes=BIG - 1):
        response = tb.get(f"{BASE}/big")
    assert response.status_code == 502
    assert "MAX_TENSORBOARD_PROXY_BYTES" in response.content.decode()


def test_an_answer_that_grows_too_large_is_cut(instance, tb):
    with limits.overridden(tensorboard_proxy_bytes=BIG - 1):
        response = tb.get(f"{BASE}/big-chunked")
        assert response.status_code == 200
        with pytest.raises(proxy.BoundExceeded):
            body_of(response)
    with limits.overridden(tensorboard_proxy_bytes=BIG):
        assert body_of(tb.get(f"{BASE}/big-chunked")) == b"y" * BIG


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


def test_open_sends_the_browser_to_the_tensorboard_origin_with_a_ticket_it_trades_for_a_pass(
    instance, as_viewer, sim
):
    """The whole way: Open on the dashboard (a POST with CSRF), a one-time ticket in the redirect, a pass
    scoped to the instance's path on the TensorBoard origin, then TensorBoard itself."""
    from tensorboard.tests.cluster import install_crds

    install_crds(sim)
    sim.store.create(
        {"apiVersion": "argoml.io/v1alpha1", "kind": "Tensorboard",
         "metadata": {"name": NAME, "namespace": NAMESPACE},
         "spec": {"logdirs": [{"name": "run", "path": "s3://bucket/run"}]}}
    )  # fmt: skip
    opened = as_viewer.post(f"/dashboard/tensorboards/{instance.pk}/open/")
    assert opened.status_code == 302
    target = opened["Location"]
    assert target.startswith(f"{TB_ORIGIN}{BASE}/?{tensorboardpass.TICKET_PARAMETER}=")
    browser = Client(HTTP_HOST=TB_HOST)
    traded = browser.get(target.removeprefix(TB_ORIGIN))
    assert traded.status_code == 302
    assert traded["Location"] == f"{BASE}/"  # the ticket dropped
    given = traded.cookies[tensorboardpass.COOKIE_NAME]
    assert (given["path"], given["httponly"], given["samesite"]) == (f"{BASE}/", True, "Lax")
    assert seen_by_pod(browser.get(traded["Location"]))["path"] == f"{BASE}/"
    again = Client(HTTP_HOST=TB_HOST).get(target.removeprefix(TB_ORIGIN))
    assert again.status_code == 403
    assert "used already" in again.content.decode()
