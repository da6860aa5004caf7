"""Apache MXNet: the DMLC_* variables of its parameter server, plus MX_CONFIG as Kubeflow writes it."""

from __future__ import annotations

import json
from typing import Any

from jobs.frameworks.base import Framework
from jobs.frameworks.registry import register
from jobs.spec import FieldError, JobSpec, ReplicaSpec, as_dict

#: Template annotation Kubeflow copies into MX_CONFIG `labels` (used by TVM auto-tuning).
TUNER_SERVER_KEY = "tuner-server-key"


@register
class MXNet(Framework[None]):
    kind = "MXJob"
    plural = "mxjobs"
    short_name = "mxjob"
    spec_key = "mxReplicaSpecs"
    replica_types = ("Scheduler", "Server", "Worker")
    singleton_types = ("Scheduler",)
    container_name = "mxnet"
    port_name = "mxjob-port"
    default_port = 9091
    default_restart_policy = "Never"
    default_clean_pod_policy = "None"
    extra_spec_fields = {"jobMode": "MXTrain"}

    def environment(self, job: JobSpec[None], replica_type: str, index: int) -> dict[str, str]:
        """DMLC_* for ps-lite and MX_CONFIG; hosts are bare service names, as upstream writes them."""
        counts = job.counts
        ordered = sorted(counts.items(), key=lambda item: item[0].lower())
        config = {
            "cluster": {
                rt.lower(): [{"url": job.host(rt, i), "port": job.port(rt)} for i in range(count)]
                for rt, count in ordered
            },
            "labels": {rt.lower(): _tuner_server_key(job.replicas[rt]) for rt, _ in ordered},
            "task": {"type": replica_type.lower(), "index": index},
        }
        env = {"MX_CONFIG": json.dumps(config, separators=(",", ":"))}
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

    def validate_extra_fields(self, spec: dict[str, Any]) -> list[FieldError]:
        mode = spec.get("jobMode", "MXTrain")
        if mode != "MXTrain":
            return [FieldError("spec.jobMode", f'only "MXTrain" is supported, not {mode!r}')]
        return []


def _tuner_server_key(replica_spec: ReplicaSpec) -> str:
    metadata = as_dict(replica_spec.template.get("metadata"))
    return str(as_dict(metadata.get("annotations")).get(TUNER_SERVER_KEY, ""))
