"""The validating webhook's check of Kubeflow Trainer v2's kinds, as Trainer's own webhooks check them.

A TrainingRuntime or ClusterTrainingRuntime must parse (`trainer.operator.spec.parse_runtime`). A TrainJob
must parse, name a runtime that exists (read through `kube`, one GET, as Trainer's webhook reads it: the only
cluster call of this check) and resolve against it (`trainer.operator.resolution.resolve`: reserved env,
overrides with nothing to override, patches Trainer refuses). On UPDATE, the fields Trainer's CRD makes
immutable (CEL rules, which kubesim does not evaluate) must keep their value. Every problem is answered at
once, each with its field path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fields import FieldError, SpecError
from kube.client import get_client
from kube.errors import InvalidName, NotFound
from trainer import constants
from trainer.operator import resolution, spec
from trainer.runtimes import crd as runtime_crds

from . import failures
from .review import AdmissionRequest, Verdict
from .validating import INTERNAL_ERROR, VALIDATED_OPERATIONS, invalid_message

logger = logging.getLogger(__name__)

#: The TrainJob fields Trainer's CRD declares immutable once set (`self == oldSelf`).
IMMUTABLE_FIELDS = ("runtimeRef", "initializer", "trainer", "activeDeadlineSeconds", "managedBy")
RUNTIME_TYPES = {
    constants.TRAINING_RUNTIME: runtime_crds.TRAINING_RUNTIME.resource_type,
    constants.CLUSTER_TRAINING_RUNTIME: runtime_crds.CLUSTER_TRAINING_RUNTIME.resource_type,
}

#: (kind, namespace, name) → the runtime manifest, or None when it does not exist.
RuntimeReader = Callable[[str, str, str], "dict[str, Any] | None"]


def is_trainer_request(request: AdmissionRequest) -> bool:
    return request.kind.group == constants.GROUP and request.kind.kind in (
        constants.TRAIN_JOB_KIND,
        *constants.RUNTIME_KINDS,
    )


def review(request: AdmissionRequest, read_runtime: RuntimeReader) -> Verdict:
    """Allow or deny one request for a TrainJob or a runtime."""
    obj = request.object
    if request.operation not in VALIDATED_OPERATIONS or request.sub_resource or obj is None:
        return Verdict.allow()
    if not request.changes_spec:
        return Verdict.allow()
    try:
        if request.kind.kind == constants.TRAIN_JOB_KIND:
            causes = train_job_problems(obj, request.old_object, request.namespace, read_runtime)
        else:
            causes = runtime_problems(obj)
    except Exception:
        # A bug, or an unreadable runtime: Trainer's kinds fail closed (failurePolicy Fail), no traceback.
        logger.exception("validating %s failed", request.display_name)
        return failures.undecided(request, INTERNAL_ERROR)
    if not causes:
        return Verdict.allow()
    lines = [str(cause) for cause in causes]
    return Verdict.deny(422, invalid_message(request.display_name, lines), causes)


def runtime_problems(obj: dict[str, Any]) -> list[FieldError]:
    try:
        spec.parse_runtime(obj)
    except SpecError as invalid:
        return _causes(invalid)
    return []


def train_job_problems(
    obj: dict[str, Any], old: dict[str, Any] | None, namespace: str, read_runtime: RuntimeReader
) -> list[FieldError]:
    """What is wrong with a TrainJob: its own fields, changes to immutable ones, then its runtime."""
    changed = immutable_changes(obj, old)
    try:
        job = spec.parse_train_job(obj)
    except SpecError as invalid:
        return changed + _causes(invalid)
    if changed:
        return changed
    ref = job.runtime_ref
    where = namespace or job.namespace
    try:
        manifest = read_runtime(ref.kind, where, ref.name)
    except InvalidName as invalid:
        return [FieldError("spec.runtimeRef.name", "; ".join(invalid.problems) or str(invalid))]
    if manifest is None:
        scope = f" in namespace {where!r}" if ref.kind == constants.TRAINING_RUNTIME else ""
        return [
            FieldError(
                "spec.runtimeRef.name",
                f"{ref.kind} {ref.name!r} does not exist{scope}: create the runtime before the TrainJob",
            )
        ]
    try:
        runtime = spec.parse_runtime(manifest)
    except SpecError as invalid:
        return [FieldError("spec.runtimeRef.name", f"{ref.kind} {ref.name!r} is invalid: {invalid}")]
    try:
        resolution.resolve(job, runtime)
    except SpecError as invalid:
        return _causes(invalid)
    return []


def immutable_changes(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """The immutable fields an UPDATE changes (as a CEL transition rule: only fields set before and after)."""
    if old is None:
        return []
    new_spec, old_spec = obj.get("spec"), old.get("spec")
    if not isinstance(new_spec, dict) or not isinstance(old_spec, dict):
        return []
    return [
        FieldError(f"spec.{name}", "field is immutable")
        for name in IMMUTABLE_FIELDS
        if name in new_spec and name in old_spec and new_spec[name] != old_spec[name]
    ]


def read_runtime(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The runtime from the cluster, or None when it does not exist (any other error propagates)."""
    rtype = RUNTIME_TYPES[kind]
    try:
        return get_client().get(rtype, name, namespace if rtype.namespaced else None)
    except NotFound:
        return None


def _causes(invalid: SpecError) -> list[FieldError]:
    """The errors as plain FieldErrors: a cause says the field and the message, not the parser's subclass
    (TooMany, which tells the controller that a bound was passed)."""
    return [FieldError(error.path, error.message) for error in invalid.errors]
