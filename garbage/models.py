"""The garbage collector's audit trail (a GCRun per collection, a GCDeletion per object it deleted) and
the per-namespace policies admins edit. Rows are written by garbage.collector only."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models

from .policy import NAMESPACE_PATTERN, NamespaceOverride, Reason

namespace_validator = RegexValidator(
    NAMESPACE_PATTERN,
    "A namespace is at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit.",
)

DELETION_REASONS = [
    (Reason.WORKFLOW_SUCCEEDED.value, "Workflow pod succeeded, past retention"),
    (Reason.WORKFLOW_FAILED.value, "Workflow pod failed, past retention"),
    (Reason.JOB_CLEAN_POD_POLICY.value, "Left by a finished job with cleanPodPolicy All"),
    (Reason.ORPHAN.value, "Child of a job that no longer exists"),
]


class GCRun(models.Model):
    """One collection: what it looked at, what it deleted (or would have, in a dry run) and how it ended."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        PARTIAL = "partial", "Finished with errors"
        FAILED = "failed", "Failed"
        SKIPPED = "skipped", "Skipped: another run held the lock"

    started = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)
    dry_run = models.BooleanField(default=False)
    namespace = models.CharField(
        max_length=63, blank=True, help_text="The only namespace this run looked at; blank: every namespace."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    scanned = models.PositiveIntegerField(default=0, help_text="Objects listed and judged.")
    deleted = models.PositiveIntegerField(default=0, help_text="Deleted (or, in a dry run, to delete).")
    skipped = models.PositiveIntegerField(default=0, help_text="Judged and kept.")
    errors = models.PositiveIntegerField(default=0, help_text="Deletions or listings that failed.")
    skip_reasons = models.JSONField(default=dict, blank=True, help_text="Kept objects by reason.")
    failures = models.JSONField(
        default=list, blank=True, help_text="The first failures: what failed and the error."
    )
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["-started", "-id"]
        verbose_name = "GC run"
        indexes = [
            models.Index(fields=["-started"], name="gc_run_started"),
            models.Index(fields=["status", "-started"], name="gc_run_status_started"),
        ]

    def __str__(self) -> str:
        kind = "dry run" if self.dry_run else "run"
        return f"GC {kind} {self.pk} ({self.status})"


class GCDeletion(models.Model):
    """An object a run deleted (or, in a dry run, would have deleted)."""

    run = models.ForeignKey(GCRun, on_delete=models.CASCADE, related_name="deletions")
    kind = models.CharField(max_length=32)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=36)
    reason = models.CharField(max_length=32, choices=DELETION_REASONS)
    age_seconds = models.FloatField(
        null=True, blank=True, help_text="Seconds since the object (or its job) finished; blank if unknown."
    )
    already_gone = models.BooleanField(
        default=False, help_text="Someone else deleted it first; the run counted it as done."
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        verbose_name = "GC deletion"
        indexes = [
            models.Index(fields=["namespace", "name"], name="gc_deletion_ns_name"),
            models.Index(fields=["reason", "-created"], name="gc_deletion_reason_created"),
            models.Index(fields=["uid"], name="gc_deletion_uid"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name} ({self.reason})"


class GCNamespacePolicy(models.Model):
    """A namespace's own retentions, or its exclusion from garbage collection."""

    namespace = models.CharField(max_length=63, unique=True, validators=[namespace_validator])
    succeeded_retention_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="Keep succeeded workflow pods this long; blank: the global setting."
    )
    failed_retention_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="Keep failed workflow pods this long; blank: the global setting."
    )
    excluded = models.BooleanField(default=False, help_text="Never delete anything in this namespace.")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["namespace"]
        verbose_name = "GC namespace policy"
        verbose_name_plural = "GC namespace policies"

    def __str__(self) -> str:
        return self.namespace

    def as_override(self) -> NamespaceOverride:
        return NamespaceOverride(
            succeeded_seconds=self.succeeded_retention_seconds,
            failed_seconds=self.failed_retention_seconds,
            excluded=self.excluded,
        )
