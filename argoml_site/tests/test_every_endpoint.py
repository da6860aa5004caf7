"""Every page, every API operation and every admin page answers with data present, on every database.

Issue 29: `make run` uses SQLite and the suite ran on PostgreSQL only, so the dev stack served 500s no test
had seen (a query SQLite cannot run). Here the URLconf is walked (`endpoints`), the OpenAPI schema the API
serves is read (`hostile.doors.operations`) and the admin's registry is listed; each is sent the request a
person would send — a read, a form's post, an operation with an example's manifest — by the persona that may
send it, while one of everything is in the database (`hostile/world.py`, and a row of every model the admin
shows) and kubesim is the cluster. Each must answer with the success its kind promises, never a 5xx; a new
endpoint is visited the moment it exists. `make test` runs this module on PostgreSQL and on SQLite
(docs/testing.md, "Two databases").
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from django.contrib import admin
from django.contrib.auth.models import Group
from django.db import models
from django.test import Client
from django_celery_beat.models import (
    ClockedSchedule,
    CrontabSchedule,
    IntervalSchedule,
    PeriodicTask,
    SolarSchedule,
)
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authtoken.models import Token

from access.models import NamespacePodSecurity
from garbage.models import GCDeletion, GCNamespacePolicy
from hyperparam.models import Trial
from kube.client import get_client
from kube.errors import Conflict
from kube.resources import WORKFLOW as WORKFLOW_RESOURCE
from tensorboard.actions import TENSORBOARD_RESOURCE as TENSORBOARD
from tensorboard.tests.workflows import mnist_workflow
from webhooks.models import InjectionRule

from . import endpoints
from .endpoints import Endpoint, Kind
from .hostile import cluster as hostile_cluster
from .hostile import corpus, doors, world

pytestmark = pytest.mark.django_db

NAMESPACE = world.NAMESPACE
PASSWORD = "a-long-password-for-every-endpoint"
#: The seeded sweep's Workflow, in the cluster as Argo leaves it: its TensorBoard artifacts open one.
WORKFLOW = "hostile-workflow"
SCHEMA = SchemaGenerator().get_schema(request=None, public=True)


def _example(relative: str) -> dict[str, Any]:
    return yaml.safe_load((corpus.EXAMPLES / relative).read_text())


def _pipeline_request() -> dict[str, Any]:
    return {
        "pipeline": _example("pipeline/pipeline.yaml"),
        "config": _example("pipeline/config.yaml"),
        "namespace": NAMESPACE,
    }


#: The body each operation that takes one is sent: the examples a user applies, as the API takes them.
BODIES: dict[str, Any] = {
    "POST /api/jobs/": lambda rows: _example("tfjob.yaml"),
    "POST /api/hyperparams/": lambda rows: _example("hyperparam-grid.yaml"),
    "POST /api/trainjobs/": lambda rows: _example("trainjob-torch.yaml"),
    "POST /api/tensorboards/": lambda rows: {"namespace": NAMESPACE, "workflow": WORKFLOW},
    "POST /api/pipelines/transpile": lambda rows: _pipeline_request(),
    "POST /api/pipelines/submit": lambda rows: _pipeline_request(),
    "POST /api/token/": lambda rows: {"username": rows["editor"].username, "password": PASSWORD},
}  # fmt: skip


@dataclass(frozen=True)
class Visit:
    """What the persona sends to an endpoint of a kind, and the answers that are its success."""

    method: str
    answers: frozenset[int]
    shows_data: bool = False  # the answer names a seeded row


def _visit(method: str, *answers: int, shows_data: bool = False) -> Visit:
    return Visit(method, frozenset(answers), shows_data)


#: Every kind of endpoint of the web URLconf but the admin's (a page of its own below) and the API
#: operations that take a body (sent with the operations below).
VISITS: dict[Kind, Visit] = {
    Kind.PUBLIC: _visit("GET", 200),
    Kind.LOGIN: _visit("GET", 200, 302),  # a signed-in user may be sent on
    Kind.ASSET: _visit("GET", 200),
    Kind.SIGN_OUT: _visit("POST", 200, 302),
    Kind.SELF: _visit("GET", 200, shows_data=True),
    Kind.SIGNED_IN: _visit("GET", 200, 302),  # the site's root sends a person on to the dashboard
    Kind.OPERATOR: _visit("GET", 200),
    Kind.OVERVIEW: _visit("GET", 200, shows_data=True),
    Kind.LIST: _visit("GET", 200, shows_data=True),
    Kind.CREATE_LIST: _visit("GET", 200, shows_data=True),
    Kind.OBJECT: _visit("GET", 200, shows_data=True),
    Kind.BY_NAME: _visit("GET", 302),
    Kind.EXPORT: _visit("GET", 200, shows_data=True),
    Kind.PLOT: _visit("GET", 200),
    Kind.LOGS: _visit("GET", 200),
    Kind.ACTION: _visit("POST", 302),  # done, or refused by the cluster: a message on the row's page
    Kind.READ_ACTION: _visit("POST", 200, 302),
    Kind.SUBMIT_FORM: _visit("GET", 200),
}
#: Kinds whose endpoints are API operations with a body: `test_every_api_operation...` sends them.
OPERATION_KINDS = (Kind.TOKEN, Kind.SUBMIT, Kind.EDITOR_WORK)


# --- the world: one of everything, a superuser, and kubesim as the cluster --------------------------------


@pytest.fixture(scope="module")
def rows(django_db_setup: None, django_db_blocker: Any) -> Iterator[dict[str, Any]]:
    with hostile_cluster.separate_simulator(NAMESPACE), world.seeded(django_db_blocker) as seeded:
        seeded.update(_admin_rows(seeded))
        get_client().create(WORKFLOW_RESOURCE, mnist_workflow(WORKFLOW))
        yield seeded


def _admin_rows(seeded: dict[str, Any]) -> dict[str, Any]:
    """A row of every model the admin shows that the world has none of, and a superuser to see them."""
    from django.contrib.auth import get_user_model

    superuser = get_user_model().objects.create_superuser("every-endpoint-admin", password=PASSWORD)
    seeded["editor"].set_password(PASSWORD)
    seeded["editor"].save()
    Token.objects.create(user=seeded["editor"])
    Group.objects.create(name="every-endpoint-group")
    interval = IntervalSchedule.objects.create(every=10, period=IntervalSchedule.MINUTES)
    PeriodicTask.objects.create(name="every-endpoint-task", task="garbage.collect", interval=interval)
    CrontabSchedule.objects.create(minute="5")
    SolarSchedule.objects.create(event="sunrise", latitude="52.5", longitude="13.4")
    ClockedSchedule.objects.create(clocked_time="2026-06-01T08:00:00Z")
    NamespacePodSecurity.objects.create(namespace=NAMESPACE, level="baseline")
    GCNamespacePolicy.objects.create(namespace=NAMESPACE, succeeded_retention_seconds=3600)
    InjectionRule.objects.create(name="every-endpoint-rule", namespaces=[NAMESPACE])
    return {"superuser": superuser}


@pytest.fixture
def tensorboard_in_cluster(rows: dict[str, Any]) -> None:
    """The seeded TensorBoard in the cluster too (an earlier stop or delete took it away), to be opened."""
    with contextlib.suppress(Conflict):
        get_client().create(TENSORBOARD, corpus.documents()["Tensorboard"].base)


@pytest.fixture
def editor(rows: dict[str, Any], tensorboard_in_cluster: None) -> Client:
    """The world's editor of team-a (a staff user): signed in on the pages, by token on the API."""
    client = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user=rows['editor']).key}")
    client.force_login(rows["editor"])
    return client


@pytest.fixture
def superuser(rows: dict[str, Any]) -> Client:
    client = Client()
    client.force_login(rows["superuser"])
    return client


def markers(rows: dict[str, Any]) -> set[str]:
    """What of the seeded rows a page or an operation lists: names, uids, the trials' Workflows, the pods a
    GC run deleted, and the namespace the editor may use."""
    found = {
        str(value) for row in rows.values() for attribute in ("name", "uid")
        if (value := getattr(row, attribute, None))
    }  # fmt: skip
    found |= set(Trial.objects.values_list("workflow", flat=True))
    found |= set(GCDeletion.objects.values_list("name", flat=True))
    return found | {NAMESPACE}


def shows_data(rows: dict[str, Any], response: Any) -> bool:
    return bool(markers(rows) & set(re.findall(r"[\w.-]+", body_of(response))))


def body_of(response: Any) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode("utf-8", "replace")


# --- the web URLconf -----------------------------------------------------------------------------------


def page_cases() -> Iterator[Any]:
    for endpoint in endpoints.endpoints():
        rule = endpoints.classify(endpoint)
        if rule.kind in (Kind.ADMIN, Kind.NOT_ON_WEB) or endpoint.route.startswith(endpoints.ADMIN_PREFIX):
            continue  # the admin: below; the webhook listener's own: not served here
        yield pytest.param(endpoint, id=endpoint.route)


def page_path(endpoint: Endpoint, rows: dict[str, Any]) -> str:
    rule = endpoints.classify(endpoint)
    values = world.path_values(rows, rule.target)
    values["format"] = ".json" if "<drf_format_suffix" in endpoint.route else "json"
    if endpoint.key == "dashboard:vendored":
        values["name"] = "htmx.min.js"
    return endpoints.concrete_path(endpoint, values)


def schema_operations() -> dict[str, doors.Operation]:
    return {operation.name: operation for operation in doors.operations(SCHEMA)}


@pytest.mark.parametrize("endpoint", list(page_cases()))
def test_every_url_pattern_answers_with_data_present(rows, editor, endpoint):
    rule = endpoints.classify(endpoint)
    if rule.kind in OPERATION_KINDS:  # its operation is sent below; it must be one the schema serves
        route = "/" + endpoints.template(endpoint.route).replace("{pk}", "{id}")
        assert any(name.endswith(f" {route}") for name in schema_operations()), route
        return
    visit = VISITS[rule.kind]
    path = page_path(endpoint, rows)
    client = Client() if rule.kind == Kind.SIGN_OUT else editor  # signing out ends a session of its own
    if rule.kind == Kind.SIGN_OUT:
        client.force_login(rows["editor"])
    response = client.generic(visit.method, path)
    assert response.status_code in visit.answers, f"{visit.method} {path}: {response.status_code}"
    if visit.method == "GET" and response.status_code == 302:  # where it sends a person answers too
        response = client.get(response.headers["Location"])
        assert response.status_code == 200, response.status_code
    if visit.shows_data:
        assert shows_data(rows, response), f"{path} shows no seeded row"


# --- the REST API's operations -------------------------------------------------------------------------


def operation_cases() -> Iterator[Any]:
    """Every operation, the deletes last (a delete takes the object it names out of the cluster)."""
    for operation in sorted(doors.operations(SCHEMA), key=lambda operation: operation.method == "DELETE"):
        yield pytest.param(operation, id=operation.name)


def documented_successes(operation: doors.Operation) -> set[int]:
    answers = SCHEMA["paths"][operation.path][operation.method.lower()]["responses"]
    return {int(code) for code in answers if code.startswith("2")}


@pytest.mark.parametrize("operation", operation_cases())
def test_every_api_operation_succeeds_with_data_present(rows, editor, operation):
    """The editor's request, with an example's manifest where it takes a body, succeeds as documented (a
    delete of a row whose object the cluster no longer has is accepted too: the mirror catches up)."""
    collection = operation.path.removeprefix("/api/").split("/", 1)[0]
    values = world.path_values(rows, world.API_TARGETS.get(collection, ""))
    path = re.sub(r"\{(\w+)\}", lambda match: str(values[match.group(1)]), operation.path)
    make_body = BODIES.get(operation.name)
    assert make_body is not None or not operation.content_types, f"{operation.name}: say its body in BODIES"
    body = json.dumps(make_body(rows)) if make_body else ""
    response = editor.generic(operation.method, path, body, content_type="application/json")
    assert response.status_code in documented_successes(operation), (response.status_code, body_of(response))
    if operation.method == "GET":
        assert shows_data(rows, response), f"{path} shows no seeded row"


# --- the admin ---------------------------------------------------------------------------------------------


def admin_cases() -> Iterator[Any]:
    for endpoint in endpoints.endpoints():
        if endpoint.route.startswith(endpoints.ADMIN_PREFIX) and endpoint.name:
            yield pytest.param(endpoint, id=endpoint.key)


def admin_model(endpoint: Endpoint) -> type[models.Model] | None:
    """The model whose admin serves the page, from its URL name (`admin:<app>_<model>_<view>`)."""
    for model in admin.site._registry:
        if (endpoint.name or "").startswith(f"admin:{model._meta.app_label}_{model._meta.model_name}_"):
            return model
    return None


#: Pages of the admin that are no model's, and their answers to a signed-in superuser.
ADMIN_PAGES: dict[str, set[int]] = {
    "admin:index": {200},
    "admin:app_list": {200},
    "admin:login": {200, 302},
    "admin:logout": {200},  # a POST (it signs out a session of its own)
    "admin:password_change": {200},
    "admin:password_change_done": {200},
    "admin:jsi18n": {200},
    "admin:autocomplete": {403},  # no model admin declares autocomplete_fields: asked of none, refused
    # No model has a page of its own on the site (no get_absolute_url): the admin says so.
    "admin:view_on_site": {404},
}


def admin_path(endpoint: Endpoint, model: type[models.Model] | None, rows: dict[str, Any]) -> str:
    row = model._default_manager.order_by("pk").first() if model is not None else rows["job"]
    assert row is not None, f"{endpoint.key}: seed a row of {model} in _admin_rows, so its pages show one"
    values = {"object_id": row.pk, "id": row.pk, "app_label": "jobs"}
    if endpoint.key == "admin:view_on_site":
        from django.contrib.contenttypes.models import ContentType

        runtime = rows["runtime"]
        values.update(content_type_id=ContentType.objects.get_for_model(runtime).pk, object_id=runtime.pk)
    return endpoints.concrete_path(endpoint, values)


@pytest.mark.parametrize("endpoint", list(admin_cases()))
def test_every_admin_page_answers_with_data_present(rows, superuser, endpoint):
    model = admin_model(endpoint)
    path = admin_path(endpoint, model, rows)
    if model is None:
        assert endpoint.key in ADMIN_PAGES, f"{endpoint.key}: say its answer in ADMIN_PAGES"
        client = Client() if endpoint.key == "admin:logout" else superuser
        client.force_login(rows["superuser"])
        response = client.post(path) if endpoint.key == "admin:logout" else client.get(path)
        assert response.status_code in ADMIN_PAGES[endpoint.key], (path, response.status_code)
        return
    model_admin = admin.site._registry[model]
    view = (endpoint.name or "").rsplit("_", 1)[-1]
    allowed = {"add": model_admin.has_add_permission, "delete": model_admin.has_delete_permission}
    request = type("Request", (), {"user": rows["superuser"], "method": "GET"})()
    refused = view in allowed and not allowed[view](request)
    response = superuser.get(path)
    assert response.status_code == (403 if refused else 200), (path, response.status_code)
