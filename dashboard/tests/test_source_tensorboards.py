"""The "Open in TensorBoard" buttons of a job's, a TrainJob's and a sweep's page: shown to editors only, a
POST spawns the source's Tensorboard through tensorboard.actions (the API's own path) and goes to the
TensorBoards, a refusal is a message on the source's page naming what is missing. The simulator is the
cluster."""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings
from django.urls import reverse

from dashboard.tests import factories
from jobs import apigroups
from kube.client import reset_client
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from tensorboard.tests.cluster import get, install_crds

pytestmark = pytest.mark.django_db

NAMESPACE = "team-a"
TENSORBOARDS = "tensorboards.argoml.io"
TFJOB = {
    "apiVersion": "argoml.io/v1alpha1",
    "kind": "TFJob",
    "metadata": {"name": "mnist", "namespace": NAMESPACE},
    "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {
        "spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}}},
}  # fmt: skip
TRAIN_JOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "llama", "namespace": NAMESPACE},
    "spec": {"runtimeRef": {"name": "torch-distributed"}},
}


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with running_simulator() as simulator:
        install_crds(simulator)
        simulator.store.ensure_namespace(NAMESPACE)
        with override_settings(KUBECONFIG=str(simulator.kubeconfig_path), KUBE_IN_CLUSTER=False):
            reset_client()
            try:
                yield simulator
            finally:
                reset_client()


def page_text(response: Any) -> str:
    return html.unescape(response.content.decode())


@pytest.mark.parametrize(
    ("page", "tensorboard_url", "row"),
    [
        ("dashboard:job", "dashboard:job-tensorboard", lambda: factories.job("mnist")),
        ("dashboard:trainjob", "dashboard:trainjob-tensorboard", lambda: factories.train_job("llama")),
    ],
)
def test_an_editor_sees_the_button_and_a_viewer_neither_sees_nor_may_press_it(
    as_editor, as_viewer, page, tensorboard_url, row
):
    source = row()
    action = reverse(tensorboard_url, args=[source.pk])
    shown = page_text(as_editor.get(reverse(page, args=[source.pk])))
    assert f'<form method="post" action="{action}">' in shown
    assert "Open in TensorBoard</button>" in shown
    assert "Open in TensorBoard" not in page_text(as_viewer.get(reverse(page, args=[source.pk])))
    assert as_viewer.post(action).status_code == 403
    assert as_editor.get(action).status_code == 405


def test_a_jobs_button_spawns_its_tensorboard_at_the_configured_logdir(sim, as_editor, settings):
    settings.TENSORBOARD_JOB_LOGDIR = "pvc://training-logs/{namespace}/{name}"
    sim.store.create(TFJOB)
    job = factories.job("mnist")
    response = as_editor.post(reverse("dashboard:job-tensorboard", args=[job.pk]))

    assert response.status_code == 302
    assert response["Location"] == f"{reverse('dashboard:tensorboards')}?namespace={NAMESPACE}"
    spawned = get(sim, TENSORBOARDS, "mnist-tfjob", NAMESPACE)
    assert spawned is not None
    assert spawned["spec"]["workflowRef"] == {"kind": "TFJob", "name": "mnist"}
    assert spawned["spec"]["logdirs"] == [{"name": "mnist", "path": "pvc://training-logs/team-a/mnist"}]
    assert spawned["metadata"]["labels"]["argoml.io/tensorboard-source-kind"] == "TFJob"
    again = as_editor.post(reverse("dashboard:job-tensorboard", args=[job.pk]), follow=True)
    assert "Refreshed TensorBoard mnist-tfjob with the logs of TFJob mnist." in page_text(again)


def test_a_trainjobs_button_spawns_its_tensorboard(sim, as_editor, settings):
    settings.TENSORBOARD_JOB_LOGDIR = "s3://ml-logs/{namespace}/{name}"
    sim.store.create(TRAIN_JOB)
    job = factories.train_job("llama")
    response = as_editor.post(reverse("dashboard:trainjob-tensorboard", args=[job.pk]), follow=True)

    assert response.redirect_chain[-1][0] == f"{reverse('dashboard:tensorboards')}?namespace={NAMESPACE}"
    assert (
        "Started TensorBoard llama-trainjob with the logs of TrainJob llama; it is listed here as soon as "
        "the cluster reports it."
    ) in page_text(response)
    spawned = get(sim, TENSORBOARDS, "llama-trainjob", NAMESPACE)
    assert spawned is not None
    assert spawned["spec"]["workflowRef"] == {"kind": "TrainJob", "name": "llama"}
    assert spawned["spec"]["logdirs"] == [{"name": "llama", "path": "s3://ml-logs/team-a/llama"}]


def test_the_tensorboards_list_links_a_trainjob_source_to_its_trainjob(as_viewer):
    factories.tensorboard("llama-trainjob", source_kind="TrainJob", source_name="llama")
    shown = as_viewer.get(reverse("dashboard:tensorboards")).content.decode()
    link = f"{reverse('dashboard:trainjobs')}?namespace=team-a&amp;name=llama"
    assert f'<a href="{link}">TrainJob llama</a>' in shown


def test_without_a_job_log_directory_the_page_says_which_setting_is_missing(sim, as_editor, settings):
    settings.TENSORBOARD_JOB_LOGDIR = ""
    sim.store.create(TRAIN_JOB)
    job = factories.train_job("llama")
    response = as_editor.post(reverse("dashboard:trainjob-tensorboard", args=[job.pk]), follow=True)

    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("dashboard:trainjob", args=[job.pk])
    assert (
        "No TensorBoard for llama: TrainJob llama: training jobs record no artifacts, and no job log "
        "directory is configured (TENSORBOARD_JOB_LOGDIR, e.g. s3://ml-logs/{namespace}/{name})."
    ) in page_text(response)
    assert get(sim, TENSORBOARDS, "llama-trainjob", NAMESPACE) is None


def test_a_sweep_without_trials_yet_says_so_on_its_page(sim, as_editor):
    sim.store.create(
        {"apiVersion": "argoml.io/v1alpha1", "kind": "HyperparamWorkflow",
         "metadata": {"name": "lr-sweep", "namespace": NAMESPACE}, "spec": factories.sweep(save=False).spec}
    )  # fmt: skip
    sweep = factories.sweep("lr-sweep")
    response = as_editor.post(reverse("dashboard:sweep-tensorboard", args=[sweep.pk]), follow=True)

    assert response.redirect_chain[-1][0] == reverse("dashboard:sweep", args=[sweep.pk])
    assert "No TensorBoard for lr-sweep: HyperparamWorkflow lr-sweep has started no Workflows yet" in (
        page_text(response)
    )
    assert get(sim, TENSORBOARDS, "lr-sweep-hpw", NAMESPACE) is None


def test_a_kubeflow_group_job_has_a_disabled_button_saying_why(sim, as_editor, settings):
    settings.TENSORBOARD_JOB_LOGDIR = "s3://ml-logs/{namespace}/{name}"
    job = factories.job("kf-mnist", api_group=apigroups.KUBEFLOW_GROUP)
    why = "TensorBoard opens TFJobs of argoml.io/v1alpha1 only; this one is kubeflow.org/v1."
    shown = page_text(as_editor.get(reverse("dashboard:job", args=[job.pk])))
    assert f'<button type="submit" disabled title="{why}">Open in TensorBoard</button>' in shown
    response = as_editor.post(reverse("dashboard:job-tensorboard", args=[job.pk]), follow=True)
    assert f"No TensorBoard for kf-mnist: {why}" in page_text(response)
    assert get(sim, TENSORBOARDS, "kf-mnist-tfjob", NAMESPACE) is None
