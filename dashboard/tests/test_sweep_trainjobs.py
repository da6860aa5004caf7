"""A sweep's trials as TrainJobs: which TrainJobs belong to a sweep (its labels, its namespace, not an
older sweep's of the same name), and each metric of theirs plotted side by side on the sweep's page."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.urls import reverse

from dashboard.tests import factories
from dashboard.views.trainjobs import MAX_SIDE_BY_SIDE, sweep_train_jobs
from hyperparam import actions
from hyperparam.manifests import LABEL_SWEEP, LABEL_SWEEP_UID
from trainer.models import TrainJob

pytestmark = pytest.mark.django_db


def test_a_sweeps_trainjobs_are_those_labelled_with_its_uid_or_its_name_since_it_was_created():
    sweep = factories.sweep(created_at=factories.T0)
    by_uid = factories.train_job("by-uid", labels={LABEL_SWEEP_UID: sweep.uid})
    by_name = factories.train_job(
        "by-name", labels={LABEL_SWEEP: sweep.name}, created_at=factories.T0 + timedelta(minutes=1)
    )
    factories.train_job(
        "older-namesake", labels={LABEL_SWEEP: sweep.name}, created_at=factories.T0 - timedelta(days=1)
    )
    factories.train_job("other-namespace", "team-b", labels={LABEL_SWEEP_UID: sweep.uid})
    factories.train_job("other-sweep", labels={LABEL_SWEEP_UID: "another-uid"})
    factories.train_job("unlabelled")

    assert list(sweep_train_jobs(sweep)) == [by_uid, by_name]


def test_the_sweep_page_plots_every_trials_trainjob_side_by_side(as_viewer, django_assert_max_num_queries):
    sweep = factories.sweep()
    for index in range(3):
        job = factories.train_job(
            f"trial-{index}",
            labels={LABEL_SWEEP_UID: sweep.uid},
            created_at=factories.T0 + timedelta(minutes=index),
        )
        factories.status_updates(job, 4, accuracy=str(index / 10))

    page = as_viewer.get(reverse("dashboard:sweep", args=[sweep.pk])).content.decode()
    with django_assert_max_num_queries(6):  # session, user, grants, the sweep, its TrainJobs, their reports
        body = as_viewer.get(reverse("dashboard:sweep-trainjob-plots", args=[sweep.pk])).json()

    assert reverse("dashboard:sweep-trainjob-plots", args=[sweep.pk]) in page
    assert "trainplots.js" in page
    assert body["trials"] == 3
    assert [m["name"] for m in body["metrics"]] == ["loss", "accuracy"]
    accuracy = body["metrics"][1]["figure"]["data"]
    assert [line["name"] for line in accuracy] == ["trial-0", "trial-1", "trial-2"]
    assert [line["y"][0] for line in accuracy] == [0.0, 0.1, 0.2]
    assert body["truncated"] is False


def test_a_sweep_without_trainjobs_shows_no_side_by_side_section(as_viewer):
    sweep = factories.sweep()

    page = as_viewer.get(reverse("dashboard:sweep", args=[sweep.pk])).content.decode()

    assert "sweep-trainjob-plots" not in page
    assert "trainplots.js" not in page


def test_past_the_limit_the_first_trainjobs_are_plotted_and_the_answer_says_so(as_viewer):
    sweep = factories.sweep()
    for index in range(MAX_SIDE_BY_SIDE + 2):
        factories.train_job(
            f"t-{index:03d}",
            labels={LABEL_SWEEP_UID: sweep.uid},
            created_at=factories.T0 + timedelta(seconds=index),
        )

    body = as_viewer.get(reverse("dashboard:sweep-trainjob-plots", args=[sweep.pk])).json()

    assert body["trials"] == MAX_SIDE_BY_SIDE
    assert body["truncated"] is True


def test_the_sweep_page_its_trainjob_plots_and_a_trainjobs_events_answer_on_every_database(as_viewer):
    """Issue 29: on SQLite (`make run`) the sweep's TrainJobs were looked up with JSON containment, which
    SQLite cannot run, so every sweep's page and its `trainjobs.json` were a 500."""
    sweep = factories.sweep()
    job = factories.train_job("trial", labels={LABEL_SWEEP: sweep.name})
    factories.status_updates(job, 2)

    pages = [
        reverse("dashboard:sweep", args=[sweep.pk]),
        reverse("dashboard:sweep-trainjob-plots", args=[sweep.pk]),
        reverse("dashboard:trainjob", args=[job.pk]),
        reverse("dashboard:trainjob-events", args=[job.pk]),
    ]
    answers = {url: as_viewer.get(url) for url in pages}

    assert {url: answer.status_code for url, answer in answers.items()} == dict.fromkeys(pages, 200)
    assert answers[pages[1]].json()["trials"] == 1


def test_trainjobs_mirrored_before_the_sweep_columns_get_them_from_their_labels():
    """The migration that added `sweep_label` and `sweep_uid` fills them for the rows already there."""
    sweep = factories.sweep(created_at=factories.T0)
    by_name = factories.train_job("by-name", labels={LABEL_SWEEP: sweep.name})
    by_uid = factories.train_job("by-uid", labels={LABEL_SWEEP_UID: sweep.uid, "app": "x"})
    factories.train_job("unlabelled", labels={"app": "x"})
    TrainJob.objects.update(sweep_label="", sweep_uid="")  # as the rows were before the migration
    assert list(sweep_train_jobs(sweep)) == []

    migration = importlib.import_module("trainer.migrations.0003_trainjob_sweep_columns")
    migration.fill_sweep_columns(apps, None)

    assert list(sweep_train_jobs(sweep)) == [by_name, by_uid]
    assert TrainJob.objects.filter(sweep_label="", sweep_uid="").count() == 1


def test_another_tenants_sweep_trainjobs_are_not_found(as_outsider):
    sweep = factories.sweep()
    factories.train_job("trial", labels={LABEL_SWEEP_UID: sweep.uid})

    assert as_outsider.get(reverse("dashboard:sweep-trainjob-plots", args=[sweep.pk])).status_code == 404


TRIAL_TRAINJOB = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  generateName: lr-sweep-
  labels:
    argoml.io/hyperparam-workflow: "{{workflow.labels.argoml.io/hyperparam-workflow}}"
spec:
  runtimeRef: {name: torch-distributed}
  trainer:
    image: example.io/train:1
    args: ["--lr", "{{inputs.parameters.lr}}"]
"""


def sweep_running_trainjobs(label_key: str) -> dict:
    manifest = TRIAL_TRAINJOB.replace("argoml.io/hyperparam-workflow", label_key)
    template = {"action": "create", "setOwnerReference": True, "manifest": manifest}
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "HyperparamWorkflow",
        "metadata": {"name": "lr-sweep", "namespace": "team-a"},
        "spec": {
            "workflow": {
                "entrypoint": "train",
                "templates": [
                    {"name": "train", "inputs": {"parameters": [{"name": "lr"}]}, "resource": template}
                ],
            },
            "hyperparams": [{"name": "lr", "values": ["0.1", "0.01"]}],
        },
    }


def test_the_documented_trial_template_is_accepted_and_the_uid_label_would_not_be():
    """docs/trainer.md's recipe passes the sweep's admission (its generated Workflow is linted); the uid
    label cannot be copied, as the Workflow linted at creation has no uid label yet."""
    assert actions.check_manifest(sweep_running_trainjobs(LABEL_SWEEP)) == []
    refused = actions.check_manifest(sweep_running_trainjobs(LABEL_SWEEP_UID))
    assert any(
        "failed to resolve {{workflow.labels.argoml.io/hyperparam-workflow-uid}}" in e.message
        for e in refused
    )
