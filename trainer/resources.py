"""The API resources of Trainer's three kinds (declared as CRDs in `trainer.crd` and `trainer.runtimes.crd`),
as the runtime controller, the usage reader and the admin actions address them."""

from __future__ import annotations

from trainer import crd
from trainer.runtimes import crd as runtime_crds

TRAIN_JOB = crd.TRAIN_JOB.resource_type
TRAINING_RUNTIME = runtime_crds.TRAINING_RUNTIME.resource_type
CLUSTER_TRAINING_RUNTIME = runtime_crds.CLUSTER_TRAINING_RUNTIME.resource_type
RUNTIMES = {rtype.kind: rtype for rtype in (TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)}
