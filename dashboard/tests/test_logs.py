"""A replica's logs come from the cluster's pods/log endpoint through kube's client (`KubeClient.logs`),
followed while the pod runs, with a clear message once it is gone. kubesim's kubelet is the cluster."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from django.utils import timezone

from dashboard.tests import factories
from kube.client import get_client, reset_client
from kube.errors import ApiError, NotFound
from kubesim.kubelet import SCRIPT_ANNOTATION

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(kubesim_factory, settings):
    """kubesim (frozen clock, with its kubelet) as the configured cluster."""
    sim = kubesim_factory(frozen_clock=True, kubelet=True)
    settings.KUBECONFIG = str(sim.kubeconfig_path)
    settings.KUBE_IN_CLUSTER = False
    reset_client()
    sim.store.ensure_namespace("team-a")
    yield sim
    reset_client()


def start_pod(sim, name: str, output: list[str], duration: float = 10) -> None:
    script = {"tensorflow": {"duration": duration, "output": output}}
    sim.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "team-a",
                "annotations": {SCRIPT_ANNOTATION: json.dumps(script)},
            },
            "spec": {"containers": [{"name": "tensorflow", "image": "example.io/train:1"}]},
        }
    )
    sim.advance(2)


def test_the_client_reads_a_pods_output_bounded_by_tail_lines(cluster):
    start_pod(cluster, "mnist-worker-0", ["epoch 1", "epoch 2", "epoch 3"], duration=3)
    cluster.advance(5)
    assert (
        get_client().logs("mnist-worker-0", "team-a", container="tensorflow") == "epoch 1\nepoch 2\nepoch 3\n"
    )
    assert get_client().logs("mnist-worker-0", "team-a", container="tensorflow", tail_lines=1) == "epoch 3\n"


def test_the_client_raises_not_found_for_a_pod_that_is_gone(cluster):
    with pytest.raises(NotFound):
        get_client().logs("absent", "team-a")


def test_the_client_raises_the_apiservers_error_for_a_container_still_waiting(cluster):
    cluster.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "waiting", "namespace": "team-a"},
            "spec": {"containers": [{"name": "tensorflow", "image": "x"}]},
        }
    )
    with pytest.raises(ApiError, match="waiting to start"):
        get_client().logs("waiting", "team-a", container="tensorflow")


def test_the_logs_page_shows_the_output_and_follows_while_the_pod_runs(cluster, as_viewer):
    start_pod(cluster, "mnist-worker-0", ["loading data", "epoch 1 loss=0.9"])
    job = factories.job("mnist")
    replica = factories.replica(job, "worker", 0, phase="Running")
    url = reverse("dashboard:replica-logs", args=[job.pk, replica.pk])
    page = as_viewer.get(url).content.decode()
    assert "loading data" in page
    assert "Following live" in page
    assert 'hx-trigger="every' in page
    fragment = as_viewer.get(url, HTTP_HX_REQUEST="true")
    assert fragment.content.lstrip().startswith(b'<div id="replica-logs"')


def test_the_logs_of_a_finished_pod_stop_following(cluster, as_viewer):
    start_pod(cluster, "mnist-worker-0", ["done"], duration=1)
    cluster.advance(3)
    job = factories.job("mnist")
    replica = factories.replica(job, "worker", 0, phase="Succeeded", exit_code=0)
    page = as_viewer.get(reverse("dashboard:replica-logs", args=[job.pk, replica.pk])).content.decode()
    assert "done" in page
    assert "hx-trigger" not in page


def test_a_pod_gone_from_the_cluster_gets_a_clear_message(cluster, as_viewer):
    job = factories.job("mnist")
    replica = factories.replica(job, "worker", 0, phase="Running")
    page = as_viewer.get(reverse("dashboard:replica-logs", args=[job.pk, replica.pk])).content.decode()
    assert "no longer exists in the cluster: its logs went with it" in page


def test_a_pod_the_mirror_saw_deleted_is_not_asked_for(as_viewer, settings):
    settings.KUBECONFIG = "/nonexistent"  # the cluster must not be called
    job = factories.job("mnist")
    replica = factories.replica(job, "worker", 0, phase="Failed", deleted_at=timezone.now())
    page = as_viewer.get(reverse("dashboard:replica-logs", args=[job.pk, replica.pk])).content.decode()
    assert "was deleted at" in page
    assert "hx-trigger" not in page


def test_logs_of_a_job_outside_the_users_namespaces_are_not_found(as_outsider):
    job = factories.job("mnist")
    replica = factories.replica(job, "worker", 0)
    assert as_outsider.get(reverse("dashboard:replica-logs", args=[job.pk, replica.pk])).status_code == 404
