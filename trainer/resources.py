"""The API resources of Trainer's three kinds, for the kube client and the controllers.

h1's CRDs (`kube.crds.trainer`) declare the same kinds; these are the plain ResourceTypes the runtime
controller and the admin actions address, so they do not depend on how the CRDs are built.
"""

from __future__ import annotations

from kube.resources import ResourceType
from trainer import constants as c

TRAIN_JOB = ResourceType(c.API_VERSION, c.TRAIN_JOB_KIND, "trainjobs")
TRAINING_RUNTIME = ResourceType(c.API_VERSION, c.TRAINING_RUNTIME, "trainingruntimes")
CLUSTER_TRAINING_RUNTIME = ResourceType(
    c.API_VERSION, c.CLUSTER_TRAINING_RUNTIME, "clustertrainingruntimes", namespaced=False
)
RUNTIME_RESOURCES = {rtype.kind: rtype for rtype in (TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)}
