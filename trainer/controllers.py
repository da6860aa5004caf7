"""Trainer's controllers. The runtimes: mirrored with their revisions, and reconciled only for the
`resource-in-use` finalizer, so every TrainJob event reconciles the runtime its runtimeRef names. The
runtime imports this module."""

from __future__ import annotations

from django.conf import settings

from kube.controllers import Controller, Owns, register
from trainer import inuse
from trainer.mirror import RuntimeMirror
from trainer.resources import CLUSTER_TRAINING_RUNTIME, TRAIN_JOB, TRAINING_RUNTIME


def enabled() -> bool:
    """TRAINER_CONTROLLER: watch Trainer's kinds (off by default, as Trainer's CRDs are installed only on
    request: without them the informers would fail to list forever)."""
    return bool(getattr(settings, "TRAINER_CONTROLLER", False))


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


if enabled():
    for _controller in runtime_controllers():
        register(_controller.rtype, owns=_controller.owns, mirror=_controller.mirror)
