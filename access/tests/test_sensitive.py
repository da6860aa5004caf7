"""Grants on the control plane's namespace and kube-* need a superuser who confirms them."""

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from access.models import NamespaceGrant
from access.sensitive import is_sensitive


@pytest.mark.parametrize(
    ("namespace", "sensitive"),
    [
        ("argoml", True),
        ("kube-system", True),
        ("kube-public", True),
        ("kube-node-lease", True),
        ("team-a", False),
        ("argoml-team", False),
        ("my-kube-system", False),
        ("kube", False),
    ],
)
def test_the_control_plane_and_kube_namespaces_are_sensitive(namespace, sensitive):
    assert is_sensitive(namespace, "argoml") is sensitive


def test_the_control_plane_namespace_is_the_one_configured():
    assert is_sensitive("ml-platform", "ml-platform")
    assert not is_sensitive("argoml", "ml-platform")


ADD_URL = "/admin/access/namespacegrant/add/"


@pytest.fixture
def grantee(django_user_model):
    return django_user_model.objects.create_user("gina", password="a-long-password-1")


@pytest.fixture
def staff_client(django_user_model):
    """Staff with every permission on grants, but not a superuser."""
    staff = django_user_model.objects.create_user("stan", password="a-long-password-1", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="access"))
    client = Client()
    client.force_login(staff)
    return client


def grant(client, grantee, namespace, **extra):
    data = {"user": grantee.pk, "namespace": namespace, "role": "viewer", **extra}
    return client.post(ADD_URL, data)


@pytest.mark.django_db
def test_a_superuser_must_confirm_a_grant_on_kube_system(admin_client, grantee, settings):
    response = grant(admin_client, grantee, "kube-system")
    assert response.status_code == 200
    assert "confirm that this grant is intended" in response.content.decode()
    assert not NamespaceGrant.objects.exists()
    response = grant(admin_client, grantee, "kube-system", confirm_sensitive="on")
    assert response.status_code == 302
    assert NamespaceGrant.objects.get().namespace == "kube-system"


@pytest.mark.django_db
def test_the_control_plane_namespace_setting_is_protected(admin_client, grantee, settings):
    settings.ARGOML_NAMESPACE = "ml-platform"
    assert "confirm that this grant" in grant(admin_client, grantee, "ml-platform").content.decode()
    assert grant(admin_client, grantee, "argoml").status_code == 302


@pytest.mark.django_db
def test_a_staff_user_who_is_not_a_superuser_cannot_grant_a_system_namespace(staff_client, grantee):
    response = grant(staff_client, grantee, "argoml", confirm_sensitive="on")
    assert response.status_code == 200
    assert "Only a superuser may grant access to" in response.content.decode()
    assert not NamespaceGrant.objects.exists()
    assert grant(staff_client, grantee, "team-a").status_code == 302


@pytest.mark.django_db
def test_changing_a_grant_into_a_system_namespace_is_checked_too(staff_client, grantee):
    existing = NamespaceGrant.objects.create(user=grantee, namespace="team-a")
    data = {"user": grantee.pk, "namespace": "kube-system", "role": "editor", "confirm_sensitive": "on"}
    response = staff_client.post(f"/admin/access/namespacegrant/{existing.pk}/change/", data)
    assert response.status_code == 200
    existing.refresh_from_db()
    assert existing.namespace == "team-a"
