"""One of everything a page or an API operation shows, in team-a, so that every path parameter names a real
row and a hostile query reaches the code that filters, sorts, pages and plots it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import transaction

from access.models import NamespaceGrant, Role
from dashboard.tests import factories
from hyperparam.manifests import LABEL_SWEEP
from hyperparam.models import Trial

NAMESPACE = "team-a"
#: The seeded row a path's first segment after /api/ names.
API_TARGETS = {"jobs": "job", "hyperparams": "sweep", "tensorboards": "tensorboard", "trainjobs": "trainjob"}


@contextmanager
def seeded(django_db_blocker: Any) -> Iterator[dict[str, Any]]:
    """The rows, an editor of team-a, in a transaction rolled back at the end."""
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            yield _seed()
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


def _seed() -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    job = factories.job("hostile-job", NAMESPACE, phase="Failed")
    sweep = factories.sweep("hostile-sweep", NAMESPACE, workflows=[{"name": "hostile-workflow"}])
    Trial.objects.bulk_create(factories.trial_rows(sweep, 5))
    runtime = factories.runtime("hostile-runtime", NAMESPACE)
    train_job = factories.train_job(
        "hostile-tj",
        NAMESPACE,
        runtime_name="hostile-runtime",
        runtime_kind="TrainingRuntime",
        runtime_generation=1,
        labels={LABEL_SWEEP: sweep.name},  # a trial's, as docs/trainer.md's recipe labels it
    )
    factories.status_updates(train_job, 3, loss="0.5")
    editor = get_user_model().objects.create_user("hostile-editor", is_staff=True)
    NamespaceGrant.objects.create(user=editor, namespace=NAMESPACE, role=Role.EDITOR)
    return {
        "job": job,
        "replica": factories.replica(job, "worker", 0),
        "sweep": sweep,
        "tensorboard": factories.tensorboard("hostile-tb", NAMESPACE, source_name="hostile-sweep"),
        "gc-run": factories.gc_run(NAMESPACE, [(NAMESPACE, "hostile-pod")]),
        "trainjob": train_job,
        "trainjob-pod": factories.train_job_pod(train_job, "node", 0),
        "runtime": runtime,
        "editor": editor,
    }


def path_values(world: dict[str, Any], target: str) -> dict[str, object]:
    """A value for every path parameter a page or an operation has: the target row's pk, its names."""
    row = world.get(target or "job") or world["job"]
    return {
        "pk": row.pk,
        "id": row.pk,
        "replica_pk": world["replica"].pk,
        "pod_pk": world["trainjob-pod"].pk,
        "namespace": NAMESPACE,
        "kind": "TFJob",
        "name": getattr(row, "name", "hostile-job"),
        "tab": "trials",
        "format": "json",
    }
