"""The validating webhook's check of a scale request: `kubectl scale pytorchjob` or an autoscaler writing the
job's `scale` subresource must keep the job within its bound on replicas (`replicas_per_job`) and its
elastic policy's `[minReplicas, maxReplicas]`.

The apiserver shows such a write as an `autoscaling/v1` Scale (`pytorchjobs/scale`), which carries the
replicas but not the policy, so this check reads the job: one GET, the only cluster call of the webhook
listener (its ServiceAccount may `get` PyTorchJobs and nothing else). The bounds: `bounds.scale_errors`,
then `elastic.scale_problem`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fields import as_dict, as_int
from jobs import bounds
from jobs.apigroups import job_resource
from jobs.frameworks import PyTorch, elastic
from jobs.spec import API_GROUP, job_spec
from kube.client import get_client
from kube.errors import NotFound

from .configurations import SCALED_KINDS
from .review import AdmissionRequest, Verdict
from .validating import invalid_message

SCALE = "scale"
PYTORCHJOBS = job_resource(PyTorch)

JobReader = Callable[[str, str], "dict[str, Any] | None"]


def is_scale_request(request: AdmissionRequest) -> bool:
    return (
        request.sub_resource == SCALE
        and request.resource_group == API_GROUP
        and request.resource in SCALED_KINDS
    )


def review(request: AdmissionRequest, read_job: JobReader) -> Verdict:
    """Allow or deny one scale request of an elastic job; `read_job(namespace, name)` is the job or None."""
    replicas = as_int(as_dict(as_dict(request.object).get("spec")).get("replicas"))
    if request.operation != "UPDATE" or replicas is None:
        return Verdict.allow()  # the apiserver itself refuses a Scale without whole replicas
    job = read_job(request.namespace, request.name)  # an error is the view's to answer (fail closed)
    if job is None:
        return Verdict.allow()  # gone: the apiserver answers 404 itself
    # The job's bound on replicas first (a Scale to 100000 replicas), then an elastic job's own bounds.
    over_bounds = bounds.scale_errors(job, PyTorch(), replicas)
    problem = over_bounds[0] if over_bounds else elastic.scale_problem(job_spec(job), replicas)
    if problem is None:
        return Verdict.allow()
    kind = SCALED_KINDS[request.resource]
    return Verdict.deny(
        422,
        invalid_message(f'{kind} "{request.name}"', [str(problem)]),
        [problem],
    )


def read_job(namespace: str, name: str) -> dict[str, Any] | None:
    """The PyTorchJob from the cluster, or None when it does not exist."""
    try:
        return get_client().get(PYTORCHJOBS, name, namespace)
    except NotFound:
        return None
