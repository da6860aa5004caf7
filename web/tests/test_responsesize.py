"""No answer past `response_bytes` leaves the web process or the webhook listener: a 500 naming the limit
(JSON for the API and the webhooks, a page elsewhere), logged; streamed answers pass."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.test import RequestFactory
from rest_framework.authtoken.models import Token

import limits
from access.models import NamespaceGrant, Role
from dashboard.tests import factories
from hyperparam.models import Trial
from webhooks.tests.conftest import admission_review, tf_job

pytestmark = pytest.mark.django_db

MESSAGE = "The answer would be {size} bytes, more than the limit of {limit} bytes (MAX_RESPONSE_BYTES)."


@pytest.fixture
def editor(django_user_model: Any) -> Any:
    user = django_user_model.objects.create_user("cap-editor")
    NamespaceGrant.objects.create(user=user, namespace="team-a", role=Role.EDITOR)
    return user


def test_an_api_answer_past_the_limit_is_a_500_naming_it_and_logged(
    client: Any, editor: Any, caplog: pytest.LogCaptureFixture
) -> None:
    headers = {"HTTP_AUTHORIZATION": f"Token {Token.objects.create(user=editor).key}"}
    whole = client.get("/api/schema/", **headers)
    assert whole.status_code == 200
    size = len(whole.content)
    with limits.overridden(response_bytes=size):
        assert client.get("/api/schema/", **headers).status_code == 200  # at the limit: sent
    with limits.overridden(response_bytes=size - 1), caplog.at_level(logging.ERROR):
        refused = client.get("/api/schema/", **headers)
    assert refused.status_code == 500
    assert refused["Content-Type"] == "application/json"
    assert refused.json() == {"detail": MESSAGE.format(size=size, limit=size - 1)}
    assert f"refused to send {size} bytes for GET /api/schema/ (status 200)" in caplog.text


def test_a_page_past_the_limit_is_a_page_saying_so_with_the_security_headers(
    client: Any, editor: Any
) -> None:
    client.force_login(editor)
    size = len(client.get("/dashboard/").content)
    with limits.overridden(response_bytes=100):
        refused = client.get("/dashboard/")
    assert refused.status_code == 500
    assert refused["Content-Type"] == "text/html; charset=utf-8"
    assert MESSAGE.format(size=size, limit=100) in refused.content.decode()
    assert "Content-Security-Policy" in refused
    assert refused["X-Content-Type-Options"] == "nosniff"


def test_a_streamed_answer_is_not_held_to_the_limit(client: Any, editor: Any) -> None:
    sweep = factories.sweep()
    Trial.objects.bulk_create(factories.trial_rows(sweep, 100))
    client.force_login(editor)
    with limits.overridden(response_bytes=100):
        response = client.get(f"/dashboard/sweeps/{sweep.pk}/trials.csv")
    assert response.status_code == 200
    assert response.streaming
    assert len(b"".join(response.streaming_content)) > 5000


def test_the_webhook_listener_caps_its_answers_too() -> None:
    from argoml_site.webhook_wsgi import application

    body = json.dumps(admission_review(tf_job())).encode()
    environ = RequestFactory().post("/webhooks/validate", data=body, content_type="application/json").environ
    statuses: list[str] = []
    with limits.overridden(response_bytes=10):
        answer = b"".join(application(environ, lambda status, headers: statuses.append(status)))
    assert statuses[0].startswith("500")
    assert json.loads(answer)["detail"].endswith("more than the limit of 10 bytes (MAX_RESPONSE_BYTES).")
