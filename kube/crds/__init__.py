"""Our custom resource kinds, declared once in Python and rendered into deploy/crds/ (see
docs/adding-a-resource.md). `CUSTOM_RESOURCES` is the list `render_crds` and `install_crds` work from;
`KUBEFLOW_RESOURCES` are the training kinds again in Kubeflow's group (`kubeflow.org/v1`), rendered into
deploy/crds/kubeflow/ and installed only on request; `TRAINER_RESOURCES` are Kubeflow Trainer v2's kinds
(`trainer.kubeflow.org/v1alpha1`: TrainJob and its runtimes), in deploy/crds/trainer/, likewise on request."""

from __future__ import annotations

from .definition import GROUP, VERSION, CustomResource, PrinterColumn
from .hyperparam import HYPERPARAM_WORKFLOW
from .jobs import JAXJOB, KUBEFLOW_JOBS, MPIJOB, MXJOB, PADDLEJOB, PYTORCHJOB, TFJOB, XGBOOSTJOB
from .tensorboard import TENSORBOARD
from .trainer import TRAIN_JOB
from .trainingruntime import CLUSTER_TRAINING_RUNTIME, TRAINING_RUNTIME

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


__all__ = [
    "CLUSTER_TRAINING_RUNTIME",
    "CUSTOM_RESOURCES",
    "GROUP",
    "HYPERPARAM_WORKFLOW",
    "JAXJOB",
    "KUBEFLOW_RESOURCES",
    "MPIJOB",
    "MXJOB",
    "PADDLEJOB",
    "PYTORCHJOB",
    "TENSORBOARD",
    "TFJOB",
    "TRAINER_RESOURCES",
    "TRAINING_RUNTIME",
    "TRAIN_JOB",
    "VERSION",
    "XGBOOSTJOB",
    "CustomResource",
    "PrinterColumn",
    "by_kind",
]
