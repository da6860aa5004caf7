"""torchrun's elastic policy (a PyTorchJob's `spec.elasticPolicy`): read once, checked, made into PET_* vars.

The fields, defaults and variable names are Kubeflow Training Operator v1's (`ElasticPolicy` in
`pytorch_types.go`, `elastic.go`), so a Kubeflow manifest starts the same `torchrun` here. `metrics` become
the job's HorizontalPodAutoscaler (jobs/autoscaling.py); `scale_problem` is the check of a scale request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import fields
from fields import FieldError, as_dict, as_int
from jobs.frameworks.base import Count

PATH = "spec.elasticPolicy"
BACKENDS = ("c10d", "etcd", "etcd-v2")
DEFAULT_BACKEND = "c10d"
FIELDS = (
    "minReplicas",
    "maxReplicas",
    "rdzvBackend",
    "rdzvPort",
    "rdzvHost",
    "rdzvId",
    "rdzvConf",
    "standalone",
    "nProcPerNode",
    "maxRestarts",
    "metrics",
)
#: `autoscaling/v2` MetricSpec types.
METRIC_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")


@dataclass(frozen=True)
class ElasticPolicy:
    """`spec.elasticPolicy` as the operator reads it; a value of the wrong type reads as unset."""

    min_replicas: int | None
    max_replicas: int | None
    rdzv_backend: str
    rdzv_host: str | None
    rdzv_port: int | None
    rdzv_id: str | None
    rdzv_conf: tuple[tuple[str, str], ...] | None
    standalone: bool
    nproc_per_node: int | None
    max_restarts: int | None


def parse(spec: Mapping[str, Any]) -> ElasticPolicy | None:
    """The job's elastic policy, or None when the job has none (then it is not an elastic job)."""
    given = spec.get("elasticPolicy")
    if not isinstance(given, dict):
        return None
    backend = given.get("rdzvBackend")
    conf = given.get("rdzvConf")
    return ElasticPolicy(
        min_replicas=as_int(given.get("minReplicas")),
        max_replicas=as_int(given.get("maxReplicas")),
        rdzv_backend=backend if isinstance(backend, str) and backend else DEFAULT_BACKEND,
        rdzv_host=_string(given.get("rdzvHost")),
        rdzv_port=as_int(given.get("rdzvPort")),
        rdzv_id=_string(given.get("rdzvId")),
        rdzv_conf=(
            tuple((str(as_dict(kv).get("key", "")), str(as_dict(kv).get("value", ""))) for kv in conf)
            if isinstance(conf, list)
            else None
        ),
        standalone=given.get("standalone") is True,
        nproc_per_node=as_int(given.get("nProcPerNode")),
        max_restarts=as_int(given.get("maxRestarts")),
    )


def parse_defaulted(spec: Mapping[str, Any], worker_replicas: int) -> ElasticPolicy | None:
    """The policy as a defaulted (stored) job reads: `parse` after `with_defaults` filled the bounds."""
    given = spec.get("elasticPolicy")
    if not isinstance(given, dict):
        return None
    defaulted = dict(given)
    with_defaults(defaulted, worker_replicas)
    return parse({"elasticPolicy": defaulted})


def replica_bounds(spec: Mapping[str, Any]) -> list[Count]:
    """`minReplicas` and `maxReplicas` as counts of replicas (PyTorch and Paddle): an autoscaler may scale
    the job to either, so each is held to the bound on a job's replicas."""
    policy = as_dict(spec.get("elasticPolicy"))
    return [
        Count.of_replicas(f"{PATH}.{field}", number)
        for field in ("minReplicas", "maxReplicas")
        if (number := as_int(policy.get(field))) is not None
    ]


def nnodes(policy: ElasticPolicy, worker_replicas: int) -> str:
    """`PET_NNODES`: `min:max`, one bound standing for both when only one is given (Kubeflow's defaulting),
    the Worker replica count when neither is."""
    low = policy.min_replicas if policy.min_replicas is not None else policy.max_replicas
    high = policy.max_replicas if policy.max_replicas is not None else policy.min_replicas
    if low is None or high is None:
        return str(worker_replicas)
    return f"{low}:{high}"


def environment(
    policy: ElasticPolicy, *, default_host: str, default_port: int, worker_replicas: int
) -> dict[str, str]:
    """torchrun's rendezvous variables; the endpoint defaults to the first worker's service and port."""
    host = policy.rdzv_host if policy.rdzv_host is not None else default_host
    port = policy.rdzv_port if policy.rdzv_port is not None else default_port
    env = {
        "PET_RDZV_ENDPOINT": f"{host}:{port}",
        "PET_RDZV_BACKEND": policy.rdzv_backend,
        "PET_NNODES": nnodes(policy, worker_replicas),
    }
    if policy.max_restarts is not None:
        env["PET_MAX_RESTARTS"] = str(policy.max_restarts)
    if policy.nproc_per_node is not None:
        env["PET_NPROC_PER_NODE"] = str(policy.nproc_per_node)
    if policy.rdzv_id is not None:
        env["PET_RDZV_ID"] = policy.rdzv_id
    if policy.rdzv_conf:
        env["PET_RDZV_CONF"] = ",".join(f"{key}={value}" for key, value in policy.rdzv_conf)
    if policy.standalone:
        env["PET_STANDALONE"] = ""
    return env


def with_defaults(policy: dict[str, Any], worker_replicas: int) -> None:
    """Fill `minReplicas` and `maxReplicas` in place as Kubeflow's defaulter does: a missing bound copies the
    other, and with neither both become the Worker replica count."""
    low, high = policy.get("minReplicas"), policy.get("maxReplicas")
    if low is None and high is None:
        policy["minReplicas"] = policy["maxReplicas"] = worker_replicas
    elif low is None:
        policy["minReplicas"] = high
    elif high is None:
        policy["maxReplicas"] = low


def validate(spec: dict[str, Any], worker_key: str | None, worker_replicas: int | None) -> list[FieldError]:
    """Problems of `spec.elasticPolicy`; `worker_key` is the Worker key as written (None when there is no
    Worker) and `worker_replicas` its count when readable."""
    given = spec.get("elasticPolicy")
    if given is None:
        return []
    if not isinstance(given, dict):
        return [FieldError(PATH, fields.not_an_object(given))]
    errors = [FieldError(f"{PATH}.{key}", "unknown field") for key in given if key not in FIELDS]
    if worker_key is None:
        errors.append(
            FieldError("spec.pytorchReplicaSpecs.Worker", "is required: an elastic job scales its Workers")
        )
    found = fields.ErrorList()
    bounds = fields.integers(
        found, PATH, given, {"minReplicas": 1, "maxReplicas": 1, "nProcPerNode": 1, "maxRestarts": 0}
    )
    errors += found.errors
    low, high = bounds.get("minReplicas"), bounds.get("maxReplicas")
    if low is not None and high is not None and low > high:
        errors.append(FieldError(f"{PATH}.minReplicas", f"{low} is above maxReplicas {high}"))
    elif worker_key is not None and worker_replicas is not None:
        outside = replicas_outside(low, high, worker_replicas, worker_key)
        if outside is not None:
            errors.append(outside)
    if given.get("nProcPerNode") is not None and spec.get("nprocPerNode") is not None:
        errors.append(
            FieldError(f"{PATH}.nProcPerNode", "must not be used with spec.nprocPerNode (use that one)")
        )
    errors += _validate_rendezvous(given)
    errors += validate_metrics(given.get("metrics"))
    return errors


def replicas_outside(
    low: int | None, high: int | None, replicas: int, worker_key: str = "Worker"
) -> FieldError | None:
    """Worker `replicas` outside `[low, high]`, named as the Worker replicas field; one bound stands for
    both when the other is missing (Kubeflow's defaulting), and with neither there is no limit."""
    low = low if low is not None else high
    high = high if high is not None else low
    if low is None or high is None or low <= replicas <= high:
        return None
    return FieldError(
        f"spec.pytorchReplicaSpecs.{worker_key}.replicas",
        f"{replicas} is outside the elastic policy's [{low}, {high}]",
    )


def scale_problem(spec: dict[str, Any], replicas: int) -> FieldError | None:
    """Why a scale request (Worker `replicas`) must be refused for a job with this spec, or None. Only an
    elastic job has bounds; bounds that are themselves invalid are the job's validation's business."""
    policy = parse(spec)
    if policy is None:
        return None
    low, high = (
        bound if bound is not None and bound >= 1 else None
        for bound in (policy.min_replicas, policy.max_replicas)
    )
    if low is not None and high is not None and low > high:
        return None
    return replicas_outside(low, high, replicas)


def _validate_rendezvous(given: dict[str, Any]) -> list[FieldError]:
    errors = []
    backend = given.get("rdzvBackend")
    if backend is not None and backend not in BACKENDS:
        errors.append(
            FieldError(f"{PATH}.rdzvBackend", f"must be one of {', '.join(BACKENDS)}, not {backend!r}")
        )
    port = given.get("rdzvPort")
    if port is not None and ((number := as_int(port)) is None or not 1 <= number <= 65535):
        errors.append(FieldError(f"{PATH}.rdzvPort", f"must be a port number 1-65535, not {port!r}"))
    for field in ("rdzvHost", "rdzvId"):
        value = given.get(field)
        if value is not None and (not isinstance(value, str) or not value):
            errors.append(FieldError(f"{PATH}.{field}", f"must be a non-empty string, not {value!r}"))
    found = fields.ErrorList()
    fields.flag(found, f"{PATH}.standalone", given.get("standalone"))
    errors += found.errors
    conf = given.get("rdzvConf")
    if conf is not None and not isinstance(conf, list):
        errors.append(FieldError(f"{PATH}.rdzvConf", "must be a list of {key, value}"))
    for i, kv in enumerate(conf if isinstance(conf, list) else []):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str) or not kv["key"]:
            errors.append(FieldError(f"{PATH}.rdzvConf[{i}].key", "is required: a non-empty string"))
        elif set(kv) - {"key", "value"} or not isinstance(kv.get("value", ""), str):
            errors.append(
                FieldError(f"{PATH}.rdzvConf[{i}]", "must have a string key and a string value only")
            )
    return errors


def validate_metrics(metrics: object) -> list[FieldError]:
    """Problems of `spec.elasticPolicy.metrics` (autoscaling/v2 MetricSpecs); PyTorch and Paddle share it."""
    if metrics is None:
        return []
    if not isinstance(metrics, list):
        return [FieldError(f"{PATH}.metrics", "must be a list of autoscaling/v2 MetricSpecs")]
    errors = []
    for i, metric in enumerate(metrics):
        kind = metric.get("type") if isinstance(metric, dict) else None
        if kind not in METRIC_TYPES:
            errors.append(
                FieldError(
                    f"{PATH}.metrics[{i}].type", f"must be one of {', '.join(METRIC_TYPES)}, not {kind!r}"
                )
            )
        elif not isinstance(metric.get(kind[0].lower() + kind[1:]), dict):
            field = kind[0].lower() + kind[1:]
            errors.append(FieldError(f"{PATH}.metrics[{i}].{field}", f"is required for a {kind} metric"))
    return errors


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
