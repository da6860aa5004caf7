"""`manage.py render_job FILE.yaml`: print what the operator would create for a job: its
HorizontalPodAutoscaler (an elastic PyTorchJob with metrics), Services and Pods."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from argoml_site import yamlio
from argoml_site.documents import read_yaml_documents
from jobs.autoscaling import desired_hpa
from jobs.conf import cluster_domain as default_cluster_domain
from jobs.frameworks import UnknownKind, framework_for
from jobs.manifests import desired_pods, desired_services
from jobs.validation import validate


class Command(BaseCommand):
    help = (
        "Dry run: print, as YAML, the HorizontalPodAutoscaler (an elastic PyTorchJob with metrics), Services "
        "and Pods the operator would create for the TFJob, MXJob or PyTorchJob in FILE (- for stdin), in the "
        "order it creates them. Nothing is sent to the cluster."
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

    def handle(self, *args: Any, file: str, cluster_domain: str | None, **options: Any) -> None:
        domain = cluster_domain if cluster_domain is not None else default_cluster_domain()
        children: list[dict[str, Any]] = []
        documents = read_yaml_documents(file)
        if not documents:
            raise CommandError(f"{file}: no job in it")
        for number, job in enumerate(documents, start=1):
            children += render(job, domain, where=f"{file}, document {number}")
        self.stdout.write(yamlio.dump_all(children), ending="")


def render(job: Any, domain: str, *, where: str) -> list[dict[str, Any]]:
    """The job's HPA (if any), Services, then Pods; CommandError naming every invalid field."""
    if not isinstance(job, dict):
        raise CommandError(f"{where}: a job must be a mapping, not {type(job).__name__}")
    try:
        framework = framework_for(job.get("kind"), cluster_domain=domain)
    except UnknownKind as error:
        raise CommandError(f"{where}: kind: {error}") from None
    errors = validate(job, framework)
    if errors:
        raise CommandError(f"{where} is not a valid {framework.kind}:\n  " + "\n  ".join(map(str, errors)))
    hpa = desired_hpa(job, framework)
    return ([hpa] if hpa else []) + desired_services(job, framework) + desired_pods(job, framework)
