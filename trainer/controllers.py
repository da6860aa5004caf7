"""The TrainJob controller: TrainJobs are reconciled (trainer/reconcile.py) and mirrored into TrainJob rows;
their pods, headless Service and MPI hostfile ConfigMap are watched by the JobSet name label JobSet would
have set (so no unrelated pod is cached), the pods mirrored into TrainJobPod rows. Both runtime kinds are
watched too, only so that reconciles read them from the cache: they lead back to no TrainJob. The runtime
imports this module (kube.controllers discovers `<app>/controllers.py`)."""

from __future__ import annotations

from django.conf import settings

from kube.controllers import Owns, register
from kube.mirror import mirror_handler
from kube.resources import CONFIGMAP, POD, SERVICE
from trainer import constants as c
from trainer.models import TrainJob, TrainJobPod
from trainer.resources import CLUSTER_TRAINING_RUNTIME, TRAIN_JOB, TRAINING_RUNTIME


def enabled() -> bool:
    """TRAINER_ENABLED: Trainer's kinds are ours (off by default, as their CRDs are installed only on
    request: without them the controller's informers would fail to list forever)."""
    return bool(getattr(settings, "TRAINER_ENABLED", False))


if enabled():
    register(
        TRAIN_JOB,
        owns=[
            Owns(POD, label_selector=c.LABEL_JOBSET_NAME, mirror=mirror_handler(TrainJobPod)),
            Owns(SERVICE, label_selector=c.LABEL_JOBSET_NAME),
            Owns(CONFIGMAP, label_selector=c.LABEL_JOBSET_NAME),  # MPI's hostfile
            Owns(TRAINING_RUNTIME),
            Owns(CLUSTER_TRAINING_RUNTIME),
        ],
        mirror=mirror_handler(TrainJob),
    )
