"""PostgreSQL unreachable: every page and API call that needs it answers 503 with Retry-After and a sentence
saying so, never a 500 with a traceback's worth of nothing; the liveness probe still answers, readiness
names the database. The request thread's connection points at a closed port (the server refuses it, as a
PostgreSQL that is down or restarting does); the test's data stays in the real database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.db import InterfaceError, connection
from django.test import Client
from rest_framework.authtoken.models import Token

from argoml_site.views import DATABASE_UNAVAILABLE, server_error

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = ["/dashboard/", "/dashboard/jobs/", "/admin/", "/api/docs/"]
API = ["/api/jobs/", "/api/namespaces/", "/api/"]


@pytest.fixture
def signed_in() -> Client:
    user = get_user_model().objects.create_superuser("db-away-admin", password="x-unused")
    client = Client(headers={"Authorization": f"Token {Token.objects.create(user=user).key}"},
                    raise_request_exception=False)  # fmt: skip
    client.force_login(user)
    return client


@pytest.fixture
def database_away(settings) -> Iterator[None]:
    if connection.vendor != "postgresql":
        pytest.skip("a database server that goes away: PostgreSQL (SQLite is a file in the process)")
    settings.KUBECONFIG = ""
    real = connection.settings_dict
    connection.close()
    connection.settings_dict = {**real, "PORT": "1"}
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict = real


@pytest.mark.parametrize("path", PAGES)
def test_a_page_answers_503_saying_the_database_is_away(signed_in, database_away, path):
    response = signed_in.get(path)
    assert response.status_code == 503, response.content[:500]
    assert response["Retry-After"] == "30"
    assert "The database is unavailable at the moment" in response.content.decode()


@pytest.mark.parametrize("path", API)
def test_an_api_call_answers_503_in_json_saying_the_database_is_away(signed_in, database_away, path):
    response = signed_in.get(path)
    assert response.status_code == 503, response.content[:500]
    assert response.json() == {"detail": DATABASE_UNAVAILABLE}


def test_signing_in_answers_503_too(database_away):
    response = Client(raise_request_exception=False).post(
        "/dashboard/login/", {"username": "someone", "password": "x"}
    )
    assert response.status_code == 503


def test_the_probes_say_alive_but_not_ready(database_away):
    client = Client(raise_request_exception=False)
    assert client.get("/healthz").status_code == 200
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["failed"] == ["database"]


def test_a_bug_is_still_a_500(rf):
    request = rf.get("/api/jobs/")
    try:
        raise ZeroDivisionError("a bug")
    except ZeroDivisionError:
        response = server_error(request)
    assert response.status_code == 500


def test_a_dropped_connection_is_a_503_like_a_refused_one(rf):
    request = rf.get("/dashboard/")
    try:
        raise InterfaceError("connection already closed")
    except InterfaceError:
        response = server_error(request)
    assert response.status_code == 503
