"""The jobs pages: list filters in the URL, constant queries, the job page and its live fragment, access."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from dashboard.tests import factories
from jobs.models import TrainingJob, TrainingJobHistory

pytestmark = pytest.mark.django_db

# Session, user, the user's grants, one page of jobs.
LIST_QUERIES = 4


def many_jobs(count: int, namespace: str = "team-a") -> None:
    rows = [
        factories.job(
            f"job-{i:04d}",
            namespace,
            kind=("TFJob", "PyTorchJob")[i % 2],
            phase=("Running", "Succeeded", "Failed")[i % 3],
            created_at=factories.T0 + timedelta(minutes=i),
            save=False,
        )
        for i in range(count)
    ]
    TrainingJob.objects.bulk_create(rows)


@pytest.mark.parametrize("count", [3, 120])
def test_the_job_list_uses_the_same_few_queries_however_many_jobs_exist(
    as_editor, django_assert_num_queries, count
):
    many_jobs(count)
    with django_assert_num_queries(LIST_QUERIES):
        response = as_editor.get(reverse("dashboard:jobs"))
    assert response.status_code == 200


def test_the_job_list_is_newest_first_and_pages_with_a_cursor(as_editor):
    many_jobs(60)
    first = as_editor.get(reverse("dashboard:jobs"))
    names = first.context["page"].rows
    assert [job.name for job in names[:2]] == ["job-0059", "job-0058"]
    assert len(names) == 50
    cursor = first.context["page"].next_cursor
    second = as_editor.get(reverse("dashboard:jobs"), {"after": cursor})
    assert [job.name for job in second.context["page"].rows] == [f"job-{i:04d}" for i in range(9, -1, -1)]
    assert second.context["page"].next_cursor is None


def test_a_forged_cursor_goes_back_to_the_first_page_with_a_message(as_editor):
    response = as_editor.get(reverse("dashboard:jobs"), {"after": "not-a-cursor"}, follow=True)
    assert b"out of date" in response.content


def test_filters_stay_in_the_url_and_narrow_the_list(as_editor):
    many_jobs(30)
    response = as_editor.get(
        reverse("dashboard:jobs"), {"kind": "PyTorchJob", "phase": "Failed", "name": "JOB-00"}
    )
    rows = response.context["page"].rows
    assert rows
    assert all(job.kind == "PyTorchJob" and job.phase == "Failed" for job in rows)
    assert all(job.name.startswith("job-00") for job in rows)
    assert b'value="PyTorchJob" selected' in response.content


def test_a_bad_filter_value_is_named_and_the_filter_ignored(as_editor):
    response = as_editor.get(reverse("dashboard:jobs"), {"phase": "Exploded"})
    assert response.status_code == 200
    assert b"Exploded is not one of the available choices" in response.content


def test_users_see_only_jobs_of_their_namespaces(as_outsider, as_viewer):
    factories.job("secret", "team-a")
    assert b"secret" not in as_outsider.get(reverse("dashboard:jobs")).content
    assert b"secret" in as_viewer.get(reverse("dashboard:jobs")).content


def test_a_job_outside_the_users_namespaces_is_not_found(as_outsider):
    job = factories.job("secret", "team-a")
    assert as_outsider.get(reverse("dashboard:job", args=[job.pk])).status_code == 404


def test_the_list_polls_while_a_shown_job_runs_and_not_once_all_finished(as_editor):
    factories.job("running", phase="Running")
    assert b'hx-trigger="every' in as_editor.get(reverse("dashboard:jobs")).content
    TrainingJob.objects.update(phase="Succeeded")
    assert b'hx-trigger="every' not in as_editor.get(reverse("dashboard:jobs")).content


def test_an_htmx_poll_of_the_list_gets_only_the_table(as_editor):
    factories.job("running")
    response = as_editor.get(reverse("dashboard:jobs"), HTTP_HX_REQUEST="true")
    assert response.content.lstrip().startswith(b'<div id="job-table"')


def test_the_job_page_shows_the_replica_grid_conditions_history_and_yaml(as_viewer):
    job = factories.job(
        "mnist",
        phase="Running",
        conditions=[{"type": "Running", "status": "True", "reason": "JobRunning", "message": "all up"}],
    )
    factories.replica(job, "worker", 0, phase="Running")
    old = factories.replica(job, "worker", 1, phase="Failed", exit_code=137, restarts=2)
    old.deleted_at = old.created_at
    old.save()
    factories.replica(job, "worker", 1, phase="Running")
    TrainingJobHistory.objects.create(resource=job, at=factories.T0, phase="Created", reason="JobCreated")
    page = as_viewer.get(reverse("dashboard:job", args=[job.pk])).content.decode()
    assert "JobRunning" in page
    assert "JobCreated" in page
    assert "pod 2" in page  # worker 1 was recreated once
    assert "tfReplicaSpecs" in page
    assert 'hx-trigger="every' in page
    assert "Stop</button>" not in page  # a viewer cannot stop it


def test_a_succeeded_tfjobs_parameter_server_reads_as_stopped_in_neutral_colours_not_failed(as_viewer):
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "example.io/train:1"}]}}
    replica_specs = {kind: {"replicas": 1, "template": template} for kind in ("Chief", "PS", "Worker")}
    job = factories.job("mnist-ps", phase="Succeeded", spec={"tfReplicaSpecs": replica_specs})
    factories.replica(job, "chief", 0, phase="Succeeded", exit_code=0)
    factories.replica(job, "ps", 0, phase="Failed", exit_code=143)
    factories.replica(job, "worker", 0, phase="Failed", exit_code=1)
    page = as_viewer.get(reverse("dashboard:job", args=[job.pk])).content.decode()
    ps = re.search(r'<a class="cell ([^"]*)"[^>]*aria-label="PS 0: ([^"]*)"', page)
    assert ps is not None, page
    assert ps.group(1).split()[:2] == ["idle", "stopped"]
    assert ps.group(2).startswith(
        "stopped by the operator once the job succeeded, exit code 143, not a failure"
    )
    assert 'id="stopped-note"' in page
    assert "Kubeflow ends them by design" in page
    worker = re.search(r'<a class="cell ([^"]*)"[^>]*aria-label="Worker 0: ([^"]*)"', page)
    assert worker.group(1).split()[0] == "bad"  # a pod that failed by itself stays red
    failed = factories.job("failed-ps", phase="Failed")
    factories.replica(failed, "ps", 0, phase="Failed", exit_code=143)
    page = as_viewer.get(reverse("dashboard:job", args=[failed.pk])).content.decode()
    assert 'id="stopped-note"' not in page


def test_the_yaml_of_a_kubeflow_job_keeps_its_group(as_viewer):
    job = factories.job("mnist", api_group="kubeflow.org")
    page = as_viewer.get(reverse("dashboard:job", args=[job.pk])).content.decode()
    assert "apiVersion: kubeflow.org/v1" in page


def test_an_mpijob_is_listed_filtered_and_shown_with_its_launcher_and_workers(as_viewer):
    job = factories.job("pi", kind="MPIJob", replica_summary="Launcher 1/1 · Worker 2/2")
    factories.replica(job, "launcher", 0, phase="Running")
    factories.replica(job, "worker", 0, phase="Running")
    listing = as_viewer.get(reverse("dashboard:jobs"), {"kind": "MPIJob"})
    assert [row.name for row in listing.context["page"].rows] == ["pi"]
    page = as_viewer.get(reverse("dashboard:job", args=[job.pk])).content.decode()
    assert "mpiReplicaSpecs" in page
    assert "Launcher 1/1 · Worker 2/2" in page


def test_the_status_fragment_stops_polling_once_the_job_finished(as_editor):
    job = factories.job("mnist", phase="Succeeded")
    fragment = as_editor.get(reverse("dashboard:job", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert fragment.content.lstrip().startswith(b'<div id="job-status"')
    assert b"hx-trigger" not in fragment.content


def test_the_job_page_uses_a_constant_number_of_queries(as_editor, django_assert_num_queries):
    job = factories.job("mnist")
    for index in range(8):
        factories.replica(job, "worker", index)
    # Session, user, grants, the job, its replicas, its history.
    with django_assert_num_queries(6):
        as_editor.get(reverse("dashboard:job", args=[job.pk]))


def test_a_viewer_may_not_stop_or_resubmit(as_viewer):
    job = factories.job("mnist")
    assert as_viewer.post(reverse("dashboard:job-stop", args=[job.pk])).status_code == 403
    assert as_viewer.post(reverse("dashboard:job-resubmit", args=[job.pk])).status_code == 403


def test_stop_is_a_post(as_editor):
    job = factories.job("mnist")
    assert as_editor.get(reverse("dashboard:job-stop", args=[job.pk])).status_code == 405


def test_a_job_by_name_waits_until_the_mirror_has_it_then_redirects(as_editor):
    url = reverse("dashboard:job-by-name", args=["team-a", "TFJob", "later"])
    assert b"Waiting for the controller" in as_editor.get(url).content
    job = factories.job("later")
    assert as_editor.get(url, HTTP_HX_REQUEST="true")["HX-Redirect"] == reverse(
        "dashboard:job", args=[job.pk]
    )
    assert as_editor.get(url)["Location"] == reverse("dashboard:job", args=[job.pk])


@pytest.mark.parametrize(
    "path",
    [
        "team-a/TFJob/Later",
        "team-a/TFJob/../TFJob/later",
        "team-a/TFJob/a%2Fb",
        "Team-A/TFJob/later",
        "team.a/TFJob/later",
        "team-a/TFJob/" + "x" * 254,
    ],
)
def test_a_job_by_name_whose_namespace_or_name_is_not_a_kubernetes_name_is_not_found(as_editor, path):
    url = reverse("dashboard:job-by-name", args=["team-a", "TFJob", "later"])
    assert as_editor.get(url).status_code == 200
    assert as_editor.get(url.replace("team-a/TFJob/later", path)).status_code == 404


def test_a_superuser_filters_by_every_namespace_jobs_use_in_a_constant_number_of_queries(
    admin_client, django_assert_num_queries
):
    many_jobs(30, "team-a")
    many_jobs(5, "team-z")
    # Session, user, the namespaces (one loose index scan), one page of jobs; no grants for a superuser.
    with django_assert_num_queries(LIST_QUERIES):
        response = admin_client.get(reverse("dashboard:jobs"))
    choices = [value for value, _ in response.context["filters"].fields["namespace"].choices]
    assert choices == ["", "team-a", "team-z"]


@pytest.mark.parametrize(("phase", "stoppable"), [("Running", True), ("Succeeded", False), ("Failed", False)])
def test_only_a_job_still_running_has_a_stop_button(as_editor, phase, stoppable):
    job = factories.job("mnist", phase=phase)
    page = as_editor.get(reverse("dashboard:job", args=[job.pk])).content.decode()
    assert ("Stop</button>" in page) is stoppable
    assert "Resubmit</button>" in page
