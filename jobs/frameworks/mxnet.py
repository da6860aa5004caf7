"""Apache MXNet: the DMLC_* variables of its parameter server, plus MX_CONFIG as Kubeflow writes it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fields import FieldError, as_dict
from jobs.frameworks.base import Framework
from jobs.frameworks.registry import register
from jobs.spec import JobSpec, ReplicaSpec

#: Template annotation Kubeflow copies into MX_CONFIG `labels` (used by TVM auto-tuning).
TUNER_SERVER_KEY = "tuner-server-key"


@dataclass(frozen=True)
class MXOptions:
    """What every replica's MX_CONFIG shares, as JSON text resolved once per job rather than per pod (a job
    of 1000 replicas would otherwise build and encode its 1000 addresses 1000 times): the `cluster` and the
    `labels`."""

    cluster: str = "{}"
    labels: str = "{}"


@register
class MXNet(Framework[MXOptions]):
    kind = "MXJob"
    spec_key = "mxReplicaSpecs"
    replica_types = ("Scheduler", "Server", "Worker")
    singleton_types = ("Scheduler",)
    container_name = "mxnet"
    default_port = 9091
    extra_spec_fields = {"jobMode": "MXTrain"}

    def environment(self, job: JobSpec[MXOptions], replica_type: str, index: int) -> dict[str, str]:
        """DMLC_* for ps-lite and MX_CONFIG; hosts are bare service names, as upstream writes them."""
        counts = job.counts
        # What json.dumps of {"cluster": ..., "labels": ..., "task": ...} writes, shared parts encoded once.
        task = json.dumps({"type": replica_type.lower(), "index": index}, separators=(",", ":"))
        options = job.options
        env = {"MX_CONFIG": f'{{"cluster":{options.cluster},"labels":{options.labels},"task":{task}}}'}
        if counts.get("Scheduler", 0) > 0:
            env["DMLC_PS_ROOT_URI"] = job.host("Scheduler", 0)
            env["DMLC_PS_ROOT_PORT"] = str(job.port("Scheduler"))
        env["DMLC_NUM_SERVER"] = str(counts.get("Server", 0))
        env["DMLC_NUM_WORKER"] = str(counts.get("Worker", 0))
        env["DMLC_ROLE"] = replica_type.lower()
        env["DMLC_USE_KUBERNETES"] = "1"
        if replica_type == "Worker":
            env["DMLC_WORKER_ID"] = str(index)
        return env

    def parse_options(self, spec: Mapping[str, Any], job: JobSpec[None]) -> MXOptions:
        ordered = sorted(job.counts.items(), key=lambda item: item[0].lower())
        cluster = {
            rt.lower(): [{"url": job.host(rt, i), "port": job.port(rt)} for i in range(count)]
            for rt, count in ordered
        }
        labels = {rt.lower(): _tuner_server_key(job.replicas[rt]) for rt, _ in ordered}
        return MXOptions(
            cluster=json.dumps(cluster, separators=(",", ":")),
            labels=json.dumps(labels, separators=(",", ":")),
        )

    def validate_extra_fields(self, spec: dict[str, Any]) -> list[FieldError]:
        mode = spec.get("jobMode", "MXTrain")
        if mode != "MXTrain":
            return [FieldError("spec.jobMode", f'only "MXTrain" is supported, not {mode!r}')]
        return []


def _tuner_server_key(replica_spec: ReplicaSpec) -> str:
    metadata = as_dict(replica_spec.template.get("metadata"))
    return str(as_dict(metadata.get("annotations")).get(TUNER_SERVER_KEY, ""))
