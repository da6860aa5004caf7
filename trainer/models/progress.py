"""Every progress report a TrainJob's pods pushed (KEP-2779), kept after the TrainJob's status moved on or the
TrainJob is gone: the history the dashboard plots. Written by `trainer.statusview` only, after the status
patch succeeded; joined to the TrainJob's mirror row by uid (no foreign key: a report may arrive before the
mirror has the job, and outlives it)."""

from __future__ import annotations

from django.db import models


class TrainerStatusUpdate(models.Model):
    namespace = models.CharField(max_length=63)
    trainjob_name = models.CharField(max_length=253)
    trainjob_uid = models.UUIDField(
        help_text="The TrainJob's metadata.uid, as the pod's controller names it."
    )
    pod = models.CharField(max_length=253, help_text="The pod whose token made the report.")
    progress_percentage = models.PositiveSmallIntegerField(null=True, blank=True)
    estimated_remaining_seconds = models.PositiveIntegerField(null=True, blank=True)
    metrics = models.JSONField(
        default=list, blank=True, help_text="[{name, value}] as reported (text values)."
    )
    reported_at = models.DateTimeField(help_text="lastUpdatedTime, as the pod reported it.")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["trainjob_uid", "received_at", "id"]
        indexes = [
            models.Index(fields=["trainjob_uid", "received_at"], name="trainer_update_job_time"),
            models.Index(fields=["namespace", "trainjob_name"], name="trainer_update_job_name"),
        ]

    def __str__(self) -> str:
        progress = "?" if self.progress_percentage is None else f"{self.progress_percentage}%"
        return f"{self.namespace}/{self.trainjob_name} {progress} from {self.pod} at {self.reported_at}"
