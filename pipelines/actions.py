"""The one write path of pipelines: create a transpiled Workflow in the cluster (``--submit`` and the API)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from access import podsecurity
from kube.client import get_client
from kube.errors import ApiError
from kube.resources import WORKFLOW
from workflows.pipeline import PipelineError, Problem
from workflows.pods import workflow_pod_views

logger = logging.getLogger(__name__)

#: Where a Pod Security problem is, in a Problem: the transpiled Workflow's pods.
POD_SECURITY = "pod security"


class SubmissionFailed(Exception):
    """The cluster did not create the Workflow.

    ``refused`` tells the two cases apart for callers: the cluster answered no (4xx: a missing namespace, a
    denying admission webhook, an invalid object), or it could not be asked (no cluster configured, 5xx, no
    answer), which may succeed later.
    """

    def __init__(self, namespace: str, cause: Exception) -> None:
        self.namespace = namespace
        self.reason = str(cause)
        self.refused = isinstance(cause, ApiError) and 400 <= cause.status < 500
        super().__init__(f"submitting to namespace {namespace} failed: {self.reason}")


def submit_workflow(workflow: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """Create ``workflow`` in ``namespace`` and return the created object (its generated name included).

    Raises PipelineError, before anything is sent, when the namespace's Pod Security policy refuses a pod
    of the Workflow (each problem names the field of the transpiled Workflow).

    Not retried here: the Workflow has a generateName, so a POST that timed out after the server acted on
    it would start the pipeline twice if repeated. (The client itself repeats a POST only on 429, which the
    server did not act on.)
    """
    refused = pod_security_problems(workflow, namespace)
    if refused:
        raise PipelineError(refused)
    try:
        created = get_client().create(WORKFLOW, dict(workflow), namespace=namespace)
    except (ApiError, RuntimeError) as error:
        raise SubmissionFailed(namespace, error) from error
    metadata = created.get("metadata", {})
    logger.info("submitted workflow %s in namespace %s", metadata.get("name"), namespace)
    return created


def pod_security_problems(workflow: Mapping[str, Any], namespace: str) -> list[Problem]:
    """What the namespace's Pod Security policy refuses in the Workflow's pods (the steps' config can set
    service accounts, volumes and security contexts)."""
    views = workflow_pod_views(workflow.get("spec"), "spec")
    return [Problem(POD_SECURITY, v.path, v.message) for v in podsecurity.check(namespace, views)]
