"""Bodies are bounded before they are read whole: 413 naming the limit in the API, a form error on pages."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from access.models import NamespaceGrant, Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(django_user_model):
    """An editor of some namespace: pipeline transpile refuses anyone else before reading the body."""
    user = django_user_model.objects.create_user("someone")
    NamespaceGrant.objects.create(user=user, namespace="team-a", role=Role.EDITOR)
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize(
    "url", ["/api/pipelines/transpile", "/api/jobs/", "/api/tensorboards/", "/api/token/"]
)
def test_an_api_body_past_the_limit_is_413_naming_it_and_is_never_parsed(api, settings, monkeypatch, url):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    monkeypatch.setattr("workflows.safeyaml.load_json", lambda *a, **k: pytest.fail("parsed"))
    body = json.dumps({"pipeline": "x" * 5000, "config": {}})
    response = api.post(url, body, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["detail"] == f"The request body is {len(body)} bytes; the limit is 4096 bytes."


def test_an_api_body_within_the_limit_is_parsed(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    response = api.post("/api/pipelines/transpile", {"pipeline": 7}, format="json")
    assert response.status_code == 400  # read, and found wanting: not a 413


@pytest.mark.parametrize("url", ["/api/jobs/", "/api/tensorboards/", "/api/hyperparams/"])
def test_an_api_body_nested_past_the_depth_bound_is_400_naming_it(api, url):
    body = '{"namespace": "team-a", "spec": ' + "[" * 50_000 + "]" * 50_000 + "}"
    response = api.post(url, body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"] == (
        "JSON parse error - line 1: the JSON nests objects and arrays more than 100 levels deep "
        "(MAX_YAML_DEPTH)"
    )


def test_an_api_body_that_is_not_json_is_400(api):
    for body, problem in [
        (b"{not json", "not valid JSON: line 1: Expecting property name enclosed in double"),
        (b"\xff", "the body is not utf-8 text"),
        (b'{"a": NaN}', "not valid JSON: NaN is not a JSON value"),
    ]:
        response = api.post("/api/jobs/", body, content_type="application/json")
        assert response.status_code == 400
        assert response.json()["detail"].startswith(f"JSON parse error - {problem}")


def test_a_form_body_past_the_limit_is_413_in_the_api_too(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    response = api.post("/api/token/", {"username": "x" * 5000, "password": "y"})
    assert response.status_code == 413


@pytest.mark.parametrize("url", ["/api/jobs/", "/api/hyperparams/", "/api/trainjobs/", "/api/tensorboards/"])
def test_a_document_endpoint_takes_json_only(api, url):
    response = api.post(url, {"namespace": "team-a"})  # multipart, as a form would send it
    assert response.status_code == 415


def test_an_upload_past_the_limit_is_a_form_error_naming_it(client, django_user_model, settings):
    settings.MAX_UPLOAD_BYTES = 2048
    client.force_login(django_user_model.objects.create_user("uploader"))
    upload = SimpleUploadedFile("big.yaml", b"a: b\n" * 100_000, content_type="text/yaml")
    body = {"manifest": "", "upload": upload, "action": "preview"}
    response = client.post(reverse("dashboard:submit"), body)
    assert response.status_code == 413
    assert response.context["form"].errors["upload"] == [
        "big.yaml is larger than the upload limit of 2048 bytes"
    ]


def test_pasted_text_past_the_limit_is_a_form_error(client, django_user_model, settings):
    settings.MAX_UPLOAD_BYTES = 2048
    client.force_login(django_user_model.objects.create_user("paster"))
    response = client.post(reverse("dashboard:submit"), {"manifest": "a: b\n" * 1000, "action": "preview"})
    assert response.status_code == 400
    assert "at most 2048 characters" in response.context["form"].errors["manifest"][0]


def test_too_many_query_parameters_are_400_naming_the_bound_in_the_api(api, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    response = api.get("/api/jobs/?" + "&".join(["name=a"] * 11))
    assert response.status_code == 400
    assert "DATA_UPLOAD_MAX_NUMBER_FIELDS" in response.json()["detail"]


def test_too_many_query_parameters_are_400_naming_the_bound_on_a_page(client, django_user_model, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    client.force_login(django_user_model.objects.create_user("many-parameters"))
    response = client.get(reverse("dashboard:jobs") + "?" + "&".join(["name=a"] * 11))
    assert response.status_code == 400
    assert b"DATA_UPLOAD_MAX_NUMBER_FIELDS" in response.content
