"""TensorFlow: TF_CONFIG describes the cluster, as the Kubeflow TFJob operator writes it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fields import FieldError
from jobs.frameworks.base import Framework
from jobs.frameworks.registry import register
from jobs.spec import JobSpec

SUCCESS_POLICY_ALL_WORKERS = "AllWorkers"
SUCCESS_POLICIES = ("", SUCCESS_POLICY_ALL_WORKERS)


@dataclass(frozen=True)
class TFOptions:
    """A TFJob's own fields: `successPolicy` ("" or AllWorkers; anything else reads as ""), and TF_CONFIG's
    `cluster` as JSON text: the same for every replica, so resolved once per job rather than per pod."""

    success_policy: str = ""
    cluster: str = "{}"


@register
class TensorFlow(Framework[TFOptions]):
    kind = "TFJob"
    spec_key = "tfReplicaSpecs"
    replica_types = ("Chief", "Master", "PS", "Worker", "Evaluator")
    chief_types = ("Chief", "Master")
    singleton_types = ("Chief", "Master", "Evaluator")
    container_name = "tensorflow"
    default_port = 2222
    default_clean_pod_policy = "Running"
    extra_spec_fields = {"successPolicy": ""}

    def environment(self, job: JobSpec[TFOptions], replica_type: str, index: int) -> dict[str, str]:
        """TF_CONFIG for a distributed job; a job of a single replica gets none (it trains locally).

        The cluster lists every type, the evaluator included, as Kubeflow has done since it stopped
        leaving it out (TF's distribute coordinator fails with "No such job in cluster: evaluator"
        without it). Types with no replicas are left out rather than listed empty.
        """
        if sum(job.counts.values()) <= 1:
            return {}
        # What json.dumps of {"cluster": ..., "task": ..., "environment": "cloud"} writes, with the cluster
        # encoded once per job: a 100-worker job would otherwise encode 100 addresses for each of its pods.
        task = json.dumps({"type": replica_type.lower(), "index": index}, separators=(",", ":"))
        return {"TF_CONFIG": f'{{"cluster":{job.options.cluster},"task":{task},"environment":"cloud"}}'}

    def parse_options(self, spec: Mapping[str, Any], job: JobSpec[None]) -> TFOptions:
        policy = spec.get("successPolicy")
        cluster = {
            rt.lower(): [f"{self.fqdn(job, rt, i)}:{job.port(rt)}" for i in range(count)]
            for rt, count in sorted(job.counts.items(), key=lambda item: item[0].lower())
            if count > 0
        }
        return TFOptions(
            success_policy=policy if policy in SUCCESS_POLICIES else "",
            cluster=json.dumps(cluster, separators=(",", ":")),
        )

    def validate_extra_fields(self, spec: dict[str, Any]) -> list[FieldError]:
        policy = spec.get("successPolicy", "")
        if policy not in SUCCESS_POLICIES:
            return [FieldError("spec.successPolicy", f'must be "" or "AllWorkers", not {policy!r}')]
        return []

    def workers_succeeded(self, job: JobSpec[TFOptions], succeeded: Mapping[int, bool]) -> bool:
        """Worker 0 decides, or every worker with `successPolicy: AllWorkers`."""
        if job.options.success_policy == SUCCESS_POLICY_ALL_WORKERS:
            return bool(succeeded) and all(succeeded.values())
        return super().workers_succeeded(job, succeeded)
