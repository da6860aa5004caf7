"""A job's and a TrainJob's Events, read from the cluster: the newest first, each with its count and when it
was last seen, whether it was written through events.k8s.io/v1 (the jobs' recorder) or core v1 (the
trainer's). kubesim is the cluster."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from dashboard.tests import factories
from kube.client import get_client, reset_client
from kube.events import EventRecorder
from kube.resources import CORE_EVENT, EVENT

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(kubesim, settings):
    settings.KUBECONFIG = str(kubesim.kubeconfig_path)
    settings.KUBE_IN_CLUSTER = False
    reset_client()
    kubesim.store.ensure_namespace("team-a")
    yield kubesim
    reset_client()


def regarding(row, api_version: str, kind: str) -> dict:
    metadata = {"namespace": row.namespace, "name": row.name, "uid": row.uid}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


def recorder(api, at: datetime) -> EventRecorder:
    return EventRecorder("test", api=api, client=get_client(), wall_clock=lambda: at)


def table_rows(page: str) -> list[list[str]]:
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr class.*?</tr>", page, re.S)]


@pytest.mark.parametrize("api", [EVENT, CORE_EVENT], ids=["events.k8s.io", "core"])
def test_a_trainjobs_events_show_their_count_and_when_last_seen_newest_first(cluster, as_viewer, api):
    """Issue 29: the trainer records through core v1, whose Events read with no eventTime; the page was a
    500 on every `make run` with a TrainJob."""
    job = factories.train_job("mnist-torch")
    subject = regarding(job, "trainer.kubeflow.org/v1alpha1", "TrainJob")
    early = recorder(api, datetime(2026, 6, 1, 8, 0, 5, tzinfo=UTC))
    early.normal(subject, "SuccessfulCreateService", "Created service: mnist-torch", action="Create")
    late = recorder(api, datetime(2026, 6, 1, 8, 0, 9, tzinfo=UTC))
    for _ in range(2):  # a repeat: the same Event counted twice
        late.warning(subject, "FailedCreatePod", "pods are forbidden", action="Create")

    response = as_viewer.get(reverse("dashboard:trainjob-events", args=[job.pk]))

    assert response.status_code == 200
    assert table_rows(response.content.decode()) == [
        ["Warning", "FailedCreatePod", "pods are forbidden", "2", "2026-06-01 08:00:09"],
        ["Normal", "SuccessfulCreateService", "Created service: mnist-torch", "1", "2026-06-01 08:00:05"],
    ]


def test_a_jobs_events_come_from_the_same_table(cluster, as_viewer):
    job = factories.job("mnist")
    at = datetime(2026, 6, 1, 8, 0, 5, tzinfo=UTC)
    subject = regarding(job, "kubeflow.org/v1", "TFJob")
    recorder(EVENT, at).normal(subject, "SuccessfulCreatePod", "Created pod", action="Create")

    response = as_viewer.get(reverse("dashboard:job-events", args=[job.pk]))

    assert table_rows(response.content.decode()) == [
        ["Normal", "SuccessfulCreatePod", "Created pod", "1", "2026-06-01 08:00:05"]
    ]
