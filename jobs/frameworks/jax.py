"""JAX: `jax.distributed.initialize()`'s coordinator, process count and process id, as Kubeflow v1.9's JAXJob
writes them (pkg/controller.v1/jax/envvar.go)."""

from __future__ import annotations

from collections.abc import Mapping

from jobs.frameworks.base import Environment, Framework
from jobs.frameworks.registry import register
from jobs.spec import JobSpec


@register
class JAX(Framework[None]):
    kind = "JAXJob"
    spec_key = "jaxReplicaSpecs"
    replica_types = ("Worker",)
    required_types = ("Worker",)
    container_name = "jax"
    default_port = 6666

    def environment(self, job: JobSpec[None], replica_type: str, index: int) -> Environment:
        """Worker 0 is the coordinator; every worker is one process, its index the process id."""
        return {
            "PYTHONUNBUFFERED": "1",
            "COORDINATOR_PORT": str(job.port("Worker")),
            "COORDINATOR_ADDRESS": job.host("Worker", 0),
            "NUM_PROCESSES": str(sum(job.counts.values())),
            "PROCESS_ID": str(index),
        }

    def workers_succeeded(self, job: JobSpec[None], succeeded: Mapping[int, bool]) -> bool:
        """Kubeflow's rule: the job succeeds when every worker has (each is one process of one program)."""
        return bool(succeeded) and all(succeeded.values())
