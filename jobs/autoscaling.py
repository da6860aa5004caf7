"""An elastic PyTorchJob's HorizontalPodAutoscaler, decided as plain data: job + the HPA found → what to do.

As Kubeflow's `ReconcileHPA` (pkg/controller.v1/pytorch/hpa.go): with `spec.elasticPolicy.metrics` the job
gets an `autoscaling/v2` HPA named as the job, controlled by it, whose `scaleTargetRef` is the job itself
(its scale subresource sets the Worker replicas) between the policy's min and max, with the metrics copied.
It is updated when the policy changes and deleted while the job is suspended. Beyond Kubeflow: it is also
deleted when `metrics` is dropped or emptied and once the job has finished (nothing is left to scale), and
an invalid job gets none. An HPA of that name the job does not control is never touched.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from fields import as_dict
from jobs import spec as jobspec
from jobs.frameworks import Framework
from jobs.manifests import LABEL_JOB_NAME, owner_reference
from jobs.pods import controlled_by, name_of, uid_of
from jobs.spec import job_name, job_spec
from jobs.status import is_finished
from jobs.validation import validate

API_VERSION = "autoscaling/v2"
KIND = "HorizontalPodAutoscaler"
#: The only kind with an elastic policy (Kubeflow v1's PyTorchJob).
ELASTIC_KIND = "PyTorchJob"


@dataclass(frozen=True)
class Change:
    """What converges the job's HPA: `create` or `update` `manifest`, `delete` it by uid, or `foreign`: an
    HPA the job does not control holds its name, so its metrics go unserved (a Warning event says so)."""

    verb: str  # create | update | delete | foreign
    name: str
    manifest: dict[str, Any] | None = None
    uid: str = ""


def may_have_hpa(job: dict[str, Any], framework: Framework[Any]) -> bool:
    """Whether the reconcile must look for the job's HPA: the job has an elastic policy, or its spec changed
    since the last status (the policy may just have been removed). Other jobs never cost the request."""
    if framework.kind != ELASTIC_KIND:
        return False
    if job_spec(job).get("elasticPolicy") is not None:
        return True
    observed = as_dict(job.get("status")).get("observedGeneration")
    return observed != as_dict(job.get("metadata")).get("generation")


def desired_hpa(job: dict[str, Any], framework: Framework[Any]) -> dict[str, Any] | None:
    """The HPA the job should have now, or None for none."""
    if framework.kind != ELASTIC_KIND or as_dict(job.get("metadata")).get("deletionTimestamp"):
        return None
    policy = as_dict(job_spec(job).get("elasticPolicy"))
    metrics = policy.get("metrics")
    if not isinstance(metrics, list) or not metrics:
        return None
    if is_finished(as_dict(job.get("status"))) or validate(job, framework):
        return None
    parsed = jobspec.parse(job, framework)
    if parsed.run_policy.suspend:
        return None
    bounds = parsed.options.elastic
    # Defaulted, then validated above: both bounds are there.
    assert bounds is not None
    assert bounds.max_replicas is not None
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": parsed.api_version, "kind": parsed.kind, "name": parsed.name},
    }
    if bounds.min_replicas is not None:
        spec["minReplicas"] = bounds.min_replicas
    spec |= {"maxReplicas": bounds.max_replicas, "metrics": copy.deepcopy(metrics)}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": parsed.name,
            "namespace": parsed.namespace,
            "labels": {LABEL_JOB_NAME: parsed.name},
            "ownerReferences": [owner_reference(parsed)],
        },
        "spec": spec,
    }


def change(job: dict[str, Any], framework: Framework[Any], current: dict[str, Any] | None) -> Change | None:
    """What to do about the job's HPA, given the one of its name found in the cluster (None: not found)."""
    desired = desired_hpa(job, framework)
    ours = current is not None and controlled_by(current, str(as_dict(job.get("metadata")).get("uid") or ""))
    if current is not None and not ours:
        return Change("foreign", name_of(current)) if desired is not None else None
    if desired is None:
        return Change("delete", name_of(current), uid=uid_of(current)) if current is not None else None
    if current is None:
        return Change("create", job_name(job), desired)
    if as_dict(current.get("spec")) == desired["spec"]:
        return None
    updated = copy.deepcopy(current)
    updated["spec"] = desired["spec"]
    return Change("update", job_name(job), updated)
