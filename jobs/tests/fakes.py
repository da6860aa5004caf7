"""Test helpers: job manifests, pods as the API returns them, and a tiny cluster that applies Plans."""

from __future__ import annotations

import copy
import itertools
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import fields
from jobs import spec as jobspec
from jobs.frameworks import Framework, framework_class, framework_for
from jobs.plan import Observed, Plan, parse_job, plan
from jobs.status import current_state

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
_uids = itertools.count(1)


def replica(container: str, replicas: int | None = 1, restart_policy: str | None = None, **spec: Any) -> dict:
    """One replica spec whose pod runs `container` (the framework container's name)."""
    replica_spec: dict[str, Any] = {
        "template": {"spec": {"containers": [{"name": container, "image": "example/train:1"}]}},
        **spec,
    }
    if replicas is not None:
        replica_spec["replicas"] = replicas
    if restart_policy is not None:
        replica_spec["restartPolicy"] = restart_policy
    return replica_spec


def make_job(
    kind: str,
    replicas: dict[str, int],
    *,
    name: str = "train",
    namespace: str = "ml",
    restart_policy: str | None = None,
    run_policy: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A job of `kind` with `replicas` per type, each pod running the framework's container."""
    framework = framework_class(kind)
    job_spec: dict[str, Any] = {
        framework.spec_key: {
            rt: replica(framework.container_name, count, restart_policy) for rt, count in replicas.items()
        },
        **spec,
    }
    if run_policy is not None:
        job_spec["runPolicy"] = run_policy
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "uid": f"job-uid-{name}", "generation": 1},
        "spec": job_spec,
    }


def tf_job(
    chief: int = 1, ps: int = 2, workers: int = 4, evaluator: int = 0, **kwargs: Any
) -> dict[str, Any]:
    counts = {"Chief": chief, "PS": ps, "Worker": workers, "Evaluator": evaluator}
    return make_job("TFJob", {rt: n for rt, n in counts.items() if n}, **kwargs)


def env_of(framework: Framework, job: dict[str, Any], replica_type: str, index: int) -> dict[str, str]:
    """The framework's variables for one replica of the job as written (parsed first, as the operator is)."""
    return framework.environment(jobspec.parse(job, framework), replica_type, index)


def created(manifest: dict[str, Any]) -> dict[str, Any]:
    """`manifest` as the API server stores it: with a uid, and a Pending status for pods (no `kind`,
    as in list responses)."""
    obj = copy.deepcopy(manifest)
    obj.pop("kind", None)
    obj["metadata"]["uid"] = f"uid-{next(_uids)}"
    if manifest["kind"] == "Pod":
        obj["status"] = {"phase": "Pending"}
    return obj


def with_state(
    pod: dict[str, Any],
    phase: str,
    *,
    exit_code: int | None = None,
    restarts: int = 0,
    container: str | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """`pod` with a phase and its first container's status (terminated with `exit_code` if given)."""
    pod = copy.deepcopy(pod)
    container = container or pod["spec"]["containers"][0]["name"]
    state: dict[str, Any] = {"running": {}} if exit_code is None else {"terminated": {"exitCode": exit_code}}
    pod["status"] = {
        "phase": phase,
        "containerStatuses": [{"name": container, "state": state, "restartCount": restarts}],
    }
    if reason:
        pod["status"]["reason"] = reason
    return pod


def plan_job(
    job: dict[str, Any],
    pods: list[dict[str, Any]],
    services: list[dict[str, Any]],
    now: datetime,
    *,
    framework: Framework[Any] | None = None,
    cluster_domain: str = "",
    config_maps: list[dict[str, Any]] | tuple[()] = (),
    **gang_reads: Any,
) -> Plan:
    """`plan()` of a job as the reconcile loop reads it: `parse_job`, the children it controls, its status."""
    framework = framework or framework_for(job.get("kind"), cluster_domain=cluster_domain)
    parsed = parse_job(job, framework)
    observed = Observed.of(parsed.spec.uid, pods, services, config_maps, **gang_reads)
    return plan(parsed, observed, fields.as_dict(job.get("status")), now)


class FakeCluster:
    """Holds one job and its children, and applies Plans the way the reconcile loop will."""

    def __init__(self, job: dict[str, Any], now: datetime = T0) -> None:
        self.job: dict[str, Any] | None = copy.deepcopy(job)
        self.pods: dict[str, dict[str, Any]] = {}
        self.services: dict[str, dict[str, Any]] = {}
        self.config_maps: dict[str, dict[str, Any]] = {}
        self.secrets: dict[str, dict[str, Any]] = {}
        self.now = now
        self.events: list[tuple[str, str]] = []
        self.last_plan: Plan | None = None

    def reconcile(self, seconds_later: float = 1) -> Plan:
        assert self.job is not None, "the job was deleted"
        self.now += timedelta(seconds=seconds_later)
        result = plan_job(
            self.job,
            list(self.pods.values()),
            list(self.services.values()),
            self.now,
            config_maps=list(self.config_maps.values()),
        )
        self.job["status"] = result.status
        for deletion in result.delete:
            store = self.store(deletion.kind)
            if store.get(deletion.name, {}).get("metadata", {}).get("uid") == deletion.uid:
                del store[deletion.name]
        for manifest in result.update:
            self.store(manifest.get("kind", "ConfigMap"))[manifest["metadata"]["name"]] = manifest
        for manifest in result.create:
            self.store(manifest["kind"]).setdefault(manifest["metadata"]["name"], created(manifest))
        self.events += [(e.type, e.reason) for e in result.events]
        if result.delete_job:
            self.job = None
        self.last_plan = result
        return result

    def store(self, kind: str) -> dict[str, dict[str, Any]]:
        return {
            "Pod": self.pods,
            "Service": self.services,
            "ConfigMap": self.config_maps,
            "Secret": self.secrets,
        }[kind]

    def set_pod(self, name: str, phase: str, **state: Any) -> None:
        self.pods[name] = with_state(self.pods[name], phase, **state)

    def run_all(self) -> None:
        for name in self.pods:
            self.set_pod(name, "Running")

    @property
    def state(self) -> str | None:
        assert self.job is not None
        return current_state(self.job["status"])

    @property
    def status(self) -> dict[str, Any]:
        assert self.job is not None
        return self.job["status"]


@dataclass
class Peak:
    """The most memory Python held at once inside a `peak_memory()` block, in bytes (set when it ends)."""

    bytes: int = 0

    @property
    def mib(self) -> float:
        return self.bytes / 2**20


@contextmanager
def peak_memory() -> Iterator[Peak]:
    """Measure, with tracemalloc, the peak of what the block allocates: the bound a door's work must keep
    whatever a count says (a timer would only say how busy the machine was)."""
    peak = Peak()
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak.bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
