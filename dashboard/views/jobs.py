"""Training jobs: the list (filters kept in the URL), a job's page with its live status fragment, events
read from the cluster, and the Stop and Resubmit actions (through jobs.actions)."""

from __future__ import annotations

import secrets
import string
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from dashboard.access import require_editor
from dashboard.cluster import cluster_client
from dashboard.jobgrid import replica_grid
from jobs import actions, apigroups
from jobs.frameworks import UnknownKind, framework_class, kinds
from jobs.models import Replica, TrainingJob
from jobs.spec import replica_counts
from jobs.status import CONDITION_TYPES
from kube.errors import ApiError

from . import mirrors, tensorboards
from .common import choices, manifest_of, page
from .mirrors import ListFilters, MirrorPages, name_prefix_field

FINISHED = ("Succeeded", "Failed")
LIST_COLUMNS = (
    "id", "uid", "namespace", "name", "kind", "phase", "replica_summary", "state_reason", "restarts",
    "created_at", "start_time", "completion_time", "deleted_at",
)  # fmt: skip
REPLICA_COLUMNS = (
    "id", "uid", "job_id", "namespace", "name", "phase", "replica_type", "replica_index", "exit_code",
    "restarts", "node", "message", "created_at", "deleted_at",
)  # fmt: skip
MAX_NAME = 63
_SUFFIX_ALPHABET = string.ascii_lowercase + string.digits


class JobFilters(ListFilters):
    kind = forms.ChoiceField(required=False)
    phase = forms.ChoiceField(required=False, choices=[("", "any phase")] + [(p, p) for p in CONDITION_TYPES])
    name = name_prefix_field()
    deleted = forms.BooleanField(required=False, label="Deleted jobs")

    def __init__(self, data: Any, namespaces: list[str]) -> None:
        super().__init__(data, namespaces)
        choices(self, "kind", [("", "any kind")] + [(k, k) for k in kinds()])


JOBS = MirrorPages(
    TrainingJob, "job", JobFilters, LIST_COLUMNS,
    is_live=lambda job: job.phase not in FINISHED and job.deleted_at is None,
)  # fmt: skip
job_list = JOBS.list_view()


def status_context(job: TrainingJob) -> dict[str, Any]:
    """What the job's status fragment shows: phase, conditions, the replica grid and the history."""
    replicas = list(Replica.objects.filter(job=job).only(*REPLICA_COLUMNS).order_by("created_at", "id"))
    try:
        wanted = replica_counts({"spec": job.spec}, framework_class(job.kind)())
    except UnknownKind:
        wanted = {}
    grid = replica_grid(wanted, replicas, job.phase)
    stopped_after_success = any(cell.stopped for row in grid for cell in row.cells)
    return JOBS.status_context(
        job, finished=job.phase in FINISHED, grid=grid, stopped_after_success=stopped_after_success
    )


@page
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = JOBS.row(request, pk)

    def page_only() -> dict[str, Any]:
        manifest = manifest_of(job, job.api_version, job.kind)
        return {"manifest": manifest, "tensorboard_refusal": tensorboard_refusal(job)}

    return JOBS.status_or_page(request, job, status_context(job), page_only)


def tensorboard_refusal(job: TrainingJob) -> str:
    """Why the job's TensorBoard button is disabled, or "" when it may be pressed: the spawner reads
    training jobs of our group only (a Tensorboard's workflowRef names a kind, not a group)."""
    if job.api_group != apigroups.ARGOML_GROUP:
        ours = apigroups.ARGOML_API_VERSION
        return f"TensorBoard opens {job.kind}s of {ours} only; this one is {job.api_version}."
    return ""


job_events = JOBS.events_view()


@page
def job_by_name(request: HttpRequest, namespace: str, kind: str, name: str) -> HttpResponse:
    """A job named by the user (after a submit): its page once the mirror has it, a waiting page before."""
    jobs = TrainingJob.objects.filter(kind=kind)
    return mirrors.by_name(request, jobs, "dashboard:job", namespace=namespace, kind=kind, name=name)


job_stop = JOBS.stop_view(
    lambda job: actions.delete_job(job.kind, job.namespace, job.name, job.uid, job.api_version),
    title=lambda job: f"{job.kind} {job.name}", consequence="its pods are deleted",
)  # fmt: skip


# Open the job in TensorBoard at the log directory an administrator configured for training jobs.
job_tensorboard = tensorboards.source_view(
    JOBS, kind=lambda job: job.kind, contents=lambda job: f"the logs of {job.kind} {job.name}",
    refusal=tensorboard_refusal,
)  # fmt: skip


def resubmitted_name(name: str) -> str:
    """The copy's name: the original's with a fresh 5-character suffix, within the 63-character limit."""
    suffix = "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))
    base = name[: MAX_NAME - len(suffix) - 1].rstrip("-.")
    return f"{base}-{suffix}"


@page
@require_POST
def job_resubmit(request: HttpRequest, pk: int) -> HttpResponse:
    job = JOBS.row(request, pk)
    require_editor(request, job.namespace)
    manifest = manifest_of(job, job.api_version, job.kind)
    manifest["metadata"]["name"] = resubmitted_name(job.name)
    try:
        cluster_client()
        actions.submit_job(manifest)
    except actions.JobRejected as rejected:
        messages.error(request, f"The copy was refused: {rejected}")
        return redirect("dashboard:job", pk=job.pk)
    except ApiError as error:
        messages.error(request, f"The cluster did not accept the copy: {error}")
        return redirect("dashboard:job", pk=job.pk)
    new_name = manifest["metadata"]["name"]
    messages.success(request, f"Resubmitted {job.name} as {new_name}.")
    return HttpResponseRedirect(reverse("dashboard:job-by-name", args=[job.namespace, job.kind, new_name]))
