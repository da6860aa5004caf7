"""Every progress report a TrainJob's pods pushed (KEP-2779), kept after the TrainJob's status moved on or the
TrainJob is gone: the history the dashboard plots. Written by `trainer.progress.reporting` only, after the
status patch succeeded, under the identity of the TrainJob that patch wrote (namespace, name, uid, as the API
server answered). Read per TrainJob row with `TrainerStatusUpdate.objects.of(job)`: all three columns, never
the uid alone. No foreign key: a report may arrive before the mirror has the job, and outlives it."""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable

from django.db import models

from trainer.models.trainjobs import TrainJob


class TrainerStatusUpdateQuerySet(models.QuerySet["TrainerStatusUpdate"]):
    def of(self, job: TrainJob) -> TrainerStatusUpdateQuerySet:
        """The reports of one TrainJob row: its namespace, name and uid together. A uid alone is not
        enough: before issue 27 a report was filed under the uid its pod's owner reference claimed, so a
        row elsewhere may name this job's uid."""
        return self.filter(namespace=job.namespace, trainjob_name=job.name, trainjob_uid=job.uid)

    def of_any(self, jobs: Iterable[TrainJob]) -> TrainerStatusUpdateQuerySet:
        """The reports of each of `jobs` (rows with namespace, name and uid), in one query."""
        identities = [
            models.Q(namespace=job.namespace, trainjob_name=job.name, trainjob_uid=job.uid) for job in jobs
        ]
        if not identities:
            return self.none()
        return self.filter(functools.reduce(operator.or_, identities))


class TrainerStatusUpdate(models.Model):
    namespace = models.CharField(max_length=63)
    trainjob_name = models.CharField(max_length=253)
    trainjob_uid = models.UUIDField(
        help_text="The uid of the TrainJob whose status the report wrote, as the API server answered it."
    )
    pod = models.CharField(max_length=253, help_text="The pod whose token made the report.")
    progress_percentage = models.PositiveSmallIntegerField(null=True, blank=True)
    estimated_remaining_seconds = models.PositiveIntegerField(null=True, blank=True)
    metrics = models.JSONField(
        default=list, blank=True, help_text="[{name, value}] as reported (text values)."
    )
    reported_at = models.DateTimeField(help_text="lastUpdatedTime, as the pod reported it.")
    received_at = models.DateTimeField(auto_now_add=True)

    objects = TrainerStatusUpdateQuerySet.as_manager()

    class Meta:
        ordering = ["trainjob_uid", "received_at", "id"]
        indexes = [
            models.Index(fields=["trainjob_uid", "received_at"], name="trainer_update_job_time"),
            models.Index(fields=["namespace", "trainjob_name"], name="trainer_update_job_name"),
        ]

    def __str__(self) -> str:
        progress = "?" if self.progress_percentage is None else f"{self.progress_percentage}%"
        return f"{self.namespace}/{self.trainjob_name} {progress} from {self.pod} at {self.reported_at}"
