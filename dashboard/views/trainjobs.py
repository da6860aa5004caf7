"""TrainJobs (Kubeflow Trainer v2): the list (filters kept in the URL), a TrainJob's page with its live
status fragment (steps and pods, conditions, history, runtime and the revision it ran), its events read
from the cluster, a pod's logs, and its progress and metrics over time as Plotly JSON (trainplots)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from dashboard import trainplots
from dashboard.access import get_readable
from hyperparam.models import Sweep
from kube.names import label_value
from trainer import constants as c
from trainer.models import RuntimeRevision, TrainerStatusUpdate, TrainingRuntime, TrainJob, TrainJobPod
from trainer.models.trainjobs import PHASES
from trainer.runtimes import actions
from web import csp

from . import tensorboards
from .common import POLL_SECONDS, is_fragment, manifest_of, page
from .logs import FINISHED_POD_PHASES, TAIL_LINES, read_logs
from .mirrors import ListFilters, MirrorPages, name_prefix_field

LIST_COLUMNS = (
    "id", "uid", "namespace", "name", "phase", "state_reason", "runtime_kind", "runtime_name",
    "steps_summary", "progress_percentage", "estimated_remaining_seconds", "created_at", "start_time",
    "completion_time", "deleted_at",
)  # fmt: skip
POD_COLUMNS = (
    "id", "uid", "train_job_id", "namespace", "name", "phase", "step", "job_index", "completion_index",
    "exit_code", "restarts", "node", "message", "created_at", "deleted_at",
)  # fmt: skip
#: Progress reports a page plots at most (newest kept): a report every 5 s for four days.
MAX_REPORTS = 70_000
#: A sweep's TrainJobs plotted side by side at most (the first ones created): more lines read as noise.
MAX_SIDE_BY_SIDE = 50


class TrainJobFilters(ListFilters):
    phase = forms.ChoiceField(required=False, choices=[("", "any state")] + [(p, p) for p in PHASES])
    runtime = forms.CharField(required=False, max_length=253, label="Runtime")
    name = name_prefix_field()
    deleted = forms.BooleanField(required=False, label="Deleted train jobs")
    columns = {"runtime": "runtime_name"}


TRAIN_JOBS = MirrorPages(
    TrainJob, "trainjob", TrainJobFilters, LIST_COLUMNS,
    is_live=lambda job: not job.is_finished and job.deleted_at is None,
)  # fmt: skip
trainjob_list = TRAIN_JOBS.list_view()


def steps_of(pods: list[TrainJobPod]) -> list[dict[str, Any]]:
    """Pods grouped by step (replicated job), in the order the steps first appear; pods of a step by
    job index and completion index, a recreated pod after the one it replaced."""
    steps: dict[str, list[TrainJobPod]] = {}
    for pod in pods:
        steps.setdefault(pod.step or "?", []).append(pod)
    return [
        {"name": name, "pods": sorted(found, key=lambda p: (p.job_index or 0, p.completion_index or 0, p.pk))}
        for name, found in steps.items()
    ]


def runtime_context(job: TrainJob) -> dict[str, Any]:
    """The runtime row the job names (None when not mirrored) and the revision it ran (None: unknown)."""
    namespace = job.namespace if job.runtime_kind == c.TRAINING_RUNTIME else ""
    runtime = (
        TrainingRuntime.objects.filter(kind=job.runtime_kind, namespace=namespace, name=job.runtime_name)
        .filter(created_at__lte=job.created_at)
        .order_by("-created_at", "-id")
        .only("id", "kind", "namespace", "name", "generation", "deleted_at")
        .first()
    )
    revision = None
    if runtime is not None and job.runtime_generation is not None:
        revision = RuntimeRevision.objects.filter(runtime=runtime, generation=job.runtime_generation).first()
    return {"runtime": runtime, "revision": revision}


def status_context(job: TrainJob) -> dict[str, Any]:
    """What the status fragment shows: state, progress, steps and pods, conditions and history."""
    pods = list(TrainJobPod.objects.filter(train_job=job).only(*POD_COLUMNS).order_by("created_at", "id"))
    reported = job.status.get("trainerStatus") if isinstance(job.status, dict) else None
    metrics = reported.get("metrics") if isinstance(reported, dict) else None
    return TRAIN_JOBS.status_context(
        job, finished=job.is_finished, steps=steps_of(pods),
        metrics=[m for m in metrics if isinstance(m, dict)] if isinstance(metrics, list) else [],
    )  # fmt: skip


@page
def trainjob_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = TRAIN_JOBS.row(request, pk)

    def page_only() -> dict[str, Any]:
        manifest = manifest_of(job, c.API_VERSION, c.TRAIN_JOB_KIND)
        reports = TrainerStatusUpdate.objects.of(job).exists()
        return {**runtime_context(job), "manifest": manifest, "reports": reports}

    # The fragment too sends the page's policy: htmx swaps it into the page that draws the plots.
    return csp.allow_plots(TRAIN_JOBS.status_or_page(request, job, status_context(job), page_only))


def reports_of(jobs: list[TrainJob]) -> dict[str, list[trainplots.Report]]:
    """Each TrainJob's progress reports (at most MAX_REPORTS, the newest), by uid, in one query; a report
    is a job's when filed under its namespace, name and uid (`TrainerStatusUpdate.objects.of`)."""
    rows = (
        TrainerStatusUpdate.objects.of_any(jobs)
        .order_by("-received_at", "-id")
        .values_list("trainjob_uid", "reported_at", "progress_percentage", "metrics")[:MAX_REPORTS]
    )
    found: dict[str, list[trainplots.Report]] = {str(job.uid): [] for job in jobs}
    for uid, at, progress, metrics in rows.iterator(2000):
        found.setdefault(str(uid), []).append(trainplots.Report(at, progress, metrics or []))
    return found


@page
def trainjob_plots(request: HttpRequest, pk: int) -> JsonResponse:
    """Progress % and each metric over time, from every report the job's pods pushed."""
    job = TRAIN_JOBS.row(request, pk)
    reports = reports_of([job])[str(job.uid)]
    return JsonResponse(trainplots.job_figures(reports))


trainjob_events = TRAIN_JOBS.events_view()


# Delete the TrainJob from the cluster (trainer.runtimes.actions.delete_train_job); its pods go with it.
trainjob_stop = TRAIN_JOBS.stop_view(
    lambda job: actions.delete_train_job(job.namespace, job.name, job.uid),
    title=lambda job: f"TrainJob {job.name}", consequence="it and its pods are deleted",
)  # fmt: skip


# Open the TrainJob in TensorBoard at the log directory an administrator configured for training jobs.
trainjob_tensorboard = tensorboards.source_view(
    TRAIN_JOBS, kind=lambda _: c.TRAIN_JOB_KIND, contents=lambda job: f"the logs of TrainJob {job.name}"
)


@page
def trainjob_pod_logs(request: HttpRequest, pk: int, pod_pk: int) -> HttpResponse:
    """A step pod's logs, from the container named like its step (as Kubeflow's SDK reads them)."""
    job = get_readable(request, TrainJob.objects.only("id", "uid", "namespace", "name"), pk=pk)
    pod = get_readable(request, TrainJobPod.objects.filter(train_job=job), pk=pod_pk)
    container = pod.step or None
    text, problem = read_logs(pod, container)
    context = {
        "job": job,
        "replica": pod,
        "container": container,
        "text": text,
        "problem": problem,
        "following": pod.deleted_at is None and pod.phase not in FINISHED_POD_PHASES,
        "poll_seconds": POLL_SECONDS,
        "tail_lines": TAIL_LINES,
    }
    template = "dashboard/jobs/_logs.html" if is_fragment(request) else "dashboard/trainjobs/logs.html"
    return render(request, template, context)


def sweep_train_jobs(sweep: Sweep) -> QuerySet[TrainJob]:
    """The TrainJobs a sweep's trials created (docs/trainer.md, "A sweep's trials as TrainJobs"): in the
    sweep's namespace, labelled with its name (`argoml.io/hyperparam-workflow`, copied by the trial's
    resource template from `{{workflow.labels.…}}`) and created since the sweep was (a sweep of the same
    name before it is another sweep), or with its uid (`argoml.io/hyperparam-workflow-uid`). The mirror keeps
    both labels in columns of their own (`TrainJob.sweep_label`, `sweep_uid`), each under an index."""
    by_uid = Q(sweep_uid=str(sweep.uid))
    by_name = Q(sweep_label=label_value(sweep.name), created_at__gte=sweep.created_at)
    return TrainJob.objects.filter(by_uid | by_name, namespace=sweep.namespace).order_by("created_at", "id")


def sweep_figures(sweep: Sweep) -> dict[str, Any]:
    """Each metric of the sweep's TrainJobs, one line per TrainJob (named after it), side by side."""
    jobs = list(sweep_train_jobs(sweep).only("uid", "namespace", "name")[: MAX_SIDE_BY_SIDE + 1])
    shown = jobs[:MAX_SIDE_BY_SIDE]
    reports = reports_of(shown)
    body = trainplots.side_by_side({job.name: reports.get(str(job.uid), []) for job in shown})
    return {**body, "truncated": len(jobs) > MAX_SIDE_BY_SIDE}
