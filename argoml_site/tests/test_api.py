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


@pytest.mark.parametrize("debug", [False, True], ids=["production", "debug"])
def test_a_path_no_pattern_matches_is_a_json_404_under_api(admin_client, settings, debug):
    settings.DEBUG = debug  # with DEBUG on, Django answers the resolver's 404s with its own HTML page
    for path in ("/api/jobs/0.5/", "/api/tensorboards/abc%2F/open/", "/api/nothing"):
        response = admin_client.get(path)
        assert response.status_code == 404
        assert response.json() == {"detail": "Not found."}
    assert admin_client.get("/dashboard/no-such-page/").headers["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("query", ["page_size=0", "page_size=abc", "phase=", "namespace=Team_A"])
def test_a_list_refuses_what_its_schema_refuses(admin_client, query):
    response = admin_client.get(f"/api/jobs/?{query}")
    assert response.status_code == 400
    assert set(response.json()) == {query.split("=")[0]}


def test_every_operation_documents_the_errors_drf_answers(admin_client):
    schema = admin_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    detail = schema["paths"]["/api/jobs/{id}/"]
    assert {"401", "403", "404", "429"} <= set(detail["get"]["responses"])
    assert {"202", "404", "503"} <= set(detail["delete"]["responses"])
    create = schema["paths"]["/api/jobs/"]["post"]["responses"]
    assert {"202", "400", "403", "413", "415", "503"} <= set(create)
    assert "404" in schema["paths"]["/api/jobs/"]["get"]["responses"]  # an invalid cursor
    assert schema["paths"]["/api/namespaces/"]["get"]["responses"]["200"]["content"]["application/json"][
        "schema"
    ] == {"$ref": "#/components/schemas/NamespaceAccess"}


@pytest.mark.parametrize(
    ("operation", "method", "expected"),
    [
        ({"responses": {}}, "get", {"401", "403", "429"}),
        ({"parameters": [{"in": "query", "name": "cursor"}]}, "get", {"400", "401", "403", "404", "429"}),
        (
            {"parameters": [{"in": "path", "name": "id"}]},
            "delete",
            {"400", "401", "403", "404", "405", "429"},
        ),
        ({"requestBody": {}}, "post", {"400", "401", "403", "405", "413", "415", "429"}),
    ],
)
def test_the_error_answers_follow_what_an_operation_takes(operation, method, expected):
    from web.openapi import answers

    assert set(answers(operation, method)) == expected


def served_schema(client):
    return client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


def test_every_error_answer_documents_its_json_body(admin_client):
    schema = served_schema(admin_client)
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    assert "application/json" in response.get("content", {}), (method, path, status)


def test_a_tensorboard_request_is_one_of_two_shapes_and_required(admin_client):
    schema = served_schema(admin_client)
    body = schema["paths"]["/api/tensorboards/"]["post"]["requestBody"]
    assert body["required"] is True
    assert list(body["content"]) == ["application/json", "application/yaml"]  # never a form
    shapes = schema["components"]["schemas"]["SpawnRequest"]["oneOf"]
    components = [schema["components"]["schemas"][shape["$ref"].rsplit("/", 1)[1]] for shape in shapes]
    assert [sorted(component["required"]) for component in components] == [
        ["namespace", "workflow"],
        ["logdirs", "name", "namespace"],
    ]
    assert components[0]["properties"]["logdirs"]["not"] == {}
    assert components[1]["properties"]["workflow"]["not"] == {}
    assert components[1]["properties"]["logdirs"]["minItems"] == 1
    assert [shape["additionalProperties"] for shape in components] == [False, False], "no field beside them"


def test_the_bodies_checked_beyond_their_schema_say_so_in_the_schema(admin_client):
    schema = served_schema(admin_client)
    marked = {
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if operation.get("x-document-body")
    }
    assert marked == {
        ("POST", "/api/jobs/"),
        ("POST", "/api/hyperparams/"),
        ("POST", "/api/trainjobs/"),
        ("POST", "/api/pipelines/transpile"),
        ("POST", "/api/pipelines/submit"),
    }
    for path in ("/api/jobs/", "/api/hyperparams/", "/api/trainjobs/"):
        assert list(schema["paths"][path]["post"]["requestBody"]["content"]) == [
            "application/json",
            "application/yaml",
        ]


def test_every_string_a_request_carries_refuses_a_nul_character_as_drf_does(admin_client):
    schema = served_schema(admin_client)
    token = schema["components"]["schemas"]["AuthTokenRequest"]["properties"]
    assert token["username"]["pattern"] == token["password"]["pattern"] == "^[^\\u0000]*$"
    assert re.fullmatch(token["username"]["pattern"], "alice")
    assert not re.fullmatch(token["username"]["pattern"], "a\x00")
    response = APIClient().post("/api/token/", {"username": "a\x00", "password": "b"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"username": ["Null characters are not allowed."]}
