"""The write paths of runtimes from the admin (change a runtime's spec, delete a runtime) and of TrainJobs
from the API and the dashboard (submit, delete). All go to the cluster and never touch the database: the
mirror records a runtime's change as its next revision (attributed through the annotations the edit sets),
a new TrainJob as its row, and marks rows deleted when the watch event arrives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import fields
from fields import FieldError, SpecError
from kube.client import get_client
from kube.errors import Conflict, NotFound
from trainer import constants as c
from trainer.operator import spec
from trainer.resources import RUNTIMES, TRAIN_JOB
from trainer.runtimes import revisions, usage
from workflows import safeyaml

#: A runtime's spec as typed in the admin: far above Trainer's own runtimes (~2 KB), far below harm.
SPEC_LIMITS = safeyaml.Limits(max_bytes=256 * 1024, max_nodes=20_000, max_depth=40)


@dataclass(frozen=True)
class RuntimeIdentity:
    """The runtime an admin page shows, at the version it showed: kind, namespace ("" for a cluster
    runtime), name, uid and resourceVersion (the precondition of every write)."""

    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str


class RuntimeRejected(fields.Rejected):
    """A runtime's spec that cannot be written; `errors` name each field (`spec.mlPolicy.numNodes`, …)."""


class ChangedMeanwhile(Exception):
    """The runtime in the cluster is not the version the page showed (changed, deleted or recreated)."""


class InUse(Exception):
    """The runtime is referenced by TrainJobs; `jobs` names them (`namespace/name`)."""

    def __init__(self, jobs: list[str]) -> None:
        super().__init__(f"used by {len(jobs)} TrainJobs: {', '.join(jobs)}")
        self.jobs = jobs


def parse_spec(runtime: RuntimeIdentity, text: str) -> dict[str, Any]:
    """The spec typed as YAML, checked as Trainer's webhook would check the runtime; RuntimeRejected
    names the field of every problem, all at once."""
    try:
        document = safeyaml.load(text, SPEC_LIMITS)
    except safeyaml.YamlRefused as error:
        raise RuntimeRejected([FieldError("spec", str(error))]) from None
    if not isinstance(document, dict):
        raise RuntimeRejected([FieldError("spec", fields.not_an_object(document, "(mlPolicy, template, …)"))])
    metadata = {"name": runtime.name, **({"namespace": runtime.namespace} if runtime.namespace else {})}
    try:
        spec.parse_runtime({"kind": runtime.kind, "metadata": metadata, "spec": document})
    except SpecError as error:
        raise RuntimeRejected(list(error.errors)) from None
    return document


def change_runtime_spec(runtime: RuntimeIdentity, text: str, username: str) -> dict[str, Any] | None:
    """Replace the runtime's spec in the cluster with `text` (YAML), signed by `username`; returns the
    object as stored, or None when the spec is the same (nothing written, no revision).

    The write is a PUT carrying the resourceVersion the page showed: a runtime changed since answers
    409, raised as ChangedMeanwhile, as is one deleted or recreated under the same name.
    """
    new_spec = parse_spec(runtime, text)
    client = get_client()
    rtype = RUNTIMES[runtime.kind]
    namespace = runtime.namespace or None
    try:
        current = client.get(rtype, runtime.name, namespace)
    except NotFound:
        raise ChangedMeanwhile("it was deleted from the cluster") from None
    metadata = current.get("metadata") or {}
    if metadata.get("uid") != runtime.uid or metadata.get("resourceVersion") != runtime.resource_version:
        raise ChangedMeanwhile("it changed in the cluster since this page was loaded")
    if current.get("spec") == new_spec:
        return None
    generation = metadata.get("generation")
    generation = generation if isinstance(generation, int) else 0
    annotations = {**(metadata.get("annotations") or {}), **revisions.attribution(username, generation)}
    body = {**current, "metadata": {**metadata, "annotations": annotations}, "spec": new_spec}
    try:
        return client.replace(rtype, body)
    except (Conflict, NotFound):
        raise ChangedMeanwhile("it changed in the cluster since this page was loaded") from None


def jobs_using(runtime: RuntimeIdentity) -> list[str]:
    """`namespace/name` of every TrainJob referencing the runtime now, as the cluster says."""
    found = usage.jobs_using(get_client(), runtime.kind, runtime.namespace, runtime.name)
    return sorted(
        f"{(job.get('metadata') or {}).get('namespace')}/{job['metadata']['name']}" for job in found
    )


def delete_runtime(runtime: RuntimeIdentity) -> bool:
    """Delete the runtime from the cluster unless a TrainJob uses it (InUse names them: the finalizer
    would keep it Terminating until they are gone). The uid is a precondition, so a newer runtime of
    the same name is never deleted. False when it was already gone."""
    users = jobs_using(runtime)
    if users:
        raise InUse(users)
    try:
        get_client().delete(RUNTIMES[runtime.kind], runtime.name, runtime.namespace or None, uid=runtime.uid)
    except (NotFound, Conflict):
        return False
    return True


def check_train_job(manifest: Any) -> list[FieldError]:
    """What is wrong with a TrainJob manifest before it may go to the cluster, by field: its namespace
    (the API checks access there) and everything `spec.parse_train_job` refuses. What depends on the
    runtime (it exists, the overrides resolve) is the admission webhook's to say."""
    if not isinstance(manifest, dict):
        return [FieldError("", f"a TrainJob {fields.not_an_object(manifest)}")]
    errors = []
    if manifest.get("kind") != c.TRAIN_JOB_KIND:
        errors.append(FieldError("kind", f"must be {c.TRAIN_JOB_KIND}, not {manifest.get('kind')!r}"))
    metadata = manifest.get("metadata")
    if not isinstance(metadata, dict) or not metadata.get("namespace"):
        errors.append(FieldError("metadata.namespace", "is required"))
    try:
        spec.parse_train_job(manifest)
    except SpecError as error:
        errors += list(error.errors)
    return errors


def submit_train_job(manifest: dict[str, Any]) -> dict[str, Any]:
    """Create the TrainJob in the cluster; returns the object as the API server stored it. Raises
    TrainJobRejected for an invalid manifest, and kube's errors (AlreadyExists, Invalid from the
    webhook, e.g. a runtime that does not exist)."""
    TrainJobRejected.raise_if_any(check_train_job(manifest))
    body = {**manifest, "apiVersion": c.API_VERSION}
    return get_client().create(TRAIN_JOB, body, body["metadata"]["namespace"])


def delete_train_job(namespace: str, name: str, uid: str) -> bool:
    """Delete the TrainJob from the cluster (its pods, Service and ConfigMaps follow through their
    ownerReferences). The uid is a precondition, so a newer job of that name is never deleted. False
    when it was already gone."""
    try:
        get_client().delete(TRAIN_JOB, name, namespace, uid=uid)
    except (NotFound, Conflict):
        return False
    return True


class TrainJobRejected(fields.Rejected):
    """A TrainJob manifest that cannot be submitted."""
