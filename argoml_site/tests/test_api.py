"""The REST API needs authentication and documents itself without the network."""

import re

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_an_anonymous_request_gets_no_data():
    response = APIClient().get("/api/namespaces/")
    assert response.status_code == 401
    assert "namespaces" not in response.json()


def test_a_bad_token_is_rejected():
    response = APIClient().get("/api/namespaces/", HTTP_AUTHORIZATION="Token not-a-token")
    assert response.status_code == 401


def test_a_token_authenticates(django_user_model):
    user = django_user_model.objects.create_user("alice", password="pw-alice-123")
    token = Token.objects.create(user=user)
    response = APIClient().get("/api/namespaces/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 200
    assert response.json() == {"everywhere": False, "namespaces": []}


def test_a_session_authenticates(client, django_user_model):
    django_user_model.objects.create_user("bob", password="pw-bob-123")
    assert client.login(username="bob", password="pw-bob-123")
    assert client.get("/api/namespaces/").status_code == 200


def test_the_openapi_schema_describes_the_api(admin_client):
    response = admin_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["info"]["title"] == "Argo-ML API"
    assert "/api/namespaces/" in schema["paths"]
    assert not [path for path in schema["paths"] if not path.startswith("/api/")]


def test_swagger_ui_loads_its_assets_from_our_own_static_files(admin_client):
    response = admin_client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    asset_urls = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any("drf_spectacular_sidecar/swagger-ui-dist" in url for url in asset_urls)
    assert not [url for url in asset_urls if url.startswith(("http://", "https://", "//"))]
