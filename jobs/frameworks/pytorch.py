"""PyTorch: torch.distributed's env:// rendezvous variables and torchrun's PET_* arguments."""

from __future__ import annotations

from typing import Any

from jobs.frameworks.base import Framework
from jobs.frameworks.registry import register
from jobs.spec import FieldError, as_int, job_spec

NPROC_PER_NODE_WORDS = ("auto", "cpu", "gpu")


@register
class PyTorch(Framework):
    kind = "PyTorchJob"
    plural = "pytorchjobs"
    short_name = "pytorchjob"
    spec_key = "pytorchReplicaSpecs"
    replica_types = ("Master", "Worker")
    chief_types = ("Master",)
    required_types = ("Master",)
    singleton_types = ("Master",)
    container_name = "pytorch"
    port_name = "pytorchjob-port"
    default_port = 23456
    default_restart_policy = "OnFailure"
    default_clean_pod_policy = "None"
    extra_spec_fields = {"nprocPerNode": "auto"}

    def environment(self, job: dict[str, Any], replica_type: str, index: int) -> dict[str, str]:
        """MASTER_ADDR/PORT, WORLD_SIZE and RANK (workers rank after the master), as Kubeflow sets them.

        WORLD_SIZE counts processes: pods times `nprocPerNode` when that is a number, else pods.
        The PET_* twins let `torchrun` start with no arguments.
        """
        nodes = sum(self.replica_counts(job).values())
        nproc = _nproc_per_node(job)
        rank = index + 1 if replica_type == "Worker" else index
        master, port = self.host(job, "Master", 0), str(self.port(job, "Master"))
        return {
            "PYTHONUNBUFFERED": "1",
            "MASTER_ADDR": master,
            "MASTER_PORT": port,
            "WORLD_SIZE": str(nodes * (as_int(nproc) or 1)),
            "RANK": str(rank),
            "PET_MASTER_ADDR": master,
            "PET_MASTER_PORT": port,
            "PET_NNODES": str(nodes),
            "PET_NODE_RANK": str(rank),
            "PET_NPROC_PER_NODE": str(nproc),
        }

    def validate_extra_fields(self, spec: dict[str, Any]) -> list[FieldError]:
        nproc = spec.get("nprocPerNode", "auto")
        if isinstance(nproc, str) and nproc.isdigit():
            nproc = int(nproc)
        if nproc in NPROC_PER_NODE_WORDS or (as_int(nproc) or 0) >= 1:
            return []
        return [
            FieldError(
                "spec.nprocPerNode", f'must be a positive number, "auto", "cpu" or "gpu", not {nproc!r}'
            )
        ]


def _nproc_per_node(job: dict[str, Any]) -> int | str:
    nproc = job_spec(job).get("nprocPerNode", "auto")
    if isinstance(nproc, str) and nproc.isdigit():
        return int(nproc)
    return nproc if isinstance(nproc, int | str) and not isinstance(nproc, bool) else "auto"
