"""PaddlePaddle: `paddle.distributed.launch`'s PADDLE_* variables, as Kubeflow v1.9's PaddleJob writes them
(pkg/controller.v1/paddlepaddle/envvar.go): collective mode with Workers only, parameter-server mode with
Masters (the servers) and Workers (the trainers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import fields
from fields import FieldError, as_dict
from jobs.frameworks import elastic
from jobs.frameworks.base import Count, Environment, FieldRef, Framework
from jobs.frameworks.registry import register
from jobs.spec import JobSpec, replica_count

ELASTIC_PATH = elastic.PATH
ELASTIC_FIELDS = ("minReplicas", "maxReplicas", "maxRestarts", "metrics")
#: The variable the rendezvous replica reads its own address from (Kubeflow's name for it).
POD_IP = "POD_IP_DUMMY"


@register
class Paddle(Framework[None]):
    kind = "PaddleJob"
    spec_key = "paddleReplicaSpecs"
    replica_types = ("Master", "Worker")
    chief_types = ("Master",)
    container_name = "paddle"
    port_name = "master"
    default_port = 36543
    default_restart_policy = "OnFailure"
    optional_spec_fields = ("elasticPolicy",)

    def environment(self, job: JobSpec[None], replica_type: str, index: int) -> Environment:
        """Replica 0 of the rendezvous type (Master when the job has one, else Worker) is PADDLE_MASTER and
        announces its own pod IP; the others reach it by service name. PADDLE_NNODES counts every pod; in
        parameter-server mode each pod is one server (Master) or one trainer (Worker)."""
        rendezvous = "Master" if "Master" in job.replicas else "Worker"
        port = job.port(rendezvous)
        env: dict[str, str | FieldRef] = {
            "PYTHONUNBUFFERED": "1",
            "PADDLE_JOB_ID": job.name,
            "PADDLE_NNODES": str(sum(job.counts.values())),
        }
        if replica_type == rendezvous and index == 0:
            env[POD_IP] = FieldRef("status.podIP")
            env["PADDLE_MASTER"] = f"$({POD_IP}):{port}"
        else:
            env["PADDLE_MASTER"] = f"{job.host(rendezvous, 0)}:{port}"
        if rendezvous == "Master":
            env["PADDLE_SERVER_NUM" if replica_type == "Master" else "PADDLE_TRAINER_NUM"] = "1"
        return env

    def workers_succeeded(self, job: JobSpec[None], succeeded: Mapping[int, bool]) -> bool:
        """Kubeflow's rule in collective mode: the job succeeds when every worker has."""
        return bool(succeeded) and all(succeeded.values())

    def default_extra_fields(self, spec: dict[str, Any]) -> None:
        """Kubeflow's defaulting of the elastic bounds (the same rule as PyTorch's)."""
        policy = spec.get("elasticPolicy")
        if isinstance(policy, dict):
            workers = as_dict(as_dict(spec.get(self.spec_key)).get("Worker"))
            elastic.with_defaults(policy, replica_count(workers))

    def counts(self, spec: Mapping[str, Any]) -> list[Count]:
        """The elastic bounds, as PyTorch's: what an autoscaler may scale the job to."""
        return elastic.replica_bounds(spec)

    def validate_extra_fields(self, spec: dict[str, Any]) -> list[FieldError]:
        """`elasticPolicy` as Kubeflow declares it; it bounds nothing here, as upstream it does not."""
        given = spec.get("elasticPolicy")
        if given is None:
            return []
        if not isinstance(given, dict):
            return [FieldError(ELASTIC_PATH, fields.not_an_object(given))]
        errors = [
            FieldError(f"{ELASTIC_PATH}.{key}", f"unknown field; expected one of {', '.join(ELASTIC_FIELDS)}")
            for key in given
            if key not in ELASTIC_FIELDS
        ]
        found = fields.ErrorList()
        bounds = fields.integers(
            found, ELASTIC_PATH, given, {"minReplicas": 1, "maxReplicas": 1, "maxRestarts": 0}
        )
        errors += found.errors
        low, high = bounds.get("minReplicas"), bounds.get("maxReplicas")
        if low is not None and high is not None and low > high:
            errors.append(FieldError(f"{ELASTIC_PATH}.minReplicas", f"{low} is above maxReplicas {high}"))
        return errors + elastic.validate_metrics(given.get("metrics"))
