"""Personas of the dashboard's tests: an editor of team-a, a viewer of team-a, an outsider (team-b only)."""

from __future__ import annotations

import pytest
from django.test import Client

from access.models import NamespaceGrant, Role

PASSWORD = "a-long-password-1"


@pytest.fixture
def editor(django_user_model):
    user = django_user_model.objects.create_user("erin", password=PASSWORD)
    NamespaceGrant.objects.create(user=user, namespace="team-a", role=Role.EDITOR)
    return user


@pytest.fixture
def viewer(django_user_model):
    user = django_user_model.objects.create_user("vic", password=PASSWORD)
    NamespaceGrant.objects.create(user=user, namespace="team-a", role=Role.VIEWER)
    return user


@pytest.fixture
def outsider(django_user_model):
    user = django_user_model.objects.create_user("otto", password=PASSWORD)
    NamespaceGrant.objects.create(user=user, namespace="team-b", role=Role.EDITOR)
    return user


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def as_editor(editor) -> Client:
    return client_for(editor)


@pytest.fixture
def as_viewer(viewer) -> Client:
    return client_for(viewer)


@pytest.fixture
def as_outsider(outsider) -> Client:
    return client_for(outsider)
