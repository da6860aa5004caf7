"""The mirror of Trainer's runtimes (TrainingRuntime and ClusterTrainingRuntime in one table) and their
revisions: one row per `metadata.generation` the mirror saw, with the spec as it was and its diff.

Only `trainer.runtimes.mirror` writes these rows, from watch events; an admin edit goes to the cluster
(`trainer.runtimes.actions`) and comes back here as the next revision.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from django.db import models
from django.db.models.functions import Coalesce

from kube.models import MirroredResource
from kube.times import parse_time
from trainer import constants as c
from trainer.models.trainjobs import TrainJob
from trainer.runtimes import inuse, revisions


class TrainingRuntimeQuerySet(models.QuerySet["TrainingRuntime"]):
    def seen_from(self, namespaces: list[str] | None) -> TrainingRuntimeQuerySet:
        """Each runtime with what a reader of `namespaces` may know of its use (None: every namespace, for
        who may see cluster-wide figures): `train_jobs`, the TrainJob rows (not deleted) whose runtimeRef
        names it, in those namespaces; `in_use_seen`, whether one does (cluster-wide: the in-use finalizer,
        `in_use`). A cluster runtime's finalizer follows every namespace's jobs, so a tenant reading it
        would watch others start and stop theirs. A TrainingRuntime is referenced from its own namespace
        only; a cluster runtime from any."""
        jobs = TrainJob.objects.filter(
            models.Q(runtime_kind=c.CLUSTER_TRAINING_RUNTIME)
            | models.Q(namespace=models.OuterRef("namespace")),
            deleted_at__isnull=True,
            runtime_kind=models.OuterRef("kind"),
            runtime_name=models.OuterRef("name"),
        )
        if namespaces is not None:
            jobs = jobs.filter(namespace__in=namespaces)
        counted = jobs.order_by().values("runtime_name").annotate(n=models.Count("id")).values("n")
        annotated = self.annotate(train_jobs=Coalesce(models.Subquery(counted), 0))
        if namespaces is None:
            return annotated.annotate(in_use_seen=models.F("in_use"))
        return annotated.annotate(
            in_use_seen=models.ExpressionWrapper(
                models.Q(train_jobs__gt=0), output_field=models.BooleanField()
            )
        )


class TrainingRuntime(MirroredResource):
    """A TrainingRuntime (namespaced) or ClusterTrainingRuntime (namespace "") as the cluster holds it."""

    class Kind(models.TextChoices):
        NAMESPACED = c.TRAINING_RUNTIME, "TrainingRuntime (one namespace)"
        CLUSTER = c.CLUSTER_TRAINING_RUNTIME, "ClusterTrainingRuntime (every namespace)"

    kind = models.CharField(max_length=32, choices=Kind.choices)
    framework = models.CharField(max_length=63, blank=True, help_text=f"The {c.LABEL_FRAMEWORK} label.")
    in_use = models.BooleanField(
        default=False, help_text=f"Carries {inuse.RESOURCE_IN_USE_FINALIZER}: a TrainJob references it."
    )
    deleting_since = models.DateTimeField(
        null=True, blank=True, help_text="metadata.deletionTimestamp: deleted, held by a finalizer."
    )

    objects = TrainingRuntimeQuerySet.as_manager()

    class Meta(MirroredResource.Meta):
        # A cluster runtime's namespace is "", which no TrainingRuntime has: the inherited live-name
        # constraint on (namespace, name) already keeps the two kinds apart.
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["framework"], name="trainer_runtime_framework"),
            models.Index(fields=["created_at"], name="trainer_runtime_created"),
        ]

    @classmethod
    def observed_fields(cls, obj: dict[str, Any]) -> dict[str, Any]:
        metadata = obj.get("metadata") or {}
        labels = metadata.get("labels") or {}
        return {
            **super().observed_fields(obj),
            "kind": obj.get("kind") or "",
            "framework": str(labels.get(c.LABEL_FRAMEWORK) or "")[:63],
            "in_use": inuse.RESOURCE_IN_USE_FINALIZER in (metadata.get("finalizers") or ()),
            "deleting_since": parse_time(metadata.get("deletionTimestamp")),
        }

    @property
    def scope(self) -> str:
        return "cluster" if self.kind == c.CLUSTER_TRAINING_RUNTIME else self.namespace


class RuntimeRevisionQuerySet(models.QuerySet["RuntimeRevision"]):
    def ran_by(self, train_job: dict[str, Any]) -> RuntimeRevision | None:
        """The revision a TrainJob (a raw object) ran: its runtimeRef names the runtime, the controller's
        annotation `argoml.io/runtime-generation` the generation it started from. None when unknown."""
        reference = inuse.runtime_reference(train_job)
        generation = revisions.started_generation(train_job)
        if reference is None or generation is None:
            return None
        metadata = train_job.get("metadata") or {}
        kind, name = reference
        created = parse_time(metadata.get("creationTimestamp"))
        return self.revision_of(kind, metadata.get("namespace") or "", name, generation, created)

    def revision_of(
        self, kind: str, job_namespace: str, name: str, generation: int, job_created: datetime | None = None
    ) -> RuntimeRevision | None:
        """The revision `generation` of the runtime a job of `job_namespace` references as (kind, name)
        (a TrainingRuntime is the job's namespace's). A name reused by a runtime created after the job
        does not count; without the job's creation time the newest runtime of that name answers."""
        namespace = job_namespace if kind == c.TRAINING_RUNTIME else ""
        found = self.filter(
            runtime__kind=kind, runtime__namespace=namespace, runtime__name=name, generation=generation
        )
        if job_created is not None:
            found = found.filter(runtime__created_at__lte=job_created)
        return found.order_by("-runtime__created_at", "-runtime_id").first()


class RuntimeRevision(models.Model):
    """One generation of a runtime: the spec then, the diff from the revision before, who made it."""

    runtime = models.ForeignKey(TrainingRuntime, on_delete=models.CASCADE, related_name="revisions")
    generation = models.BigIntegerField(help_text="metadata.generation of this spec.")
    spec = models.JSONField(default=dict, blank=True)
    diff = models.TextField(
        blank=True, help_text="Unified diff from the previous revision; empty for the first."
    )
    changed_by = models.CharField(
        max_length=150, blank=True, help_text="The admin user who made it; empty: the cluster (kubectl, …)."
    )
    recorded_at = models.DateTimeField(help_text="When the mirror saw this generation.")

    objects = RuntimeRevisionQuerySet.as_manager()

    class Meta:
        ordering = ["-generation"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["runtime", "generation"], name="trainer_runtimerevision_once")
        ]

    def __str__(self) -> str:
        return f"{self.runtime} generation {self.generation}"

    @property
    def author(self) -> str:
        return self.changed_by or "the cluster"
