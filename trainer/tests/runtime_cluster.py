"""The simulator as the cluster of the runtime tests: Trainer's CRDs, a ready-made runtime, TrainJobs
that reference it, and settings pointing get_client() (with the shipped write limiter) at it."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.test import override_settings

from argoml_site.crds import TRAINER_RESOURCES
from kube.client import reset_client
from kubesim.errors import ApiError
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from trainer import constants as c
from trainer.runtimes import catalog
from trainer.tests.factories import train_job


def install_trainer_crds(sim: Simulator) -> None:
    """Trainer's CRDs, as `manage.py install_crds --trainer` applies them (idempotent)."""
    for resource in TRAINER_RESOURCES:
        try:
            sim.store.create(resource.manifest())
        except ApiError as error:
            if error.code != 409:
                raise


@contextmanager
def trainer_cluster(*namespaces: str) -> Iterator[Simulator]:
    """A simulator with Trainer's CRDs and the namespaces, the process's client pointed at it."""
    with running_simulator() as sim:
        install_trainer_crds(sim)
        for namespace in namespaces:
            sim.store.ensure_namespace(namespace)
        with override_settings(KUBECONFIG=str(sim.kubeconfig_path), KUBE_IN_CLUSTER=False):
            reset_client()
            try:
                yield sim
            finally:
                reset_client()


def torch_distributed(
    *, kind: str = c.CLUSTER_TRAINING_RUNTIME, namespace: str | None = None
) -> dict[str, Any]:
    """The ready-made torch-distributed runtime, or the same spec as a TrainingRuntime in `namespace`."""
    runtime = copy.deepcopy(
        next(r for r in catalog.ready_made_runtimes() if r["metadata"]["name"] == "torch-distributed")
    )
    runtime["kind"] = kind
    if namespace:
        runtime["metadata"]["namespace"] = namespace
    return runtime


def job_using(
    name: str, namespace: str, runtime: str = "torch-distributed", kind: str | None = None
) -> dict[str, Any]:
    job = train_job(name, namespace, runtime_name=runtime, runtime_kind=kind)
    job["metadata"].pop("uid")
    return job
