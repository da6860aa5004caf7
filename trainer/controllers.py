"""Trainer's controllers. TrainJobs are reconciled (trainer/reconcile.py) and mirrored into TrainJob
rows; their pods, headless Service and MPI hostfile ConfigMap are watched by the JobSet name label JobSet
would have set (so no unrelated pod is cached), the pods mirrored into TrainJobPod rows. Both runtime kinds
are mirrored with their revisions and reconciled only for the `resource-in-use` finalizer
(trainer/runtimes/finalizer.py): every TrainJob event reconciles the runtime its runtimeRef names, and the
TrainJob reconcile reads runtimes from the same informers' cache. The runtime and the queue import this
module (kube.controller.registry discovers `<app>/controllers.py`); the reconcilers are registered whatever
TRAINER_ENABLED says, the kinds watched only with it."""

from __future__ import annotations

from django.conf import settings

from kube.controller.mirror import mirror_handler
from kube.controller.registry import Controller, Owns, register
from kube.resources import CONFIGMAP, POD, SERVICE
from trainer import constants as c
from trainer.models import TrainJob, TrainJobPod
from trainer.reconcile import reconcile_train_job
from trainer.resources import CLUSTER_TRAINING_RUNTIME, TRAIN_JOB, TRAINING_RUNTIME
from trainer.runtimes import finalizer, inuse
from trainer.runtimes.mirror import RuntimeMirror


def enabled() -> bool:
    """TRAINER_ENABLED: Trainer's kinds are ours (off by default, as their CRDs are installed only on
    request: without them the controller's informers would fail to list forever)."""
    return bool(getattr(settings, "TRAINER_ENABLED", False))


def declaration() -> Controller:
    """The TrainJob controller, as `register` records it (the RBAC test reads it whatever TRAINER_ENABLED
    says)."""
    return Controller(
        TRAIN_JOB,
        owns=(
            Owns(POD, label_selector=c.LABEL_JOBSET_NAME, mirror=mirror_handler(TrainJobPod)),
            Owns(SERVICE, label_selector=c.LABEL_JOBSET_NAME),
            Owns(CONFIGMAP, label_selector=c.LABEL_JOBSET_NAME),  # MPI's hostfile
            Owns(TRAINING_RUNTIME),
            Owns(CLUSTER_TRAINING_RUNTIME),
        ),
        mirror=mirror_handler(TrainJob),
    )


def runtime_controllers() -> list[Controller]:
    """The controllers of both runtime kinds: mirrored, and reconciled by each TrainJob that names one."""
    return [
        Controller(
            TRAINING_RUNTIME,
            owns=(Owns(TRAIN_JOB, owner_name=inuse.training_runtime_used),),
            mirror=RuntimeMirror(),
        ),
        Controller(
            CLUSTER_TRAINING_RUNTIME,
            owns=(Owns(TRAIN_JOB, owner_name=inuse.cluster_training_runtime_used),),
            mirror=RuntimeMirror(),
        ),
    ]


#: Each kind's reconcile: the TrainJob loop, and the runtimes' in-use finalizer.
RECONCILERS = {
    TRAIN_JOB.kind: reconcile_train_job,
    TRAINING_RUNTIME.kind: finalizer.reconcile_training_runtime,
    CLUSTER_TRAINING_RUNTIME.kind: finalizer.reconcile_cluster_training_runtime,
}

for _controller in [declaration(), *runtime_controllers()]:
    register(
        _controller.rtype,
        RECONCILERS[_controller.kind],
        owns=_controller.owns,
        mirror=_controller.mirror,
        watch=enabled(),
    )
