"""The job spec as Kubeflow Training Operator v1 shapes it: field names, defaults and tolerant readers.

Readers here never raise on a malformed spec: `validation.py` reports what is wrong, and the reconcile
loop must be able to read whatever got past it (a job edited before the webhook existed, for instance).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobs import apigroups
from kube import podsecurity

if TYPE_CHECKING:
    from jobs.frameworks.base import Framework

API_GROUP = "argoml.io"
API_VERSION = f"{API_GROUP}/v1alpha1"

RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
CLEAN_POD_POLICIES = ("All", "Running", "None")
SUCCESS_POLICY_ALL_WORKERS = "AllWorkers"
SUCCESS_POLICIES = ("", SUCCESS_POLICY_ALL_WORKERS)
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class FieldError:
    """One problem in a job manifest, named by its field path (`spec.tfReplicaSpecs.Worker.replicas`)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class RunPolicy:
    """`spec.runPolicy` with defaults applied; a value of the wrong type reads as its default."""

    clean_pod_policy: str
    ttl_seconds_after_finished: int | None
    active_deadline_seconds: int | None
    backoff_limit: int | None
    suspend: bool


def as_int(value: object) -> int | None:
    """An int that is really an int (YAML `true` is a bool, and bools are ints in Python)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def job_name(job: dict[str, Any]) -> str:
    return str(as_dict(job.get("metadata")).get("name") or "")


def job_namespace(job: dict[str, Any]) -> str:
    return str(as_dict(job.get("metadata")).get("namespace") or DEFAULT_NAMESPACE)


def job_spec(job: dict[str, Any]) -> dict[str, Any]:
    return as_dict(job.get("spec"))


def replica_specs(job: dict[str, Any], framework: Framework) -> dict[str, dict[str, Any]]:
    """Replica specs keyed by canonical type (`worker` → `Worker`), in the framework's order.

    Keys the framework does not know, and values that are not mappings, are left out.
    """
    given = as_dict(job_spec(job).get(framework.spec_key))
    by_type: dict[str, dict[str, Any]] = {}
    for key, spec in given.items():
        replica_type = framework.canonical_replica_type(key)
        if replica_type is not None and isinstance(spec, dict):
            by_type[replica_type] = spec
    return {rt: by_type[rt] for rt in framework.replica_types if rt in by_type}


def pod_views(job: dict[str, Any], framework: Framework) -> list[podsecurity.PodView]:
    """The pod template of every replica type, as the Pod Security check reads it, under the key the user
    wrote (`spec.tfReplicaSpecs.worker.template.spec`); keys the framework does not know are skipped."""
    views = []
    for key, spec in as_dict(job_spec(job).get(framework.spec_key)).items():
        if framework.canonical_replica_type(key) is None or not isinstance(spec, dict):
            continue
        template = as_dict(spec.get("template"))
        where = f"spec.{framework.spec_key}.{key}.template"
        views.append(
            podsecurity.pod_view(
                template.get("spec"),
                as_dict(template.get("metadata")).get("annotations"),
                path=f"{where}.spec",
                metadata_path=f"{where}.metadata",
            )
        )
    return views


def replica_count(spec: dict[str, Any]) -> int:
    """`replicas`, defaulting to 1 as Kubeflow does; negative or malformed counts read as 0 and 1."""
    if "replicas" not in spec or spec["replicas"] is None:
        return 1
    count = as_int(spec["replicas"])
    return 1 if count is None else max(count, 0)


def replica_restart_policy(spec: dict[str, Any], framework: Framework) -> str:
    policy = spec.get("restartPolicy")
    return policy if policy in RESTART_POLICIES else framework.default_restart_policy


def replica_counts(job: dict[str, Any], framework: Framework) -> dict[str, int]:
    """Canonical replica type → number of replicas, in the framework's order."""
    return {rt: replica_count(spec) for rt, spec in replica_specs(job, framework).items()}


def run_policy(job: dict[str, Any], framework: Framework) -> RunPolicy:
    given = as_dict(job_spec(job).get("runPolicy"))
    clean = given.get("cleanPodPolicy")
    return RunPolicy(
        clean_pod_policy=clean
        if clean in CLEAN_POD_POLICIES
        else apigroups.default_clean_pod_policy(job, framework),
        ttl_seconds_after_finished=_non_negative(given.get("ttlSecondsAfterFinished")),
        active_deadline_seconds=_non_negative(given.get("activeDeadlineSeconds")),
        backoff_limit=_non_negative(given.get("backoffLimit")),
        suspend=given.get("suspend") is True,
    )


def success_policy(job: dict[str, Any]) -> str:
    policy = job_spec(job).get("successPolicy")
    return policy if policy in SUCCESS_POLICIES else ""


def chief_type(job: dict[str, Any], framework: Framework) -> str | None:
    """The replica type whose success is the job's success, if the job has one (Chief or Master)."""
    specs = replica_specs(job, framework)
    return next((rt for rt in framework.chief_types if rt in specs), None)


def framework_container(template_spec: dict[str, Any], container_name: str) -> dict[str, Any] | None:
    containers = template_spec.get("containers")
    if not isinstance(containers, list):
        return None
    return next((c for c in containers if isinstance(c, dict) and c.get("name") == container_name), None)


def with_defaults(job: dict[str, Any], framework: Framework) -> dict[str, Any]:
    """A deep copy of `job` with every default filled in, as the mutating webhook would store it.

    Replica keys become canonical, each replica gets `replicas` and `restartPolicy`, the framework's
    container gets its port when it has none, `runPolicy.cleanPodPolicy` and the framework's own spec
    fields (e.g. TF `successPolicy`, PyTorch `elasticPolicy` bounds) get their defaults, and the namespace
    defaults to `default`.
    Applying it twice gives the same result.
    """
    job = copy.deepcopy(job)
    for part in ("metadata", "spec"):
        if not isinstance(job.get(part), dict):
            job[part] = {}
    job["metadata"].setdefault("namespace", DEFAULT_NAMESPACE)
    spec = job["spec"]
    specs = replica_specs(job, framework)
    for replica_spec in specs.values():
        replica_spec["replicas"] = replica_count(replica_spec)
        replica_spec["restartPolicy"] = replica_restart_policy(replica_spec, framework)
        template_spec = as_dict(as_dict(replica_spec.get("template")).get("spec"))
        container = framework_container(template_spec, framework.container_name)
        if container is not None:
            _add_default_port(container, framework)
    spec[framework.spec_key] = specs
    policy = spec.setdefault("runPolicy", {})
    if isinstance(policy, dict):
        policy.setdefault("cleanPodPolicy", apigroups.default_clean_pod_policy(job, framework))
    framework.default_extra_fields(spec)
    return job


def _add_default_port(container: dict[str, Any], framework: Framework) -> None:
    ports = container.get("ports")
    if not isinstance(ports, list):
        ports = container["ports"] = []
    if not any(isinstance(p, dict) and p.get("name") == framework.port_name for p in ports):
        ports.append(
            {"name": framework.port_name, "containerPort": framework.default_port, "protocol": "TCP"}
        )


def _non_negative(value: object) -> int | None:
    number = as_int(value)
    return number if number is not None and number >= 0 else None
