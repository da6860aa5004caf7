"""`manage.py render_job FILE.yaml`: print what the operator would create for a job: its
HorizontalPodAutoscaler (an elastic PyTorchJob with metrics), PodGroup (with a gang scheduler), Services and
Pods."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

import fields
from jobs import bounds, conf, gang
from jobs import spec as jobspec
from jobs.autoscaling import desired_hpa
from jobs.frameworks import UnknownKind, framework_for
from jobs.manifests import build_pod, build_service, extra_children
from jobs.validation import validate
from web import documents, yamlio


class Command(BaseCommand):
    help = (
        "Dry run: print, as YAML, what the operator would create for the training job in FILE "
        "(- for stdin), in the order it creates them: the HorizontalPodAutoscaler (an elastic PyTorchJob "
        "with metrics), the PodGroup (with a gang scheduler), Services and Pods. Nothing is sent to the "
        "cluster."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "file", help="A job manifest (YAML or JSON); several documents are rendered in turn."
        )
        parser.add_argument(
            "--cluster-domain",
            default=None,
            help="DNS suffix of service names in TF_CONFIG (default: settings.JOBS_CLUSTER_DOMAIN).",
        )
        parser.add_argument(
            "--gang-scheduler",
            choices=("none", *gang.GANG_SCHEDULERS),
            default=None,
            help="Preview gang scheduling: the PodGroup and the pods' marks (default: JOBS_GANG_SCHEDULER).",
        )

    def handle(
        self, *args: Any, file: str, cluster_domain: str | None, gang_scheduler: str | None, **options: Any
    ) -> None:
        domain = cluster_domain if cluster_domain is not None else conf.cluster_domain()
        scheduler = conf.gang_scheduler()
        if gang_scheduler == "none":
            scheduler = None
        elif gang_scheduler is not None and (scheduler is None or scheduler.kind != gang_scheduler):
            scheduler = gang.GangScheduler(gang_scheduler, gang.DEFAULT_SCHEDULER_NAMES[gang_scheduler])
        children: list[dict[str, Any]] = []
        jobs = documents.read_yaml_documents(file)
        if not jobs:
            raise CommandError(f"{file}: no job in it")
        for number, job in enumerate(jobs, start=1):
            children += render(job, domain, where=f"{file}, document {number}", scheduler=scheduler)
        self.stdout.write(yamlio.dump_all(children), ending="")


def render(
    job: Any, domain: str, *, where: str, scheduler: gang.GangScheduler | None = None
) -> list[dict[str, Any]]:
    """The job's HPA (if any), PodGroup (with a gang scheduler), Services then Pods; CommandError naming every
    invalid field (exit code 2 and one line for a count past its bound, checked before anything else)."""
    if not isinstance(job, dict):
        raise CommandError(f"{where}: a job {fields.not_an_object(job)}")
    try:
        framework = framework_for(job.get("kind"), cluster_domain=domain)
    except UnknownKind as error:
        raise CommandError(f"{where}: kind: {error}") from None
    over_bounds = bounds.count_errors(job, framework)
    if over_bounds:
        # One line, exit code 2: a document the command will not read, as one past the YAML reader's limits.
        problems = "; ".join(map(str, over_bounds))
        raise CommandError(f"{where}: {problems}", returncode=documents.BAD_INPUT)
    errors = validate(job, framework)
    if errors:
        raise CommandError(f"{where} is not a valid {framework.kind}:\n  " + "\n  ".join(map(str, errors)))
    hpa = desired_hpa(job, framework)
    autoscaler = [hpa] if hpa else []
    parsed = jobspec.parse(job, framework)
    # The framework's own children first (MPI: hostfile ConfigMap, SSH Secret, whose key is made at creation,
    # and the job's Service), as the operator creates them.
    extras = extra_children(parsed, framework, [])
    services = [build_service(parsed, framework, slot) for slot in parsed.slots if framework.replica_services]
    services = extras + services
    pods = [build_pod(parsed, framework, slot) for slot in parsed.slots]
    if scheduler is None:
        return autoscaler + services + pods
    for pod, slot in zip(pods, parsed.slots, strict=True):
        gang.decorate_pod(pod, scheduler, parsed.name, slot.replica_type)
    return [*autoscaler, gang.desired_pod_group(parsed, scheduler), *services, *pods]
