"""Our custom resource kinds, declared once in Python and rendered into deploy/crds/ (see
docs/adding-a-resource.md). `CUSTOM_RESOURCES` is the list `render_crds` and `install_crds` work from."""

from __future__ import annotations

from .definition import GROUP, VERSION, CustomResource, PrinterColumn
from .hyperparam import HYPERPARAM_WORKFLOW
from .jobs import MPIJOB, MXJOB, PYTORCHJOB, TFJOB
from .tensorboard import TENSORBOARD

CUSTOM_RESOURCES: tuple[CustomResource, ...] = (
    TFJOB,
    MXJOB,
    PYTORCHJOB,
    MPIJOB,
    HYPERPARAM_WORKFLOW,
    TENSORBOARD,
)


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
    "MPIJOB",
    "MXJOB",
    "PYTORCHJOB",
    "TENSORBOARD",
    "TFJOB",
    "VERSION",
    "CustomResource",
    "PrinterColumn",
    "by_kind",
]
