"""schemathesis against the OpenAPI schema the API serves, with every check: no 5xx, every status code and
response documented and matching its schema, schema-valid requests accepted and invalid ones rejected.

The caller is a token user with the editor role in team-a, the simulator is the cluster (so submits, spawns
and deletes reach a real API server), and the run is bounded per operation (SETTINGS, printed once).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis.specs.openapi.checks import positive_data_acceptance

from access.models import NamespaceGrant, Role
from argoml_site.wsgi import application
from kube.client import reset_client
from kubesim.argo.crd import install_crds
from kubesim.simulator import Simulator
from trainer.tests.runtime_cluster import install_trainer_crds
from web.api import DOCUMENT_BODY

NAMESPACE = "team-a"
# Bounded so the whole run stays within about two minutes on two cores: examples per operation, and a
# per-example deadline generous enough for a submit that goes through the simulator.
SETTINGS = settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    database=None,
)


@pytest.fixture
def print_settings(capsys: pytest.CaptureFixture[str]) -> None:
    """The figures the run is made with, in the test output (uncaptured), once per run."""
    with capsys.disabled():
        print(f"\nschemathesis {schemathesis.__version__}, all checks, per operation: {SETTINGS}")


@pytest.fixture
def editor_token(django_user_model: Any) -> str:
    user = django_user_model.objects.create_user("schemathesis-editor")
    NamespaceGrant.objects.create(user=user, namespace=NAMESPACE, role=Role.EDITOR)
    return Token.objects.create(user=user).key


@pytest.fixture
def cluster(kubesim: Simulator, settings: Any) -> Iterator[Simulator]:
    install_crds(kubesim.store)
    install_trainer_crds(kubesim)
    kubesim.store.ensure_namespace(NAMESPACE)
    settings.KUBECONFIG = str(kubesim.kubeconfig_path)
    settings.KUBE_IN_CLUSTER = False
    reset_client()
    yield kubesim
    reset_client()


@pytest.fixture
def keep_connection() -> Iterator[None]:
    """The WSGI handler closes the database connection after each request, which would end the test's
    transaction; Django's own test client keeps it open the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(db: None, keep_connection: None, settings: Any, editor_token: str, cluster: Simulator) -> Any:
    """The schema as /api/schema/ serves it to the editor, bound to the web application in this process."""
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "localhost"]
    headers = {"Authorization": f"Token {editor_token}", "Accept": "application/vnd.oai.openapi+json"}
    return schemathesis.openapi.from_wsgi("/api/schema/", application, headers=headers)


# The admission webhooks are the API server's, not the public API's, and leave the web process (issue 16).
schema = schemathesis.pytest.from_fixture("api_schema").exclude(path_regex="^/webhooks/")


def document_body(case: Any) -> bool:
    """Whether the operation's schema says its body carries a document checked beyond what a schema can say
    (`web.api.document_body`: a job's `spec` by the admission webhook's rules, a pipeline's YAML text by the
    transpiler), so a schema-valid body may rightly be a 400 naming the field at fault. The reason is in the
    schema, beside the body, for every client to read; nothing is exempted here by name."""
    return bool(case.operation.definition.raw.get(DOCUMENT_BODY))


@schema.parametrize()
@SETTINGS
def test_the_api_keeps_its_schema(case: Any, editor_token: str, print_settings: None) -> None:
    excluded = [positive_data_acceptance] if document_body(case) else []
    case.call_and_validate(headers={"Authorization": f"Token {editor_token}"}, excluded_checks=excluded)
