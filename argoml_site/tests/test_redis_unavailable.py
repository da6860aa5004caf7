"""Every entry point with Redis away: each URL pattern of the web server (walked by `endpoints`, as the
tenant suite walks them) and of the webhook listener is asked, GET and POST, with Redis refusing
connections. The web needs Redis for nothing but counts (the API throttles, the sign-in lockout), which
fail open: so every answer must be the very one given with Redis up, and never a 500. A new endpoint that
needs Redis fails here. A Redis that accepts connections and never answers (a paused server) costs one
request its timeout, then is skipped for a while.

The webhook listener answers admission reviews and the TrainJob progress reports of a real pod (kubesim
with authentication) without Redis too.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client
from rest_framework.authtoken.models import Token

import kube.client
from kube import versioned
from trainer.progress import server as progress_server
from trainer.tests import progress
from web import redis_outage

from . import endpoints
from .test_tenant_isolation import Seed, path_values, seed

pytestmark = pytest.mark.django_db

#: The slowest an answer may be with a Redis that never answers: the first request pays a client timeout
#: (0.5 s, twice at most) and later ones skip Redis for a while (web/redis_outage.py).
ANSWER_WITHIN_SECONDS = 3.0
RATES = {
    "API_THROTTLE_ANON": "1000/minute",
    "API_THROTTLE_USER": "1000/minute",
    "API_THROTTLE_TOKEN": "1000/minute",
}
LOCKOUT = {"SIGNIN_LOCKOUT_FAILURES": 5, "SIGNIN_LOCKOUT_ADDRESS_FAILURES": 20}
METHODS = ("GET", "POST")
REAL_REDIS_URL = django_settings.REDIS_URL


class SilentServer:
    """A TCP server that accepts connections and never answers: a Redis paused with SIGSTOP."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(64)
        self.port = self.socket.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def close(self) -> None:
        self.socket.close()
        for connection in self.accepted:
            connection.close()


@pytest.fixture(scope="module")
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker) -> Iterator[Seed]:
    """Tenant A's rows (the tenant suite's seed) and a superuser who may call everything, rolled back."""
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            world = seed()
            user = get_user_model().objects.create_superuser("redis-away-admin", password="x-unused")
            client = Client(
                headers={"Authorization": f"Token {Token.objects.create(user=user).key}"},
                raise_request_exception=False,
            )
            client.force_login(user)
            world.objects["clients"]["admin"] = client
            world.objects["admin"] = user
            yield world
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


def redis_at(settings: Any, url: str) -> None:
    """Point every use of Redis in this process at `url`, with the counts that fail open switched on, and
    forget earlier failures, so the next request meets the Redis at `url` itself."""
    redis_outage.forget()
    settings.REDIS_URL = url
    settings.CACHES = {
        "default": {**django_settings.CACHES["default"], "LOCATION": url},
    }
    for name, value in {**RATES, **LOCKOUT}.items():
        setattr(settings, name, value)
    versioned._redis_client = None  # the version reader's pool, made again on first use


@pytest.fixture
def no_cluster(settings) -> None:
    settings.KUBECONFIG = ""
    settings.KUBE_IN_CLUSTER = False
    kube.client.reset_client()


@pytest.fixture
def redis_away(settings, no_cluster) -> Iterator[str]:
    """The URL of a Redis that refuses connections (stopped, restarting); the real one again afterwards."""
    yield "redis://127.0.0.1:1/0"
    redis_at(settings, REAL_REDIS_URL)
    versioned._redis_client = None


def web_cases() -> Iterator[Any]:
    for endpoint in endpoints.endpoints():
        rule = endpoints.classify(endpoint)
        if rule.kind is not endpoints.Kind.NOT_ON_WEB:
            yield pytest.param(endpoint, rule, id=endpoint.route)


def path_for(
    endpoint: endpoints.Endpoint, rule: endpoints.Rule, world: Seed, urlconf: str | None = None
) -> str:
    return endpoints.concrete_path(endpoint, path_values(endpoint, rule, world, "pk"), urlconf)


def answer(client: Client, method: str, path: str) -> tuple[int, str, float]:
    started = time.monotonic()
    response = client.generic(method, path, "{}", content_type="application/json")
    seconds = time.monotonic() - started
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, body.decode("utf-8", "replace"), seconds


@pytest.mark.parametrize(("endpoint", "rule"), web_cases())
def test_every_web_endpoint_answers_as_it_does_with_redis_up(endpoint, rule, world, settings, redis_away):
    client = world.objects["clients"]["admin"]
    path = path_for(endpoint, rule, world)
    for method in METHODS:
        redis_at(settings, REAL_REDIS_URL)
        client.force_login(world.objects["admin"])  # signing out is an endpoint too
        up, _, _ = answer(client, method, path)
        redis_at(settings, redis_away)
        client.force_login(world.objects["admin"])
        away, body, seconds = answer(client, method, path)
        assert away != 500, f"{method} {path} with Redis away: 500\n{body[:2000]}"
        assert away == up, f"{method} {path}: {up} with Redis up, {away} with Redis away: {body[:500]}"
        assert seconds < ANSWER_WITHIN_SECONDS, f"{method} {path} took {seconds:.1f} s with Redis away"


def test_sign_in_and_the_token_endpoint_work_with_redis_away(settings, redis_away):
    """The lockout fails open: a good password signs in, a wrong one is refused, nothing is a 500."""
    get_user_model().objects.create_user("lena-away", password="correct horse battery")
    redis_at(settings, redis_away)
    client = Client(raise_request_exception=False)
    wrong = client.post("/dashboard/login/", {"username": "lena-away", "password": "wrong"})
    assert wrong.status_code == 200  # the form again, with its error
    right = client.post("/dashboard/login/", {"username": "lena-away", "password": "correct horse battery"})
    assert right.status_code == 302
    token = Client(raise_request_exception=False).post(
        "/api/token/", {"username": "lena-away", "password": "correct horse battery"}
    )
    assert token.status_code == 200, token.content


def test_a_redis_that_never_answers_costs_one_request_its_timeout(
    world, settings, no_cluster, silent_server, caplog
):
    client = world.objects["clients"]["admin"]
    client.force_login(world.objects["admin"])  # the endpoint walk before may have signed it out
    redis_at(settings, f"redis://127.0.0.1:{silent_server.port}/0")
    for path in ("/api/namespaces/", "/api/jobs/", "/dashboard/", "/api/namespaces/"):
        code, body, seconds = answer(client, "GET", path)
        assert code == 200, body[:500]
        assert seconds < ANSWER_WITHIN_SECONDS
    waits = [record for record in caplog.records if "Redis did not answer" in record.getMessage()]
    assert len(waits) == 1  # the first request waited for its timeout; later ones skipped Redis


def test_a_sign_in_with_a_redis_that_never_answers_is_answered_in_bounded_time(
    settings, no_cluster, silent_server
):
    get_user_model().objects.create_user("lena-silent", password="correct horse battery")
    redis_at(settings, f"redis://127.0.0.1:{silent_server.port}/0")
    started = time.monotonic()
    response = Client(raise_request_exception=False).post(
        "/dashboard/login/", {"username": "lena-silent", "password": "correct horse battery"}
    )
    assert response.status_code == 302
    assert time.monotonic() - started < ANSWER_WITHIN_SECONDS


# --- the webhook listener -----------------------------------------------------------------------------


def tf_job_review() -> dict[str, Any]:
    gvk = {"group": "argoml.io", "version": "v1alpha1", "kind": "TFJob"}
    container = {"name": "tensorflow", "image": "example/train:1"}
    job = {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "mnist", "namespace": "ml"},
        "spec": {
            "tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [container]}}}}
        },
    }
    request = {
        "uid": "705ab4f5-6393-11e8-b7cc-000000000001",
        "kind": gvk,
        "resource": {"group": "argoml.io", "version": "v1alpha1", "resource": "tfjobs"},
        "requestKind": gvk,
        "name": "mnist",
        "namespace": "ml",
        "operation": "CREATE",
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": job,
        "oldObject": None,
        "dryRun": False,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


@pytest.mark.urls("argoml_site.webhook_urls")
@pytest.mark.parametrize("webhook", ["/webhooks/validate", "/webhooks/mutate"])
@pytest.mark.parametrize("away", ["refused", "silent"])
def test_the_webhook_listener_answers_admission_reviews_with_redis_away(
    webhook, away, settings, redis_away, silent_server
):
    redis_at(settings, redis_away if away == "refused" else f"redis://127.0.0.1:{silent_server.port}/0")
    started = time.monotonic()
    response = Client(raise_request_exception=False).post(
        webhook, json.dumps(tf_job_review()), content_type="application/json"
    )
    assert time.monotonic() - started < ANSWER_WITHIN_SECONDS
    assert response.status_code == 200, response.content
    verdict = response.json()["response"]
    assert verdict["uid"] == "705ab4f5-6393-11e8-b7cc-000000000001"
    assert verdict["allowed"] is True, verdict


@pytest.mark.urls("argoml_site.webhook_urls")
def test_the_listeners_probes_say_ready_but_degraded_with_redis_away(settings, redis_away):
    redis_at(settings, redis_away)
    client = Client(raise_request_exception=False)
    assert client.get("/healthz").status_code == 200
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "degraded"
    assert ready.json()["failed"] == ["redis"]


@pytest.mark.urls("argoml_site.webhook_urls")
def test_a_trainjob_pod_reports_its_progress_with_redis_away(kubesim_factory, settings, redis_away):
    """The report limit is counted in Redis and fails open (the API server's own limits still hold)."""
    simulator = kubesim_factory(auth=True)
    settings.KUBECONFIG = str(simulator.kubeconfig_path)
    kube.client.reset_client()
    try:
        namespace = progress.prepare(simulator)
        _, [pod] = progress.train_job(namespace, "zq-progress")
        token = progress.job_token(namespace, "zq-progress", pod["metadata"]["name"])
        redis_at(settings, redis_away)
        body = json.dumps(
            {"trainerStatus": {"progressPercentage": 40, "lastUpdatedTime": "2026-06-12T03:00:00Z"}}
        )
        response = Client(raise_request_exception=False).post(
            progress_server.status_path(namespace, "zq-progress"),
            body,
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.content
        assert response.json()["trainerStatus"]["progressPercentage"] == 40
    finally:
        kube.client.reset_client()
