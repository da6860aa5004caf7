"""With no cluster configured, every API operation that needs one answers 503 with the sentence that says so
(documented in its schema), never a 500; the operations are found from the served schema, so a new write
that is not classified here fails."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from access.models import NamespaceGrant, Role
from dashboard.tests import factories
from hyperparam.tests.conftest import make_spec
from kube.client import reset_client
from trainer.tests import factories as trainer_manifests
from workflows.tests.pipeline_examples import FULL_CONFIG_YAML, FULL_PIPELINE_YAML

pytestmark = pytest.mark.django_db

NAMESPACE = "team-a"
SENTENCE = "No cluster is configured: set KUBECONFIG or KUBE_IN_CLUSTER=true."
# Writes that never reach the cluster: the transpiler, and the token of a user.
WITHOUT_CLUSTER = {("POST", "/api/pipelines/transpile"), ("POST", "/api/token/")}


def manifest(kind: str, api_version: str, spec: dict[str, Any], name: str = "offline") -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def train_job() -> dict[str, Any]:
    body = trainer_manifests.train_job("offline", NAMESPACE, runtime_name="torch-distributed")
    del body["metadata"]["uid"]
    return body


# Each operation that needs the cluster, and a request it would accept if one were there: (path, body).
NEEDS_CLUSTER = {
    ("POST", "/api/jobs/"): lambda rows: (
        "/api/jobs/",
        manifest("TFJob", "kubeflow.org/v1", factories.job_spec()),
    ),
    ("DELETE", "/api/jobs/{id}/"): lambda rows: (f"/api/jobs/{rows['job'].pk}/", None),
    ("POST", "/api/hyperparams/"): lambda rows: (
        "/api/hyperparams/",
        manifest("HyperparamWorkflow", "argoml.io/v1alpha1", make_spec()),
    ),
    ("DELETE", "/api/hyperparams/{id}/"): lambda rows: (f"/api/hyperparams/{rows['sweep'].pk}/", None),
    ("POST", "/api/trainjobs/"): lambda rows: ("/api/trainjobs/", train_job()),
    ("DELETE", "/api/trainjobs/{id}/"): lambda rows: (f"/api/trainjobs/{rows['train_job'].pk}/", None),
    ("POST", "/api/tensorboards/"): lambda rows: (
        "/api/tensorboards/",
        {"namespace": NAMESPACE, "workflow": "mnist-train"},
    ),
    ("DELETE", "/api/tensorboards/{id}/"): lambda rows: (
        f"/api/tensorboards/{rows['tensorboard'].pk}/",
        None,
    ),
    ("POST", "/api/tensorboards/{id}/open/"): lambda rows: (
        f"/api/tensorboards/{rows['tensorboard'].pk}/open/",
        None,
    ),
    ("POST", "/api/pipelines/submit"): lambda rows: (
        "/api/pipelines/submit",
        {
            "pipeline": FULL_PIPELINE_YAML,
            "config": FULL_CONFIG_YAML,
            "variables": {"tag": "1"},
            "namespace": NAMESPACE,
        },
    ),
}


@pytest.fixture
def no_cluster(settings: Any) -> Any:
    settings.KUBECONFIG, settings.KUBE_IN_CLUSTER = "", False
    reset_client()
    yield
    reset_client()


@pytest.fixture
def editor(django_user_model: Any) -> APIClient:
    user = django_user_model.objects.create_user("offline-editor")
    NamespaceGrant.objects.create(user=user, namespace=NAMESPACE, role=Role.EDITOR)
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def rows() -> dict[str, Any]:
    factories.runtime("torch-distributed")
    return {
        "job": factories.job(),
        "sweep": factories.sweep(),
        "train_job": factories.train_job(),
        "tensorboard": factories.tensorboard(),
    }


def served_writes(client: APIClient) -> dict[tuple[str, str], dict[str, Any]]:
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    return {
        (method.upper(), path): operation
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in ("post", "put", "patch", "delete")
    }


def test_every_write_of_the_schema_is_classified_and_documents_the_503(editor: APIClient) -> None:
    writes = served_writes(editor)
    assert set(writes) == set(NEEDS_CLUSTER) | WITHOUT_CLUSTER
    for operation in NEEDS_CLUSTER:
        assert "503" in writes[operation]["responses"], operation
        assert "application/json" in writes[operation]["responses"]["503"]["content"], operation


@pytest.mark.parametrize("operation", sorted(NEEDS_CLUSTER), ids=" ".join)
def test_an_operation_that_needs_the_cluster_is_503_saying_none_is_configured(
    no_cluster: Any, editor: APIClient, rows: dict[str, Any], operation: tuple[str, str]
) -> None:
    path, body = NEEDS_CLUSTER[operation](rows)
    call = getattr(editor, operation[0].lower())
    response = call(path, body, format="json") if body is not None else call(path)
    assert response.status_code == 503, response.content
    assert SENTENCE in response.json()["detail"]
