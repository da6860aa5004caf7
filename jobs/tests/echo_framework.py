"""A toy framework added in a few lines, run end to end by test_operator.py: the class and two
registrations, as a framework and as a controller (its custom resource is in echo_crd.py). The operator
test worker imports this module (`celery worker -I`); the test process does not, so its registries keep
the real kinds only."""

from __future__ import annotations

from jobs.controllers import register_job_controller
from jobs.frameworks import Framework, register
from jobs.spec import JobSpec


@register
class Echo(Framework[None]):
    """Workers that only need to know each other's names."""

    kind = "EchoJob"
    plural = "echojobs"
    short_name = "echojob"
    spec_key = "echoReplicaSpecs"
    replica_types = ("Worker",)
    container_name = "echo"
    port_name = "echojob-port"
    default_port = 7777

    def environment(self, job: JobSpec[None], replica_type: str, index: int) -> dict[str, str]:
        workers = job.counts["Worker"]
        return {"ECHO_PEERS": ",".join(job.host("Worker", i) for i in range(workers))}


register_job_controller(Echo)
