"""Which TrainJobs use a runtime, read from the cluster: the same answer the finalizer is decided from,
for the runtime controller when it has no cache and for the admin's change and delete pages."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kube.client import KubeClient
from trainer import constants as c
from trainer.resources import TRAIN_JOB
from trainer.runtimes import inuse


def jobs_using(client: KubeClient, kind: str, namespace: str, name: str) -> Iterator[dict[str, Any]]:
    """The TrainJobs referencing a runtime, listed in pages (a TrainingRuntime's only in its namespace;
    a ClusterTrainingRuntime's in every namespace)."""
    scope = namespace if kind == c.TRAINING_RUNTIME else None
    for page in client.list_pages(TRAIN_JOB, scope):
        for job in page.get("items") or ():
            if inuse.uses(job, kind, namespace, name):
                yield job
