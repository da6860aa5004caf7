"""Namespaces' pod security: the admin's rows, the default, and the cached copy the hot paths read."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.test.utils import override_settings

from access import podsecurity
from access.models import NamespacePodSecurity, podsecurity_version
from podsecurity import pod_view

pytestmark = pytest.mark.django_db

PRIVILEGED_POD = {"hostPID": True, "serviceAccountName": "admin", "containers": [{"name": "c"}]}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_namespace_without_a_row_gets_the_default_level_and_only_the_default_account():
    assert podsecurity.policy_for("team-a") == podsecurity.Policy("baseline", frozenset())
    with override_settings(POD_SECURITY_DEFAULT_LEVEL="restricted"):
        assert podsecurity.policy_for("team-a").level == "restricted"


def test_the_admins_row_sets_the_level_and_the_service_accounts():
    NamespacePodSecurity.objects.create(namespace="team-a", level="privileged", service_accounts="a, b\nc")
    assert podsecurity.policy_for("team-a") == podsecurity.Policy("privileged", frozenset({"a", "b", "c"}))
    assert podsecurity.policy_for("team-b").level == "baseline"


def test_check_applies_the_level_then_the_service_accounts():
    views = [pod_view(PRIVILEGED_POD)]
    assert [v.path for v in podsecurity.check("team-a", views)] == ["spec.hostPID", "spec.serviceAccountName"]
    NamespacePodSecurity.objects.create(namespace="team-a", level="privileged", service_accounts="admin")
    podsecurity.reset_process_cache()
    assert podsecurity.check("team-a", views) == []


def test_policies_are_read_once_then_served_from_memory(django_assert_num_queries):
    NamespacePodSecurity.objects.create(namespace="team-a", level="restricted")
    with django_assert_num_queries(1):
        podsecurity.policy_for("team-a")
    with django_assert_num_queries(0):
        for namespace in ("team-a", "team-b", "team-a"):
            podsecurity.policy_for(namespace)


def test_a_committed_change_reaches_the_cache_at_its_next_check(django_capture_on_commit_callbacks):
    clock = Clock()
    podsecurity.reset_process_cache(clock=clock, check_interval=3.0)
    assert podsecurity.policy_for("team-a").level == "baseline"
    before = int(podsecurity_version.read() or 0)
    with django_capture_on_commit_callbacks(execute=True):
        NamespacePodSecurity.objects.create(namespace="team-a", level="restricted")
    assert int(podsecurity_version.read() or 0) == before + 1
    assert podsecurity.policy_for("team-a").level == "baseline"  # held until the interval passes
    clock.now += 3.0
    assert podsecurity.policy_for("team-a").level == "restricted"


@pytest.mark.parametrize(
    "change",
    [
        lambda: NamespacePodSecurity.objects.filter(namespace="team-a").update(level="privileged"),
        lambda: NamespacePodSecurity.objects.filter(namespace="team-a").delete(),
        lambda: NamespacePodSecurity.objects.get(namespace="team-a").delete(),
    ],
    ids=["queryset update", "queryset delete", "row delete"],
)
def test_every_kind_of_change_bumps_the_version(change, django_capture_on_commit_callbacks):
    NamespacePodSecurity.objects.create(namespace="team-a", level="restricted")
    before = int(podsecurity_version.read() or 0)
    with django_capture_on_commit_callbacks(execute=True):
        change()
    assert int(podsecurity_version.read() or 0) == before + 1


def test_service_account_names_are_checked_naming_the_bad_ones():
    row = NamespacePodSecurity(namespace="team-a", level="baseline", service_accounts="good, Bad_Name, x..y")
    with pytest.raises(ValidationError) as raised:
        row.full_clean()
    assert raised.value.message_dict == {
        "service_accounts": [
            "not a ServiceAccount name (lowercase letters, digits, '-' and '.'): Bad_Name, x..y"
        ]
    }


def test_an_unknown_level_is_refused():
    with pytest.raises(ValidationError) as raised:
        NamespacePodSecurity(namespace="team-a", level="strict").full_clean()
    assert list(raised.value.message_dict) == ["level"]


def test_an_admin_sets_a_namespaces_pod_security_in_the_admin(client):
    client.force_login(User.objects.create_superuser("root"))
    response = client.post(
        "/admin/access/namespacepodsecurity/add/",
        {"namespace": "team-a", "level": "restricted", "service_accounts": "trainer"},
    )
    assert response.status_code == 302
    assert NamespacePodSecurity.objects.get().service_accounts == "trainer"
    assert client.get("/admin/access/namespacepodsecurity/").status_code == 200
