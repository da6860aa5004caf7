"""The Train jobs pages: the list (filters in the URL, constant queries), a TrainJob's page (steps and pods
with logs links, conditions, history, runtime and the revision it ran), its plots JSON, and access."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from access.models import NamespaceGrant, Role
from dashboard.tests import factories
from kube.client import get_client
from trainer.models import TrainerStatusUpdate, TrainJob, TrainJobHistory
from trainer.resources import TRAIN_JOB
from trainer.tests import factories as manifests
from trainer.tests.runtime_cluster import trainer_cluster

pytestmark = pytest.mark.django_db

# Session, user, the user's grants, one page of TrainJobs.
LIST_QUERIES = 4


@pytest.mark.parametrize("count", [3, 60])
def test_the_list_uses_the_same_few_queries_however_many_trainjobs_exist(
    as_viewer, django_assert_num_queries, count
):
    for index in range(count):
        factories.train_job(f"tj-{index:03d}", created_at=factories.T0 + timedelta(minutes=index))

    with django_assert_num_queries(LIST_QUERIES):
        response = as_viewer.get(reverse("dashboard:trainjobs"))

    assert response.status_code == 200
    assert len(response.context["page"].rows) == min(count, 50)


def test_the_list_shows_state_runtime_progress_and_steps_and_filters_by_them(as_viewer):
    factories.train_job("running-job", progress_percentage=42, steps_summary="node 2 active")
    factories.train_job("done-job", phase="Complete", runtime_name="deepspeed-distributed")
    factories.train_job("elsewhere", "team-b")

    page = as_viewer.get(reverse("dashboard:trainjobs")).content.decode()
    complete = as_viewer.get(reverse("dashboard:trainjobs"), {"phase": "Complete"}).context["page"].rows
    by_runtime = as_viewer.get(reverse("dashboard:trainjobs"), {"runtime": "torch-distributed"})

    assert "running-job" in page
    assert "done-job" in page
    assert "elsewhere" not in page
    assert "42%" in page
    assert "node 2 active" in page
    assert "deepspeed-distributed" in page
    assert [job.name for job in complete] == ["done-job"]
    assert [job.name for job in by_runtime.context["page"].rows] == ["running-job"]


def test_the_navigation_leads_to_train_jobs(as_viewer):
    page = as_viewer.get(reverse("dashboard:overview")).content.decode()
    assert f'href="{reverse("dashboard:trainjobs")}"' in page


def test_a_trainjobs_page_shows_its_steps_pods_conditions_history_and_latest_metrics(as_viewer):
    job = factories.train_job(
        phase="Failed",
        conditions=[
            {"type": "Failed", "status": "True", "reason": "TrainJobFailed", "message": "node 0 exited"}
        ],
        status={"trainerStatus": {"metrics": [{"name": "loss", "value": "0.125"}]}},
    )
    init = factories.train_job_pod(job, "dataset-initializer", 0, phase="Succeeded")
    node = factories.train_job_pod(job, "node", 0, phase="Failed", exit_code=3, node="gpu-node-1")
    TrainJobHistory.objects.create(resource=job, at=factories.T0, phase="Failed", reason="TrainJobFailed")

    page = as_viewer.get(reverse("dashboard:trainjob", args=[job.pk])).content.decode()

    assert reverse("dashboard:trainjob-pod-logs", args=[job.pk, init.pk]) in page
    assert reverse("dashboard:trainjob-pod-logs", args=[job.pk, node.pk]) in page
    assert "exit 3" in page
    assert "gpu-node-1" in page
    assert "node 0 exited" in page
    assert "TrainJobFailed" in page
    assert "loss=0.125" in page
    assert page.index("dataset-initializer") < page.index(">node<")
    assert reverse("dashboard:trainjob-events", args=[job.pk]) in page


def test_the_revision_a_job_ran_links_staff_to_the_runtimes_diffs_and_shows_the_change(
    as_viewer, admin_client
):
    runtime = factories.runtime(generation=2)
    runtime.revisions.filter(generation=2).update(diff="-  numNodes: 1\n+  numNodes: 2")
    job = factories.train_job("tj", runtime_generation=2)

    for_viewer = as_viewer.get(reverse("dashboard:trainjob", args=[job.pk])).content.decode()
    for_staff = admin_client.get(reverse("dashboard:trainjob", args=[job.pk])).content.decode()

    admin_link = f"{reverse('admin:trainer_trainingruntime_change', args=[runtime.pk])}#revisions-group"
    assert "generation 2" in for_viewer
    assert "+  numNodes: 2" in for_viewer
    assert admin_link not in for_viewer
    assert admin_link in for_staff


def test_a_job_without_reports_says_how_to_send_them_and_loads_no_plot_script(as_viewer):
    job = factories.train_job()

    page = as_viewer.get(reverse("dashboard:trainjob", args=[job.pk])).content.decode()

    assert "No progress report yet" in page
    assert "trainplots.js" not in page


def test_a_job_with_reports_loads_plotly_under_the_plots_policy(as_viewer, settings):
    settings.CONTENT_SECURITY_POLICY = "default-src 'self'"
    job = factories.train_job()
    factories.status_updates(job, 3)

    response = as_viewer.get(reverse("dashboard:trainjob", args=[job.pk]))

    assert "trainplots.js" in response.content.decode()
    assert "plotly.min.js" in response.content.decode()
    assert "'unsafe-eval'" in response["Content-Security-Policy"]


def test_the_plots_json_has_progress_and_each_numeric_metric_over_time(as_viewer, django_assert_num_queries):
    job = factories.train_job()
    factories.status_updates(job, 4, accuracy="0.5", phase_name="warmup")
    factories.status_updates(factories.train_job("other"), 2, other_metric="1")

    with django_assert_num_queries(5):  # session, user, grants, the job, its reports
        body = as_viewer.get(reverse("dashboard:trainjob-plots", args=[job.pk])).json()

    assert body["reports"] == 4
    assert body["progress"]["data"][0]["y"] == [25.0, 50.0, 75.0, 100.0]
    assert [m["name"] for m in body["metrics"]] == ["loss", "accuracy"]  # "warmup" is not a number
    assert body["metrics"][0]["figure"]["data"][0]["y"] == [1.0, 0.5, 0.3333, 0.25]


def test_a_report_filed_elsewhere_under_this_jobs_uid_is_not_plotted_or_counted(as_viewer):
    """Before issue 27 a pod's owner reference chose the uid its report was filed under."""
    job = factories.train_job()
    forged = factories.status_updates(factories.train_job("tj", "team-b"), 1, forged="1")
    TrainerStatusUpdate.objects.filter(pk=forged[0].pk).update(trainjob_uid=job.uid)

    page = as_viewer.get(reverse("dashboard:trainjob", args=[job.pk])).content.decode()
    body = as_viewer.get(reverse("dashboard:trainjob-plots", args=[job.pk])).json()

    assert "No progress report yet" in page
    assert body["reports"] == 0


def test_another_tenants_trainjob_its_plots_and_its_pods_logs_are_not_found(as_outsider):
    job = factories.train_job()
    pod = factories.train_job_pod(job)

    for url in (
        reverse("dashboard:trainjob", args=[job.pk]),
        reverse("dashboard:trainjob-plots", args=[job.pk]),
        reverse("dashboard:trainjob-events", args=[job.pk]),
        reverse("dashboard:trainjob-pod-logs", args=[job.pk, pod.pk]),
    ):
        assert as_outsider.get(url).status_code == 404, url


def test_a_pod_of_another_job_is_not_found_under_this_jobs_url(as_viewer):
    job = factories.train_job()
    other = factories.train_job("other")
    pod = factories.train_job_pod(other)

    assert as_viewer.get(reverse("dashboard:trainjob-pod-logs", args=[job.pk, pod.pk])).status_code == 404


def test_a_deleted_pods_logs_say_they_went_with_it(as_viewer):
    job = factories.train_job()
    pod = factories.train_job_pod(job, deleted_at=factories.T0)

    page = as_viewer.get(reverse("dashboard:trainjob-pod-logs", args=[job.pk, pod.pk])).content.decode()

    assert "its logs went with it" in page


def test_an_editor_stops_a_trainjob_in_the_cluster_and_a_viewer_may_not():
    clients = {}
    for name, role in (("editor", Role.EDITOR), ("viewer", Role.VIEWER)):
        user = User.objects.create_user(f"stop-{name}")
        NamespaceGrant.objects.create(user=user, namespace="team-a", role=role)
        clients[name] = Client()
        clients[name].force_login(user)
    with trainer_cluster("team-a"):
        manifest = manifests.train_job("doomed", "team-a")
        del manifest["metadata"]["uid"]
        created = get_client().create(TRAIN_JOB, manifest, "team-a")
        job = factories.train_job("doomed")
        TrainJob.objects.filter(pk=job.pk).update(uid=created["metadata"]["uid"])
        url = reverse("dashboard:trainjob-stop", args=[job.pk])

        assert (
            "Stop</button>"
            in clients["editor"].get(reverse("dashboard:trainjob", args=[job.pk])).content.decode()
        )
        assert (
            "Stop</button>"
            not in clients["viewer"].get(reverse("dashboard:trainjob", args=[job.pk])).content.decode()
        )
        assert clients["viewer"].post(url).status_code == 403
        assert clients["editor"].get(url).status_code == 405
        get_client().get(TRAIN_JOB, "doomed", "team-a")  # the refusals changed nothing
        stopped = clients["editor"].post(url, follow=True)
        again = clients["editor"].post(url, follow=True)

        assert get_client().list(TRAIN_JOB, "team-a")["items"] == []
    assert "is being stopped" in stopped.content.decode()
    assert "already gone" in again.content.decode()


@pytest.mark.parametrize("pods", [1, 16])
def test_the_trainjob_page_uses_a_constant_number_of_queries(as_viewer, django_assert_num_queries, pods):
    factories.runtime(generation=1)
    job = factories.train_job(runtime_generation=1, status={"trainerStatus": None})
    for index in range(pods):
        factories.train_job_pod(job, "node", index)
    # Session, user, grants, the job, its pods, its history, the runtime, its revision, any report.
    with django_assert_num_queries(9):
        response = as_viewer.get(reverse("dashboard:trainjob", args=[job.pk]))
    assert response.status_code == 200
