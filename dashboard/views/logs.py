"""A replica's logs, read from the cluster's pod log endpoint through kube's client: followed while the pod
runs (the fragment asks again every few seconds and stops once the pod finished), and a clear message once
the pod is gone (its logs went with it)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.access import get_readable
from dashboard.cluster import cluster_client
from jobs.frameworks import UnknownKind, framework_for
from jobs.models import Replica, TrainingJob
from jobs.spec import replica_container_name
from kube.errors import ApiError, NotFound
from kube.models import MirroredResource

from .common import POLL_SECONDS, is_fragment, page

TAIL_LINES = 1000
LIMIT_BYTES = 512 * 1024
FINISHED_POD_PHASES = ("Succeeded", "Failed")


def read_logs(replica: MirroredResource, container: str | None) -> tuple[str, str]:
    """(text, problem): the pod's last lines (a job's Replica or a TrainJob's pod), or why there are none."""
    if replica.deleted_at is not None:
        return (
            "",
            f"Pod {replica.name} was deleted at {replica.deleted_at:%Y-%m-%d %H:%M:%S %Z}: "
            "its logs went with it.",
        )
    try:
        text = cluster_client().logs(
            replica.name,
            replica.namespace,
            container=container,
            tail_lines=TAIL_LINES,
            limit_bytes=LIMIT_BYTES,
        )
    except NotFound:
        return "", f"Pod {replica.name} no longer exists in the cluster: its logs went with it."
    except ApiError as error:
        return "", f"No logs yet: {error}"
    return text, ""


@page
def replica_logs(request: HttpRequest, pk: int, replica_pk: int) -> HttpResponse:
    job = get_readable(
        request, TrainingJob.objects.only("id", "uid", "namespace", "name", "kind", "spec"), pk=pk
    )
    replica = get_readable(request, Replica.objects.filter(job=job), pk=replica_pk)
    try:
        framework = framework_for(job.kind)
    except UnknownKind:
        container = None
    else:
        container = replica_container_name({"spec": job.spec}, framework, replica.replica_type)
    text, problem = read_logs(replica, container)
    following = replica.deleted_at is None and replica.phase not in FINISHED_POD_PHASES
    context = {
        "job": job,
        "replica": replica,
        "container": container,
        "text": text,
        "problem": problem,
        "following": following,
        "poll_seconds": POLL_SECONDS,
        "tail_lines": TAIL_LINES,
    }
    template = "dashboard/jobs/_logs.html" if is_fragment(request) else "dashboard/jobs/logs.html"
    return render(request, template, context)
