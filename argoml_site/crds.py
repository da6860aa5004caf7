"""Every app's custom resource kinds in one list, for the commands that render and install them (see
docs/adding-a-resource.md). Each schema lives beside the app whose fields it describes (`jobs/crd.py`,
`hyperparam/crd.py`, `tensorboard/crd.py`, `trainer/crd.py`, `trainer/runtimes/crd.py`); `kube.crds` is
the machinery they are built, rendered and installed with, and imports none of them, so the list of
kinds is kept here, in the site that knows every app.

`CUSTOM_RESOURCES` is the list `render_crds` and `install_crds` work from; `KUBEFLOW_RESOURCES` are the
training kinds again in Kubeflow's group (`kubeflow.org/v1`), rendered into deploy/crds/kubeflow/ and
installed only on request; `TRAINER_RESOURCES` are Kubeflow Trainer v2's kinds
(`trainer.kubeflow.org/v1alpha1`: TrainJob and its runtimes), in deploy/crds/trainer/, likewise on
request."""

from __future__ import annotations

from hyperparam.crd import HYPERPARAM_WORKFLOW
from jobs.crd import JAXJOB, KUBEFLOW_JOBS, MPIJOB, MXJOB, PADDLEJOB, PYTORCHJOB, TFJOB, XGBOOSTJOB
from kube.crds import CustomResource
from tensorboard.crd import TENSORBOARD
from trainer.crd import TRAIN_JOB
from trainer.runtimes.crd import CLUSTER_TRAINING_RUNTIME, TRAINING_RUNTIME

CUSTOM_RESOURCES: tuple[CustomResource, ...] = (
    TFJOB,
    MXJOB,
    PYTORCHJOB,
    XGBOOSTJOB,
    JAXJOB,
    PADDLEJOB,
    MPIJOB,
    HYPERPARAM_WORKFLOW,
    TENSORBOARD,
)
KUBEFLOW_RESOURCES: tuple[CustomResource, ...] = KUBEFLOW_JOBS
#: Installed only on request (`install_crds --trainer`, the chart's `trainer.installCRDs`), like Kubeflow's.
TRAINER_RESOURCES: tuple[CustomResource, ...] = (TRAIN_JOB, TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)


def by_kind(kind: str) -> CustomResource:
    for resource in CUSTOM_RESOURCES:
        if resource.kind == kind:
            return resource
    known = ", ".join(resource.kind for resource in CUSTOM_RESOURCES)
    raise LookupError(f"{kind!r} is not one of our kinds ({known})")
