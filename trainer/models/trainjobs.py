"""Mirror rows of TrainJobs, their pods and their history. Only the mirror writes them
(kube.controller.mirror, from watch events); views and serializers only read."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models

import fields
from hyperparam.manifests import LABEL_SWEEP, LABEL_SWEEP_UID
from jobs.models import ObservedPod, controller_uid, pod_observation
from kube.models import PHASE_MAX_LENGTH, MirroredResource, MirrorHistory, parse_time
from trainer import constants as c

SUMMARY_MAX_LENGTH = 255
#: A Kubernetes label value's longest length.
LABEL_VALUE_MAX_LENGTH = 63
REASON_MAX_LENGTH = 128
#: The runtime's metadata.generation a TrainJob started with (written once by the controller).
RUNTIME_GENERATION_ANNOTATION = "argoml.io/runtime-generation"
# The state a TrainJob is in, as Kubeflow's SDK names them (Created, Running, Complete, Failed), plus
# Suspended, which the SDK shows as a condition.
TERMINAL_CONDITIONS = ("Failed", "Complete")
#: Every phase a TrainJob row can hold (TrainJob.phase_of), for filters.
PHASES = ("Created", "Running", "Suspended", "Complete", "Failed")


def _true(conditions: list[Any], type_: str) -> dict[str, Any] | None:
    return next(
        (
            cond
            for cond in conditions
            if isinstance(cond, dict) and cond.get("type") == type_ and cond.get("status") == "True"
        ),
        None,
    )


def _first_true(conditions: list[Any], types: tuple[str, ...]) -> dict[str, Any]:
    """The first of `types` whose condition is True (the state it explains), else {}."""
    return next((found for t in types if (found := _true(conditions, t)) is not None), {})


class TrainJob(MirroredResource):
    """One TrainJob: its runtime, its steps' counts, its state and the progress its pods report."""

    history_model = "trainer.TrainJobHistory"

    runtime_kind = models.CharField(max_length=64, default=c.CLUSTER_TRAINING_RUNTIME)
    runtime_name = models.CharField(max_length=253, blank=True)
    runtime_generation = models.BigIntegerField(
        null=True, blank=True, help_text="The runtime's metadata.generation the job started with."
    )
    steps_summary = models.CharField(
        max_length=SUMMARY_MAX_LENGTH, blank=True, help_text="Each replicated job's counts, in step order."
    )
    state_reason = models.CharField(max_length=REASON_MAX_LENGTH, blank=True)
    state_message = models.TextField(blank=True)
    progress_percentage = models.IntegerField(null=True, blank=True)
    estimated_remaining_seconds = models.BigIntegerField(null=True, blank=True)
    start_time = models.DateTimeField(null=True, blank=True)
    completion_time = models.DateTimeField(null=True, blank=True)
    # The sweep whose trial created the job, as its labels say (docs/trainer.md, "A sweep's trials as
    # TrainJobs"): columns, not a lookup into `labels`, so that a sweep's page finds its TrainJobs through an
    # index on every database (SQLite has no JSON containment).
    sweep_label = models.CharField(
        max_length=LABEL_VALUE_MAX_LENGTH, blank=True, help_text=f"The {LABEL_SWEEP} label: the sweep's name."
    )
    sweep_uid = models.CharField(
        max_length=LABEL_VALUE_MAX_LENGTH, blank=True, help_text=f"The {LABEL_SWEEP_UID} label: its uid."
    )

    class Meta(MirroredResource.Meta):
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["-created_at", "-id"], name="trainer_trainjob_newest"),
            models.Index(fields=["phase", "-created_at", "-id"], name="trainer_trainjob_phase"),
            models.Index(fields=["namespace", "-created_at", "-id"], name="trainer_trainjob_namespace"),
            models.Index(fields=["runtime_kind", "runtime_name"], name="trainer_trainjob_runtime"),
            models.Index(fields=["namespace", "sweep_label", "created_at"], name="trainer_trainjob_sweep"),
            models.Index(fields=["namespace", "sweep_uid"], name="trainer_trainjob_sweep_uid"),
        ]

    @classmethod
    def phase_of(cls, status: dict[str, Any]) -> str:
        """Failed or Complete once finished, else Suspended, Running while a step has active Jobs, else
        Created."""
        conditions = status.get("conditions")
        conditions = conditions if isinstance(conditions, list) else []
        state = _first_true(conditions, (*TERMINAL_CONDITIONS, "Suspended"))
        if state:
            return str(state["type"])[:PHASE_MAX_LENGTH]
        jobs = status.get("jobsStatus")
        if isinstance(jobs, list) and any(
            (fields.as_int(fields.as_dict(j).get("active")) or 0) > 0 for j in jobs
        ):
            return "Running"
        return "Created"

    @classmethod
    def observed_fields(cls, obj: dict[str, Any]) -> dict[str, Any]:
        observed = super().observed_fields(obj)
        status, spec = observed["status"], observed["spec"]
        metadata = fields.as_dict(obj.get("metadata"))
        ref = fields.as_dict(fields.as_dict(spec).get("runtimeRef"))
        conditions = observed["conditions"]
        latest = _first_true(conditions, (*TERMINAL_CONDITIONS, "Suspended"))
        ended = _first_true(conditions, TERMINAL_CONDITIONS)
        progress = fields.as_dict(status.get("trainerStatus"))
        generation = str(fields.as_dict(metadata.get("annotations")).get(RUNTIME_GENERATION_ANNOTATION) or "")
        resumed = next(
            (fields.as_dict(cond) for cond in conditions if fields.as_dict(cond).get("type") == "Suspended"),
            {},
        )
        started = parse_time(resumed.get("lastTransitionTime")) if resumed.get("status") == "False" else None
        return {
            **observed,
            "runtime_kind": str(ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME)[:64],
            "runtime_name": str(ref.get("name") or "")[:253],
            "runtime_generation": int(generation) if generation.isdigit() else None,
            "steps_summary": steps_summary(status)[:SUMMARY_MAX_LENGTH],
            "state_reason": str(latest.get("reason") or "")[:REASON_MAX_LENGTH],
            "state_message": str(latest.get("message") or ""),
            "progress_percentage": fields.as_int(progress.get("progressPercentage")),
            "estimated_remaining_seconds": fields.as_int(progress.get("estimatedRemainingSeconds")),
            "start_time": started or observed["created_at"],
            "completion_time": parse_time(ended.get("lastTransitionTime")),
            **sweep_fields(observed["labels"]),
        }

    @property
    def is_finished(self) -> bool:
        return self.phase in TERMINAL_CONDITIONS


def sweep_fields(labels: dict[str, Any]) -> dict[str, str]:
    """The sweep columns of a TrainJob with these labels ("" where a label is missing or not a string)."""
    return {
        "sweep_label": _label(labels, LABEL_SWEEP),
        "sweep_uid": _label(labels, LABEL_SWEEP_UID),
    }


def _label(labels: dict[str, Any], key: str) -> str:
    value = fields.as_dict(labels).get(key)
    return value[:LABEL_VALUE_MAX_LENGTH] if isinstance(value, str) else ""


def steps_summary(status: dict[str, Any]) -> str:
    """`node 2 active · launcher 1 succeeded`: each replicated job's non-zero counts, in status order."""
    parts = []
    for job in status.get("jobsStatus") or []:
        job = fields.as_dict(job)
        counts = [
            f"{fields.as_int(job.get(key))} {key}"
            for key in ("active", "ready", "succeeded", "failed", "suspended")
            if (fields.as_int(job.get(key)) or 0) > 0
        ]
        parts.append(f"{job.get('name')} {', '.join(counts) or 'pending'}")
    return " · ".join(parts)


class TrainJobHistory(MirrorHistory):
    """A transition of a TrainJob: a condition changed (Suspended, Complete, Failed) or it was deleted."""

    resource = models.ForeignKey(TrainJob, on_delete=models.CASCADE, related_name="history")


class TrainJobPod(ObservedPod):
    """One pod of a TrainJob's step, as the pod informer last saw it. A recreated pod is a new row (new uid);
    the one it replaced stays, marked deleted."""

    # By the TrainJob's uid, from the pod's controller ownerReference: a pod event may arrive before the
    # TrainJob's own (no database constraint; a join when both exist), as jobs.Replica does.
    train_job = models.ForeignKey(
        TrainJob, to_field="uid", db_constraint=False, on_delete=models.DO_NOTHING, related_name="pods"
    )
    step = models.CharField(
        max_length=63, help_text="The replicated job: node, launcher, dataset-initializer…"
    )
    job_index = models.IntegerField(null=True, blank=True)
    completion_index = models.IntegerField(null=True, blank=True)

    class Meta(ObservedPod.Meta):
        indexes: ClassVar[list[models.Index]] = [
            models.Index(
                fields=["train_job", "step", "job_index", "completion_index"], name="trainer_pod_slot"
            ),
        ]

    @classmethod
    def observed_fields(cls, obj: dict[str, Any]) -> dict[str, Any]:
        """The pod's identity and the few status fields the step table shows (not its spec and status)."""
        observed = super().observed_fields(obj)
        labels = fields.as_dict(fields.as_dict(obj.get("metadata")).get("labels"))
        status = observed["status"]
        return {
            **observed,
            "spec": {},
            "status": {},
            "train_job_id": controller_uid(obj),
            "step": str(labels.get(c.LABEL_REPLICATED_JOB_NAME) or "")[:63],
            "job_index": _index(labels.get(c.LABEL_JOB_INDEX)),
            "completion_index": _index(labels.get(c.LABEL_COMPLETION_INDEX)),
            **pod_observation(obj, status),
        }

    @property
    def slot(self) -> str:
        return f"{self.step}-{self.job_index}-{self.completion_index}"


def _index(value: object) -> int | None:
    return int(value) if isinstance(value, str) and value.isdigit() else None
