"""Our custom resource kinds, declared once in Python and rendered into deploy/crds/ (see
docs/adding-a-resource.md). `CUSTOM_RESOURCES` is the list `render_crds` and `install_crds` work from;
`KUBEFLOW_RESOURCES` are the training kinds again in Kubeflow's group (`kubeflow.org/v1`), rendered into
deploy/crds/kubeflow/ and installed only on request."""

from __future__ import annotations

from .definition import GROUP, VERSION, CustomResource, PrinterColumn
from .hyperparam import HYPERPARAM_WORKFLOW
from .jobs import JAXJOB, KUBEFLOW_JOBS, MPIJOB, MXJOB, PADDLEJOB, PYTORCHJOB, TFJOB, XGBOOSTJOB
from .tensorboard import TENSORBOARD

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


def by_kind(kind: str) -> CustomResource:
    for resource in CUSTOM_RESOURCES:
        if resource.kind == kind:
            return resource
    known = ", ".join(resource.kind for resource in CUSTOM_RESOURCES)
    raise LookupError(f"{kind!r} is not one of our kinds ({known})")


__all__ = [
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
    "VERSION",
    "XGBOOSTJOB",
    "CustomResource",
    "PrinterColumn",
    "by_kind",
]
