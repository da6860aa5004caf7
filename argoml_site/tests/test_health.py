"""Probes: /healthz says the process lives; /readyz says which dependency is down."""

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


def test_healthz_answers_without_checking_dependencies(client):
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_is_ok_when_postgresql_and_redis_answer(client, settings):
    settings.KUBECONFIG = ""
    settings.KUBE_IN_CLUSTER = False
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "redis": "ok"}


def test_readyz_stays_ready_but_degraded_naming_redis_when_redis_is_down_and_logs_the_detail(
    client, settings, caplog
):
    """Without Redis the processes still serve (only a few counts are lost): failing the probe would take
    every replica out of its Service at once."""
    settings.KUBECONFIG = ""
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded"
    assert body["failed"] == ["redis"]
    assert body["checks"] == {"database": "ok", "redis": "failed"}
    assert "ConnectionError" in caplog.text
    assert "127.0.0.1:1" in caplog.text


def test_readyz_tells_anyone_which_check_failed_but_not_the_error(client, settings):
    """PostgreSQL's errors name the host and the user; an anonymous caller must not read them."""
    settings.KUBECONFIG = ""
    settings.REDIS_URL = "redis://secret-user:secret-password@127.0.0.1:1/0"
    response = client.get("/readyz")
    assert response.json()["failed"] == ["redis"]
    assert b"secret" not in response.content
    assert b"127.0.0.1" not in response.content
    assert b"Error" not in response.content


def test_readyz_checks_the_cluster_once_one_is_configured(client, settings, tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""
    )
    settings.KUBECONFIG = str(kubeconfig)
    response = client.get("/readyz")
    assert response.status_code == 200  # the pages need no cluster; its actions say it is unreachable
    assert response.json()["status"] == "degraded"
    assert response.json()["failed"] == ["cluster"]


def test_readyz_is_503_when_the_database_is_down(client, settings, monkeypatch):
    from argoml_site import views

    def unreachable() -> None:
        raise OSError("connection refused")

    settings.KUBECONFIG = ""
    monkeypatch.setattr(views, "_database_ready", unreachable)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"
    assert response.json()["failed"] == ["database"]


SCRAPER = {"HTTP_AUTHORIZATION": "Bearer scrape-token-1"}


@pytest.fixture(autouse=True)
def _metrics_token(settings):
    settings.METRICS_TOKEN = "scrape-token-1"


def test_metrics_are_served_in_the_prometheus_text_format(client):
    response = client.get("/metrics", HTTP_ACCEPT="text/plain;version=0.0.4", **SCRAPER)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    assert b"python_info" in response.content


def test_metrics_speak_openmetrics_to_a_scraper_that_asks_for_it(client):
    response = client.get("/metrics", HTTP_ACCEPT="application/openmetrics-text; version=1.0.0", **SCRAPER)
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.rstrip().endswith(b"# EOF")


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", "Basic scrape-token-1", "scrape-token-1"])
def test_metrics_refuse_a_caller_without_the_token(client, authorization):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    response = client.get("/metrics", **headers)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"python_info" not in response.content


def test_metrics_let_a_staff_session_in_but_not_another_user(client, django_user_model):
    user = django_user_model.objects.create_user("sam", password="a-long-password-1")
    client.force_login(user)
    assert client.get("/metrics").status_code == 401
    user.is_staff = True
    user.save()
    assert client.get("/metrics").status_code == 200


def test_without_a_configured_token_no_bearer_gets_in(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
