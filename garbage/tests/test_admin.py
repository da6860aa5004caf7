"""The admin: runs with their deletions one page at a time, policies edited in place."""

from __future__ import annotations

import pytest
from django.urls import reverse

from garbage.models import GCDeletion, GCNamespacePolicy, GCRun
from garbage.policy import NamespaceOverride

pytestmark = pytest.mark.django_db


@pytest.fixture
def big_run():
    run = GCRun.objects.create(status=GCRun.Status.SUCCEEDED, scanned=130, deleted=120, skipped=10)
    GCDeletion.objects.bulk_create(
        GCDeletion(run=run, kind="Pod", namespace="default", name=f"pod-{index:03}", uid=f"uid-{index}",
                   reason="workflow_succeeded", age_seconds=7200.0)
        for index in range(120)
    )  # fmt: skip
    return run


def test_a_run_shows_its_deletions_one_page_at_a_time(admin_client, big_run, django_assert_max_num_queries):
    url = reverse("admin:garbage_gcrun_change", args=[big_run.pk])
    with django_assert_max_num_queries(15):
        page = admin_client.get(url).content.decode()
    assert "pod-000" in page
    assert "pod-049" in page
    assert "pod-050" not in page
    assert "Page 1 of 3 (120 GC deletions)" in page

    last = admin_client.get(url, {"deletions_page": 3}).content.decode()
    assert "pod-100" in last
    assert "pod-119" in last
    assert "pod-099" not in last


def test_runs_and_deletions_are_read_only(admin_client, big_run):
    assert admin_client.get(reverse("admin:garbage_gcrun_add")).status_code == 403
    assert admin_client.get(reverse("admin:garbage_gcdeletion_add")).status_code == 403
    page = admin_client.get(reverse("admin:garbage_gcrun_change", args=[big_run.pk])).content.decode()
    assert 'name="_save"' not in page
    # An audit trail is not deleted by hand either.
    assert admin_client.get(reverse("admin:garbage_gcrun_delete", args=[big_run.pk])).status_code == 403


def test_the_run_list_and_the_deletion_list_render(admin_client, big_run):
    assert admin_client.get(reverse("admin:garbage_gcrun_changelist")).status_code == 200
    response = admin_client.get(
        reverse("admin:garbage_gcdeletion_changelist"), {"reason": "workflow_succeeded"}
    )
    assert response.status_code == 200
    assert "pod-000" in response.content.decode()


def test_an_admin_adds_a_namespace_policy(admin_client):
    response = admin_client.post(
        reverse("admin:garbage_gcnamespacepolicy_add"),
        {
            "namespace": "team-a",
            "succeeded_retention_seconds": "600",
            "failed_retention_seconds": "",
            "excluded": "",
        },
    )
    assert response.status_code == 302
    policy = GCNamespacePolicy.objects.get()
    assert policy.as_override() == NamespaceOverride(
        succeeded_seconds=600, failed_seconds=None, excluded=False
    )


@pytest.mark.parametrize(("field", "value"), [("namespace", "Team_A"), ("succeeded_retention_seconds", "-5")])
def test_a_bad_policy_is_refused_naming_the_field(admin_client, field, value):
    data = {
        "namespace": "team-a",
        "succeeded_retention_seconds": "",
        "failed_retention_seconds": "",
        field: value,
    }
    response = admin_client.post(reverse("admin:garbage_gcnamespacepolicy_add"), data)
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert not GCNamespacePolicy.objects.exists()
