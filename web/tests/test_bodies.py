"""Bodies are bounded before they are read whole: 413 naming the limit in the API, a form error on pages;
the API reads YAML as it reads JSON, through the bounded reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from access.models import NamespaceGrant, Role

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


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
def test_a_document_endpoint_takes_json_or_yaml_only(api, url):
    response = api.post(url, {"namespace": "team-a"})  # multipart, as a form would send it
    assert response.status_code == 415


# --- YAML bodies: every manifest a user has is YAML ---------------------------------------------------

PIPELINE = (REPO / "examples" / "pipeline" / "pipeline.yaml").read_text()
CONFIG = (REPO / "examples" / "pipeline" / "config.yaml").read_text()


def test_a_yaml_body_is_read_as_its_json_twin_is(api):
    request = {"pipeline": yaml.safe_load(PIPELINE), "config": yaml.safe_load(CONFIG)}
    as_json = api.post("/api/pipelines/transpile", json.dumps(request), content_type="application/json")
    text = yaml.safe_dump(request, sort_keys=False)
    as_yaml = api.post("/api/pipelines/transpile", text, content_type="application/yaml")
    assert as_json.status_code == 200, as_json.json()
    assert (as_yaml.status_code, as_yaml.json()) == (200, as_json.json())


def test_a_manifest_as_written_goes_to_the_api_as_yaml_and_is_refused_for_its_fields_not_its_format(api):
    manifest = (REPO / "examples" / "tfjob.yaml").read_text().replace("replicas: 2", "replicas: -2")
    response = api.post("/api/jobs/", manifest, content_type="application/yaml")
    assert response.status_code == 400
    assert "replicas" in json.dumps(response.json())


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("a: [&x " + '"' + "y" * 100 + '"' + ", " + ", ".join(["*x"] * 50_000) + "]", "alias written out"),
        ("a: &l [1, 2]\nb: *l\n", "*l is an alias of a mapping or a sequence"),
        ("a: " + "[" * 50_000 + "]" * 50_000, "more than 100 levels deep (MAX_YAML_DEPTH)"),
        ("a: 1\n---\nb: 2\n", "expected one YAML document, found 2"),
        ("a: [1, 2\n", "not valid YAML: line"),
        ("a: 1e999\nb: !!float 1e999\n", "b: inf is outside the numbers Kubernetes stores"),
    ],
    ids=["scalar-alias-bomb", "collection-alias", "deep", "two-documents", "syntax", "out-of-range"],
)
def test_a_hostile_yaml_body_is_400_naming_the_bound_it_broke(api, body, problem):
    response = api.post("/api/jobs/", body.encode(), content_type="application/yaml")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith("YAML parse error - ")
    assert problem in detail


def test_a_yaml_body_past_the_limit_is_413_and_never_parsed(api, settings, monkeypatch):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    monkeypatch.setattr("workflows.safeyaml.load", lambda *a, **k: pytest.fail("parsed"))
    body = "pipeline: " + "x" * 5000
    response = api.post("/api/pipelines/transpile", body, content_type="application/yaml")
    assert response.status_code == 413
    assert response.json()["detail"] == f"The request body is {len(body)} bytes; the limit is 4096 bytes."


def test_the_schema_offers_yaml_wherever_it_offers_json():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    bodies = {
        f"{method.upper()} {path}": set((operation.get("requestBody") or {}).get("content") or ())
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
    }
    taking_json = {name: types for name, types in bodies.items() if "application/json" in types}
    assert "POST /api/jobs/" in taking_json
    assert [name for name, types in taking_json.items() if "application/yaml" not in types] == []


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
