"""XGBoost (Rabit tracker) and LightGBM: the master's address, the world size and each replica's rank, as
Kubeflow v1.9's XGBoostJob writes them (pkg/controller.v1/xgboost/xgboost.go)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobs.frameworks.base import Environment, Framework
from jobs.frameworks.registry import register
from jobs.spec import JobSpec


@dataclass(frozen=True)
class XGBoostOptions:
    """WORKER_ADDRS, the same for every replica: resolved once per job, one string every pod shares (a job
    of 1000 replicas would otherwise join its 999 worker names for each of its pods)."""

    worker_addrs: str = ""


@register
class XGBoost(Framework[XGBoostOptions]):
    kind = "XGBoostJob"
    spec_key = "xgbReplicaSpecs"
    replica_types = ("Master", "Worker")
    chief_types = ("Master",)
    required_types = ("Master",)
    singleton_types = ("Master",)
    container_name = "xgboost"
    default_port = 9999

    def environment(self, job: JobSpec[XGBoostOptions], replica_type: str, index: int) -> Environment:
        """The Master is rank 0 and workers rank after it; WORLD_SIZE counts every pod. A job of more than
        one pod also gets WORKER_PORT and WORKER_ADDRS (what LightGBM's launcher reads): Kubeflow lists
        `<job>-worker-i` for i below WORLD_SIZE - 1, i.e. every worker of a job with one Master."""
        counts = job.counts
        world_size = sum(counts.values())
        rank = index + counts.get("Master", 0) if replica_type == "Worker" else index
        env = {
            "MASTER_PORT": str(job.port("Master")),
            "MASTER_ADDR": job.host("Master", 0),
            "WORLD_SIZE": str(world_size),
            "RANK": str(rank),
            "PYTHONUNBUFFERED": "1",
        }
        if world_size > 1:
            env["WORKER_PORT"] = str(job.port("Worker"))
            env["WORKER_ADDRS"] = job.options.worker_addrs
        return env

    def parse_options(self, spec: Mapping[str, Any], job: JobSpec[None]) -> XGBoostOptions:
        world_size = sum(job.counts.values())
        return XGBoostOptions(",".join(job.host("Worker", i) for i in range(world_size - 1)))
