"""PyTorch: torch.distributed's env:// rendezvous variables and torchrun's PET_* arguments, elastic or not."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fields import FieldError, as_dict, as_int
from jobs.frameworks import elastic
from jobs.frameworks.base import Count, Framework
from jobs.frameworks.registry import register
from jobs.spec import JobSpec, replica_count

NPROC_PER_NODE_WORDS = ("auto", "cpu", "gpu")


@dataclass(frozen=True)
class PyTorchOptions:
    """A PyTorchJob's own fields: `nprocPerNode` (a number or a word, "auto" when unreadable) and the
    elastic policy with its bounds defaulted (None: not an elastic job)."""

    nproc_per_node: int | str = "auto"
    elastic: elastic.ElasticPolicy | None = None


@register
class PyTorch(Framework[PyTorchOptions]):
    kind = "PyTorchJob"
    spec_key = "pytorchReplicaSpecs"
    replica_types = ("Master", "Worker")
    chief_types = ("Master",)
    singleton_types = ("Master",)
    container_name = "pytorch"
    default_port = 23456
    default_restart_policy = "OnFailure"
    extra_spec_fields = {"nprocPerNode": "auto"}
    optional_spec_fields = ("elasticPolicy",)

    def environment(self, job: JobSpec[PyTorchOptions], replica_type: str, index: int) -> dict[str, str]:
        """The variables Kubeflow's PyTorchJob sets, so `torchrun` starts with no arguments.

        With a Master: MASTER_ADDR/PORT, WORLD_SIZE and RANK (workers rank after the master). Without one
        and without an elastic policy, worker 0 stands in for the master (Kubeflow sets no master variables
        there, which leaves a static rendezvous nowhere to meet). An elastic job's workers meet through
        the PET_RDZV_* rendezvous instead, and PET_NNODES is `min:max` rather than the pod count.
        WORLD_SIZE counts processes: pods times `nprocPerNode` when that is a number, else pods.
        """
        counts = job.counts
        nodes = sum(counts.values())
        nproc_per_node, policy = job.options.nproc_per_node, job.options.elastic
        env = {"PYTHONUNBUFFERED": "1"}
        if "Master" in counts or policy is None:
            master_type = "Master" if "Master" in counts else "Worker"
            master, port = job.host(master_type, 0), str(job.port(master_type))
            rank = index + 1 if replica_type == "Worker" and master_type == "Master" else index
            env |= {
                "MASTER_ADDR": master,
                "MASTER_PORT": port,
                "WORLD_SIZE": str(nodes * (as_int(nproc_per_node) or 1)),
                "RANK": str(rank),
                "PET_MASTER_ADDR": master,
                "PET_MASTER_PORT": port,
                "PET_NODE_RANK": str(rank),
            }
        if policy is None or policy.nproc_per_node is None:
            env["PET_NPROC_PER_NODE"] = str(nproc_per_node)
        if policy is None:
            env["PET_NNODES"] = str(nodes)
        else:
            env |= elastic.environment(
                policy,
                default_host=job.host("Worker", 0),
                default_port=job.port("Worker"),
                worker_replicas=counts.get("Worker", 0),
            )
        return env

    def parse_options(self, spec: Mapping[str, Any], job: JobSpec[None]) -> PyTorchOptions:
        nproc = nproc_per_node(spec)
        return PyTorchOptions(
            nproc_per_node=nproc if isinstance(nproc, int | str) and not isinstance(nproc, bool) else "auto",
            # No Worker reads as 1, as the webhook's defaulting counts it (such a job is invalid anyway).
            elastic=elastic.parse_defaulted(spec, job.counts.get("Worker", 1)),
        )

    def validate_extra_fields(self, spec: dict[str, Any]) -> list[FieldError]:
        errors = []
        nproc = nproc_per_node(spec)
        if nproc not in NPROC_PER_NODE_WORDS and (as_int(nproc) or 0) < 1:
            errors.append(
                FieldError(
                    "spec.nprocPerNode", f'must be a positive number, "auto", "cpu" or "gpu", not {nproc!r}'
                )
            )
        worker_key = next(
            (key for key in as_dict(spec.get(self.spec_key)) if self.canonical_replica_type(key) == "Worker"),
            None,
        )
        worker_spec = as_dict(spec.get(self.spec_key)).get(worker_key) if worker_key is not None else None
        replicas = as_dict(worker_spec).get("replicas")
        worker_replicas = 1 if replicas is None else as_int(replicas)
        return errors + elastic.validate(spec, worker_key, worker_replicas)

    def counts(self, spec: Mapping[str, Any]) -> list[Count]:
        """The elastic bounds (replicas), and the processes each pod starts: `nprocPerNode`, or the
        deprecated `elasticPolicy.nProcPerNode`."""
        found = elastic.replica_bounds(spec)
        per_node = (
            ("spec.nprocPerNode", nproc_per_node(spec)),
            (f"{elastic.PATH}.nProcPerNode", as_dict(spec.get("elasticPolicy")).get("nProcPerNode")),
        )
        for path, value in per_node:
            number = as_int(value)
            if number is not None:
                found.append(Count.of_processes(path, number))
        return found

    def workers_succeeded(self, job: JobSpec[PyTorchOptions], succeeded: Mapping[int, bool]) -> bool:
        """Kubeflow's rule for a job of Workers only: every worker exits 0, or with an elastic policy any
        one of them (torchrun's workers finish together; a scaled-down one may not have run at all)."""
        if job.options.elastic is not None:
            return any(succeeded.values())
        return bool(succeeded) and all(succeeded.values())

    def default_extra_fields(self, spec: dict[str, Any]) -> None:
        """Kubeflow's defaulting: the elastic bounds, and `nprocPerNode` unless the (deprecated) elastic
        `nProcPerNode` says it already."""
        policy = spec.get("elasticPolicy")
        if isinstance(policy, dict):
            workers = as_dict(as_dict(spec.get(self.spec_key)).get("Worker"))
            elastic.with_defaults(policy, replica_count(workers))
            if policy.get("nProcPerNode") is not None:
                return
        super().default_extra_fields(spec)


def nproc_per_node(spec: Mapping[str, Any]) -> object:
    """`nprocPerNode` as written, a string of digits read as its number ("auto" when it is missing). A
    string `int()` refuses although `isdigit()` accepts it ("²", or more digits than Python converts) stays
    a string, which validation refuses."""
    nproc = spec.get("nprocPerNode", "auto")
    if isinstance(nproc, str) and nproc.isdigit():
        with contextlib.suppress(ValueError):
            return int(nproc)
    return nproc
