"""The mirror of Tensorboards: rows with phase, URL, source and last access, and the history of phases."""

from __future__ import annotations

from typing import Any

import pytest

from kube.controller.mirror import apply_event
from tensorboard.models import Tensorboard

pytestmark = pytest.mark.django_db


def tensorboard(resource_version: str, status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "Tensorboard",
        "metadata": {
            "name": "mnist",
            "namespace": "team-a",
            "uid": "tb-uid",
            "resourceVersion": resource_version,
            "generation": 1,
            "creationTimestamp": "2025-03-01T09:00:00Z",
            "annotations": {"argoml.io/last-access": "2025-03-01T09:30:00Z"},
        },
        "spec": {"logdirs": [{"name": "a", "path": "s3://ml/a"}], **spec},
        "status": status or {},
    }


def test_a_row_carries_phase_url_source_and_last_access():
    status = {"phase": "Ready", "url": "http://tb/", "lastAccess": "2025-03-01T10:00:00Z"}
    apply_event(
        Tensorboard, "ADDED", tensorboard("1", status, workflowRef={"kind": "Workflow", "name": "mnist"})
    )
    row = Tensorboard.objects.get()
    assert (row.phase, row.url, row.source_kind, row.source_name, row.source) == (
        "Ready",
        "http://tb/",
        "Workflow",
        "mnist",
        "Workflow mnist",
    )
    assert row.last_access.isoformat() == "2025-03-01T10:00:00+00:00"
    assert row.logdirs == [{"name": "a", "path": "s3://ml/a"}]


def test_an_instance_of_logdirs_named_directly_has_no_source():
    apply_event(Tensorboard, "ADDED", tensorboard("1"))
    row = Tensorboard.objects.get()
    assert (row.source_kind, row.source_name, row.source) == ("", "", "")


def test_phase_changes_are_kept_in_the_history_and_deletion_keeps_the_row():
    apply_event(Tensorboard, "ADDED", tensorboard("1", {"phase": "Pending"}))
    apply_event(Tensorboard, "MODIFIED", tensorboard("2", {"phase": "Ready"}))
    apply_event(Tensorboard, "DELETED", tensorboard("3", {"phase": "Ready"}))
    row = Tensorboard.objects.get()
    assert row.deleted_at is not None
    assert [entry.phase for entry in row.history.all()][:2] == ["Pending", "Ready"]


def test_culling_is_scheduled_every_five_minutes_on_the_default_queue():
    from django_celery_beat.models import PeriodicTask

    task = PeriodicTask.objects.get(name="tensorboard.cull_idle")
    assert (task.task, task.queue, task.interval.every, task.interval.period, task.enabled) == (
        "tensorboard.cull_idle",
        "default",
        300,
        "seconds",
        True,
    )
