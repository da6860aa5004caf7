"""Personas, an API client, and the simulator as the cluster for the pipeline tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from access.models import NamespaceGrant, Role
from kube.client import reset_client
from kubesim.argo.crd import install_crds
from kubesim.simulator import Simulator

NAMESPACE = "team-a"


def use_cluster(simulator: Simulator, settings: Any) -> None:
    """Point the kube client at the simulator, with Argo's CRDs and the team's namespace in it.

    Without argo=True the simulator stores Workflows but runs none: enough for the API tests.
    """
    install_crds(simulator.store)
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
