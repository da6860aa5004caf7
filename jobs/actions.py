"""The write paths of training jobs from the API: submit a job to the cluster, delete it from the cluster.

Neither touches the database: the custom resource is the user's intent, and the mirror fills (or marks
deleted) the TrainingJob row when the watch event arrives.
"""

from __future__ import annotations

from typing import Any

import fields
from access import podsecurity
from fields import FieldError, as_dict
from jobs import apigroups
from jobs.frameworks import Framework, UnknownKind, framework_class, kinds
from jobs.spec import pod_views
from jobs.validation import validate
from kube.client import get_client
from kube.errors import Conflict, NotFound


class JobRejected(fields.Rejected):
    """A job manifest that cannot be submitted."""


def check_manifest(manifest: Any) -> list[FieldError]:
    """What is wrong with a job manifest before it may go to the cluster: its kind, its namespace (the
    API needs it to check access), and everything `jobs.validation` checks."""
    if not isinstance(manifest, dict):
        return [FieldError("", f"a job {fields.not_an_object(manifest)}")]
    try:
        framework = framework_class(manifest.get("kind"))()
    except UnknownKind:
        return [FieldError("kind", f"must be one of {', '.join(kinds())}, not {manifest.get('kind')!r}")]
    errors = []
    namespace = as_dict(manifest.get("metadata")).get("namespace")
    if not namespace:
        errors.append(FieldError("metadata.namespace", "is required"))
    errors += validate(manifest, framework)
    if isinstance(namespace, str) and namespace:
        errors += pod_security_errors(manifest, framework, namespace)
    return errors


def pod_security_errors(job: dict[str, Any], framework: Framework, namespace: str) -> list[FieldError]:
    """What the namespace's Pod Security policy refuses in the job's replica templates (the webhook asks
    the same)."""
    return podsecurity.check(namespace, pod_views(job, framework))


def submit_job(manifest: dict[str, Any]) -> dict[str, Any]:
    """Create the job's custom resource in the cluster; returns the object as the API server stored it.

    Raises JobRejected for an invalid manifest, and kube's errors from the API server (AlreadyExists when
    the name is taken, Invalid when the server's schema refuses it).
    """
    JobRejected.raise_if_any(check_manifest(manifest))
    body = {**manifest, "apiVersion": apigroups.api_version_of(manifest)}
    resource = apigroups.job_resource(framework_class(body["kind"]), body["apiVersion"])
    return get_client().create(resource, body, body["metadata"]["namespace"])


def delete_job(
    kind: str, namespace: str, name: str, uid: str, api_version: str = apigroups.ARGOML_API_VERSION
) -> bool:
    """Delete the job from the cluster (its pods and services follow through their ownerReferences).

    The uid is a precondition, so a newer job that took the name is never deleted. False when the job
    was already gone.
    """
    resource = apigroups.job_resource(framework_class(kind), api_version)
    try:
        get_client().delete(resource, name, namespace, uid=uid)
    except (NotFound, Conflict):
        return False
    return True
