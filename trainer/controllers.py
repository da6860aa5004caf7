"""Trainer's controllers. The runtimes: mirrored with their revisions, and reconciled only for the
`resource-in-use` finalizer, so every TrainJob event reconciles the runtime its runtimeRef names. The
runtime imports this module."""

from __future__ import annotations

from kube.controllers import Owns, register
from trainer import inuse
from trainer.mirror import RuntimeMirror
from trainer.resources import CLUSTER_TRAINING_RUNTIME, TRAIN_JOB, TRAINING_RUNTIME

register(
    TRAINING_RUNTIME,
    owns=[Owns(TRAIN_JOB, owner_name=inuse.training_runtime_used)],
    mirror=RuntimeMirror(),
)
register(
    CLUSTER_TRAINING_RUNTIME,
    owns=[Owns(TRAIN_JOB, owner_name=inuse.cluster_training_runtime_used)],
    mirror=RuntimeMirror(),
)
