"""The runtimes end to end on the simulator: informers → mirror → revisions, TrainJob events → the
runtime's reconcile → its finalizer, and an admin edit coming back as a revision under the admin's name."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
import yaml
from django.db import connection

from kube.client import get_client
from kube.controller.queue import registry as reconcilers
from kube.controller.runtime import ControllerRuntime
from trainer.controllers import runtime_controllers
from trainer.models import RuntimeRevision, TrainingRuntime
from trainer.resources import CLUSTER_TRAINING_RUNTIME, TRAIN_JOB
from trainer.runtimes.mirror import RuntimeMirror
from trainer.tests.runtime_cluster import job_using, torch_distributed, trainer_cluster

pytestmark = pytest.mark.django_db(transaction=True)


def mirror_and_close(event_type: str, obj: dict[str, Any]) -> None:
    """The registered mirror; the watch thread's connection is closed after each event so the test
    database can be dropped at the end."""
    try:
        RuntimeMirror()(event_type, obj)
    finally:
        connection.close()


def reconcile_now(kind: str, namespace: str, name: str) -> None:
    """Instead of the queue: run the key's reconcile at once, on the enqueueing thread."""
    reconcilers.lookup(kind)(namespace, name)


@pytest.fixture
def operator() -> Iterator[ControllerRuntime]:
    with trainer_cluster("team-a"):
        controllers = [replace(ctl, mirror=mirror_and_close) for ctl in runtime_controllers()]
        running = ControllerRuntime(get_client(), controllers, enqueue=reconcile_now)
        running.start()
        try:
            assert running.wait_synced(5)
            yield running
        finally:
            running.stop()
            running.join(5)


def eventually(condition: Callable[[], Any], what: str, timeout: float = 10.0) -> Any:
    pause = threading.Event()
    for _ in range(int(timeout / 0.05)):
        found = condition()
        if found:
            return found
        pause.wait(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def revisions_seen() -> list[tuple[int, str, bool]]:
    return [
        (revision.generation, revision.changed_by, bool(revision.diff))
        for revision in RuntimeRevision.objects.order_by("generation")
    ]


def test_a_runtimes_life_is_mirrored_with_its_revisions_and_protected_while_in_use(operator, admin_client):
    client = get_client()
    client.create(CLUSTER_TRAINING_RUNTIME, torch_distributed())
    runtime = eventually(lambda: TrainingRuntime.objects.filter(name="torch-distributed").first(), "the row")
    assert revisions_seen() == [(1, "", False)]

    spec = {**runtime.spec, "mlPolicy": {**runtime.spec["mlPolicy"], "numNodes": 2}}
    response = admin_client.post(
        f"/admin/trainer/trainingruntime/{runtime.pk}/spec/", {"spec": yaml.safe_dump(spec)}
    )
    assert response.status_code == 302
    eventually(lambda: len(revisions_seen()) == 2, "the admin's revision")
    assert revisions_seen()[1] == (2, "admin", True)

    client.create(TRAIN_JOB, job_using("mnist", "team-a"))
    eventually(lambda: TrainingRuntime.objects.get().in_use, "the finalizer, mirrored")

    client.delete(CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    eventually(lambda: TrainingRuntime.objects.get().deleting_since, "Terminating, mirrored")
    assert revisions_seen()[2] == (3, "", False)  # the deletion's generation, no change to the spec
    assert TrainingRuntime.objects.get().deleted_at is None

    client.delete(TRAIN_JOB, "mnist", "team-a")
    eventually(lambda: TrainingRuntime.objects.get().deleted_at, "the runtime gone once its TrainJob is")
    assert len(revisions_seen()) == 3
