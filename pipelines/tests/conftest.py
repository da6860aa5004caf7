"""Personas, an API client, and the simulator as the cluster for the pipeline tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from access.models import NamespaceGrant, Role
from kube.client import reset_client
from kubesim.simulator import Simulator

NAMESPACE = "team-a"

# Enough of Argo's CRD for the apiserver to store Workflows: the simulator does not check their spec.
WORKFLOW_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "workflows.argoproj.io"},
    "spec": {
        "group": "argoproj.io",
        "scope": "Namespaced",
        "names": {"plural": "workflows", "singular": "workflow", "kind": "Workflow", "shortNames": ["wf"]},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


def use_cluster(simulator: Simulator, settings: Any) -> None:
    """Point the kube client at the simulator, with Argo's CRD and the team's namespace in it."""
    if not simulator.store.exists("customresourcedefinitions", WORKFLOW_CRD["metadata"]["name"]):
        simulator.store.create(WORKFLOW_CRD)
    simulator.store.ensure_namespace(NAMESPACE)
    settings.KUBECONFIG = str(simulator.kubeconfig_path)
    settings.KUBE_IN_CLUSTER = False
    reset_client()


@pytest.fixture
def cluster(kubesim: Simulator, settings: Any) -> Iterator[Simulator]:
    """The simulator as the configured cluster; the client is forgotten afterwards so no test inherits it."""
    use_cluster(kubesim, settings)
    yield kubesim
    reset_client()


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def _user_with_role(django_user_model: Any, username: str, role: Role | None) -> Any:
    user = django_user_model.objects.create_user(username)
    if role is not None:
        NamespaceGrant.objects.create(user=user, namespace=NAMESPACE, role=role)
    return user


@pytest.fixture
def outsider(django_user_model: Any) -> Any:
    """Signed in, but granted nothing."""
    return _user_with_role(django_user_model, "outsider", None)


@pytest.fixture
def viewer(django_user_model: Any) -> Any:
    return _user_with_role(django_user_model, "viewer", Role.VIEWER)


@pytest.fixture
def editor(django_user_model: Any) -> Any:
    return _user_with_role(django_user_model, "editor", Role.EDITOR)
