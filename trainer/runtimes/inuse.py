"""Which runtime a TrainJob uses, and what that means for the runtime's finalizer. Pure functions.

As Kubeflow Trainer 2.0-2.2 did (pkg/controller/*trainingruntime_controller.go, PR #2608/#2625), a
runtime referenced by a TrainJob carries `trainer.kubeflow.org/resource-in-use`, so deleting it leaves
it Terminating until no TrainJob references it. We also drop the finalizer when the last TrainJob goes
(upstream kept it until a deletion was asked), so the finalizer always says "in use now".
"""

from __future__ import annotations

from typing import Any

from trainer import constants as c

RESOURCE_IN_USE_FINALIZER = f"{c.GROUP}/resource-in-use"


def runtime_reference(train_job: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of the runtime a TrainJob references, as Trainer reads `spec.runtimeRef` (kind
    defaults to ClusterTrainingRuntime, apiGroup to trainer.kubeflow.org); None when it names none of
    ours."""
    spec = train_job.get("spec")
    ref = spec.get("runtimeRef") if isinstance(spec, dict) else None
    if not isinstance(ref, dict):
        return None
    name, kind = ref.get("name"), ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME
    if (ref.get("apiGroup") or c.GROUP) != c.GROUP or kind not in c.RUNTIME_KINDS:
        return None
    return (kind, name) if isinstance(name, str) and name else None


def training_runtime_used(train_job: dict[str, Any]) -> str | None:
    """The TrainingRuntime (same namespace) the TrainJob uses, if that is what it references."""
    reference = runtime_reference(train_job)
    return reference[1] if reference and reference[0] == c.TRAINING_RUNTIME else None


def cluster_training_runtime_used(train_job: dict[str, Any]) -> str | None:
    """The ClusterTrainingRuntime the TrainJob uses, if that is what it references."""
    reference = runtime_reference(train_job)
    return reference[1] if reference and reference[0] == c.CLUSTER_TRAINING_RUNTIME else None


def uses(train_job: dict[str, Any], kind: str, namespace: str, name: str) -> bool:
    """Whether the TrainJob references the runtime (a TrainingRuntime only from its own namespace)."""
    if runtime_reference(train_job) != (kind, name):
        return False
    job_namespace = (train_job.get("metadata") or {}).get("namespace") or ""
    return kind == c.CLUSTER_TRAINING_RUNTIME or job_namespace == namespace


def finalizers_wanted(finalizers: list[str], in_use: bool) -> list[str] | None:
    """The runtime's finalizers with ours present exactly while it is in use; None when they are right."""
    has = RESOURCE_IN_USE_FINALIZER in finalizers
    if in_use and not has:
        return [*finalizers, RESOURCE_IN_USE_FINALIZER]
    if not in_use and has:
        return [f for f in finalizers if f != RESOURCE_IN_USE_FINALIZER]
    return None
