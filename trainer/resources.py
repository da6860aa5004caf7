"""How the controller addresses Trainer's three kinds on the API server (trainer.kubeflow.org/v1alpha1)."""

from __future__ import annotations

from kube.resources import ResourceType
from trainer import constants as c

TRAIN_JOB = ResourceType(c.API_VERSION, c.TRAIN_JOB_KIND, "trainjobs")
TRAINING_RUNTIME = ResourceType(c.API_VERSION, c.TRAINING_RUNTIME, "trainingruntimes")
CLUSTER_TRAINING_RUNTIME = ResourceType(
    c.API_VERSION, c.CLUSTER_TRAINING_RUNTIME, "clustertrainingruntimes", namespaced=False
)
RUNTIMES = {c.TRAINING_RUNTIME: TRAINING_RUNTIME, c.CLUSTER_TRAINING_RUNTIME: CLUSTER_TRAINING_RUNTIME}
