"""TrainJobs and their progress reports in the admin (read only), and the runtime list's TrainJob counts:
the revision a job ran linked to its runtime's diffs, and namespace grants on every list."""

from __future__ import annotations

import html
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from access.models import NamespaceGrant, Role
from dashboard.tests import factories

pytestmark = pytest.mark.django_db

TRAINJOBS = "/admin/trainer/trainjob/"
REPORTS = "/admin/trainer/trainerstatusupdate/"
RUNTIMES = "/admin/trainer/trainingruntime/"


def staff_of(namespace: str) -> Client:
    """A staff user who may view TrainJobs, reports and runtimes, with a viewer grant in `namespace`."""
    user = User.objects.create_user(f"staff-{namespace}", is_staff=True)
    codenames = ["view_trainjob", "view_trainerstatusupdate", "view_trainingruntime"]
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    NamespaceGrant.objects.create(user=user, namespace=namespace, role=Role.VIEWER)
    client = Client()
    client.force_login(user)
    return client


def test_the_trainjob_list_shows_state_runtime_progress_and_the_revision_linked_to_its_diff(
    admin_client, django_assert_max_num_queries
):
    runtime = factories.runtime(generation=4)
    job = factories.train_job(runtime_generation=4, progress_percentage=35)
    factories.train_job("unknown-revision")
    for index in range(10):
        factories.train_job(f"more-{index}", runtime_generation=4)

    with django_assert_max_num_queries(8):  # session, user, the page, no query per row
        response = admin_client.get(TRAINJOBS)

    page = response.content.decode()
    assert response.status_code == 200
    assert f'href="/admin/trainer/trainingruntime/{runtime.pk}/change/#revisions-group">generation 4' in page
    assert "35%" in page
    assert "ClusterTrainingRuntime torch-distributed" in page
    assert job.name in page


def test_a_name_reused_by_a_later_runtime_is_not_the_revision_a_job_ran(admin_client):
    factories.runtime(generation=2, deleted_at=factories.T0)
    job = factories.train_job(runtime_generation=2)
    reused = factories.runtime(generation=2, created_at=factories.T0 + timedelta(days=1))

    page = admin_client.get(f"{TRAINJOBS}{job.pk}/change/").content.decode()

    assert f"/trainingruntime/{reused.pk}/" not in page
    assert "generation 2" in page


def test_a_trainjobs_page_shows_its_pods_history_and_links_its_progress_reports(admin_client):
    job = factories.train_job()
    factories.train_job_pod(job, "node", 0, node="gpu-7")
    factories.status_updates(job, 3)

    page = admin_client.get(f"{TRAINJOBS}{job.pk}/change/").content.decode()
    link = f"{REPORTS}?namespace=team-a&amp;trainjob_name=llama&amp;trainjob_uid={job.uid}"
    reports = admin_client.get(html.unescape(link)).content.decode()

    assert "gpu-7" in page
    assert link in page
    assert "3 reports" in page
    assert 'name="_save"' not in page
    assert "loss=0.3333" in reports
    assert "100%" in reports


def test_staff_see_only_the_trainjobs_and_reports_of_their_namespaces(admin_client):
    mine = factories.train_job("mine", "team-a")
    theirs = factories.train_job("theirs", "team-b")
    factories.status_updates(theirs, 1, secretmetric="1")
    client = staff_of("team-a")

    listed = client.get(TRAINJOBS).content.decode()
    reports = client.get(REPORTS).content.decode()

    assert "mine" in listed
    assert "theirs" not in listed
    assert client.get(f"{TRAINJOBS}{theirs.pk}/change/").status_code in (302, 404)
    assert client.get(f"{TRAINJOBS}{mine.pk}/change/").status_code == 200
    assert "secretmetric" not in reports


def test_the_runtime_list_counts_the_trainjobs_naming_each_in_the_readable_namespaces(admin_client):
    factories.runtime("torch-distributed")
    factories.runtime("unused")
    factories.train_job("a1", "team-a")
    factories.train_job("b1", "team-b")
    factories.train_job("b2", "team-b")
    client = staff_of("team-a")

    everyone = {r.name: r.train_jobs for r in admin_client.get(RUNTIMES).context["cl"].result_list}
    team_a = {r.name: r.train_jobs for r in client.get(RUNTIMES).context["cl"].result_list}

    assert everyone == {"torch-distributed": 3, "unused": 0}
    assert team_a == {"torch-distributed": 1, "unused": 0}
