"""The write paths of sweeps from the API: submit a HyperparamWorkflow to the cluster, delete it there.

Neither touches the database: the custom resource is the user's intent, and the mirror fills (or marks
deleted) the Sweep row when the watch event arrives. Deleting a sweep deletes its Workflows (their
ownerReferences); its rows, trials and history stay.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import fields
from access import podsecurity
from fields import FieldError, SpecError
from hyperparam import manifests
from hyperparam.reconcile import HPW
from hyperparam.sweep import PlannedTrial, Sweep, parse_sweep
from kube.client import get_client
from kube.errors import Conflict, NotFound
from workflows.lint import lint_document
from workflows.pods import workflow_pod_views

_LINT_NAME = "lint-check"


class SweepRejected(fields.Rejected):
    """A HyperparamWorkflow manifest that cannot be submitted."""


def check_manifest(manifest: Any) -> list[FieldError]:
    """What is wrong with a HyperparamWorkflow manifest: identity, every spec problem with its field path,
    the namespace's Pod Security policy, and what our linter says about the first Workflow it would
    generate."""
    if not isinstance(manifest, Mapping):
        return [FieldError("", f"a HyperparamWorkflow {fields.not_an_object(manifest)}")]
    errors: list[FieldError] = []
    if manifest.get("kind", manifests.KIND) != manifests.KIND:
        errors.append(FieldError("kind", f"must be {manifests.KIND}, not {manifest.get('kind')!r}"))
    if manifest.get("apiVersion", manifests.API_VERSION) != manifests.API_VERSION:
        errors.append(FieldError("apiVersion", f"must be {manifests.API_VERSION}"))
    metadata = manifest.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    for key in ("name", "namespace"):
        if not isinstance(metadata.get(key), str) or not metadata.get(key):
            errors.append(FieldError(f"metadata.{key}", "is required"))
    namespace = metadata.get("namespace")
    refused = pod_security_errors(manifest, namespace) if isinstance(namespace, str) and namespace else []
    try:
        sweep = parse_sweep(manifest.get("spec"))
    except SpecError as error:
        return errors + list(error.errors) + refused
    if not errors:
        errors += _lint_errors(manifest, sweep)
    return errors + refused


def pod_security_errors(manifest: Mapping[str, Any], namespace: str) -> list[FieldError]:
    """What the namespace's Pod Security policy refuses in the pods of the embedded Workflow (every trial
    runs those templates as written; the webhook asks the same)."""
    spec = manifest.get("spec")
    workflow = spec.get("workflow") if isinstance(spec, Mapping) else None
    views = workflow_pod_views(workflow, "spec.workflow")
    return podsecurity.check(namespace, views)


def _lint_errors(manifest: Mapping[str, Any], sweep: Sweep) -> list[FieldError]:
    """The linter's verdict on a Workflow of one trial: batches differ only in their items, so this one
    carries everything the user wrote."""
    probe = {**manifest, "metadata": {**manifest["metadata"], "name": _LINT_NAME, "uid": ""}}
    trial = PlannedTrial(0, {domain.name: domain.sample(0.5) for domain in sweep.space.domains})
    try:
        workflow = manifests.build_workflow(probe, 0, [trial], sweep=sweep)
    except SpecError as error:
        return list(error.errors)
    return [
        FieldError("spec.workflow", f"the generated Workflow fails the lint: {message}")
        for message in lint_document(workflow).messages
    ]


def submit_sweep(manifest: dict[str, Any]) -> dict[str, Any]:
    """Create the HyperparamWorkflow in the cluster; returns the object as the API server stored it.

    Raises SweepRejected for an invalid manifest, and kube's errors from the API server (AlreadyExists when
    the name is taken, Invalid when the server's schema refuses it).
    """
    SweepRejected.raise_if_any(check_manifest(manifest))
    body = {**manifest, "apiVersion": manifests.API_VERSION, "kind": manifests.KIND}
    return get_client().create(HPW, body, body["metadata"]["namespace"])


def delete_sweep(namespace: str, name: str, uid: str) -> bool:
    """Delete the sweep from the cluster (its Workflows follow). The uid is a precondition, so a newer
    sweep that took the name is never deleted. False when it was already gone."""
    try:
        get_client().delete(HPW, name, namespace, uid=uid)
    except (NotFound, Conflict):
        return False
    return True
