"""The API resources of Trainer's three kinds (declared as CRDs in `kube.crds`), as the runtime
controller, the usage reader and the admin actions address them."""

from __future__ import annotations

from kube import crds

TRAIN_JOB = crds.TRAIN_JOB.resource_type
TRAINING_RUNTIME = crds.TRAINING_RUNTIME.resource_type
CLUSTER_TRAINING_RUNTIME = crds.CLUSTER_TRAINING_RUNTIME.resource_type
RUNTIMES = {rtype.kind: rtype for rtype in (TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)}
