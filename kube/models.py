"""Abstract mirror models: the database copy of a cluster resource and its history of transitions.

An app's model inherits `MirroredResource` (and a history model inherits `MirrorHistory`); only
`kube.controller.mirror.apply_event` writes them, from watch events, so the rows say what the cluster said.
Rows are never erased: a deleted resource keeps its row with `deleted_at` set, and its history stays.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models

import fields
from kube.times import parse_time

PHASE_MAX_LENGTH = 64
REASON_MAX_LENGTH = 128


class MirroredResource(models.Model):
    """Identity, the spec as written, the status as observed, and the bookkeeping that makes the mirror
    safe against duplicate and stale events (see kube/controller/mirror/)."""

    #: "app_label.Model" of the MirrorHistory subclass whose `resource` foreign key points here, or None.
    history_model: ClassVar[str | None] = None
    #: The columns a live name is unique over (the constraint below). A model holding several kinds in one
    #: table adds `kind` here and in its own constraint, so one kind's object never retires another's.
    live_name_fields: ClassVar[tuple[str, ...]] = ("namespace", "name")

    uid = models.CharField(max_length=64, unique=True, help_text="metadata.uid: the identity of one object.")
    namespace = models.CharField(max_length=63, db_index=True, blank=True)
    name = models.CharField(max_length=253, db_index=True)
    labels = models.JSONField(default=dict, blank=True)
    spec = models.JSONField(default=dict, blank=True, help_text="As the user wrote it (after admission).")
    status = models.JSONField(default=dict, blank=True, help_text="As the controller last wrote it.")
    phase = models.CharField(max_length=PHASE_MAX_LENGTH, blank=True)
    conditions = models.JSONField(default=list, blank=True)
    resource_version = models.CharField(max_length=64, help_text="Opaque: compared for equality only.")
    generation = models.BigIntegerField(default=0)
    observed_generation = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(null=True, blank=True, help_text="metadata.creationTimestamp")
    updated_at = models.DateTimeField(help_text="When the mirror last changed this row.")
    deleted_at = models.DateTimeField(null=True, blank=True, help_text="When the mirror saw it deleted.")

    class Meta:
        abstract = True
        constraints = [
            # A name belongs to one live object at a time; deleted rows keep theirs for history.
            models.UniqueConstraint(
                fields=["namespace", "name"],
                condition=models.Q(deleted_at__isnull=True),
                name="%(app_label)s_%(class)s_live_name",
            )
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def key(self) -> str:
        return str(self)

    @classmethod
    def phase_of(cls, status: dict[str, Any]) -> str:
        """The phase column: `status.phase` when the kind has one, else the type of the condition that most
        recently became True (Kubeflow jobs keep their state in conditions only)."""
        phase = status.get("phase")
        if isinstance(phase, str) and phase:
            return phase[:PHASE_MAX_LENGTH]
        conditions = status.get("conditions")
        true = [c for c in conditions or [] if isinstance(c, dict) and c.get("status") == "True"]
        return str(true[-1].get("type") or "")[:PHASE_MAX_LENGTH] if true else ""

    @classmethod
    def observed_fields(cls, obj: dict[str, Any]) -> dict[str, Any]:
        """Column values for `obj` (a raw dict from the API). Apps extend this to fill their own columns:
        `return {**super().observed_fields(obj), "kind": obj["kind"]}`."""
        metadata = obj.get("metadata") or {}
        status = obj.get("status") or {}
        conditions = status.get("conditions")
        return {
            "namespace": metadata.get("namespace") or "",
            "name": metadata.get("name") or "",
            "labels": metadata.get("labels") or {},
            "spec": obj.get("spec") or {},
            "status": status,
            "phase": cls.phase_of(status),
            "conditions": conditions if isinstance(conditions, list) else [],
            "resource_version": metadata.get("resourceVersion") or "",
            "generation": fields.as_int(metadata.get("generation")) or 0,
            "observed_generation": fields.as_int(status.get("observedGeneration")),
            "created_at": parse_time(metadata.get("creationTimestamp")),
        }


#: A MirroredResource's JSON columns: a list (the admin's, the API's) leaves them in the database.
JSON_COLUMNS = ("labels", "spec", "status", "conditions")

#: What the admin and the API show of a MirrorHistory row.
HISTORY_FIELDS = ("at", "phase", "reason", "message")


class MirrorHistory(models.Model):
    """One transition of a mirrored resource: its phase or a condition changed, or it was deleted.

    Subclasses add `resource = models.ForeignKey(<the MirroredResource subclass>, related_name="history",
    on_delete=models.CASCADE)`.
    """

    at = models.DateTimeField(
        help_text="When it happened: the condition's lastTransitionTime, else when seen."
    )
    phase = models.CharField(max_length=PHASE_MAX_LENGTH, blank=True)
    reason = models.CharField(max_length=REASON_MAX_LENGTH, blank=True)
    message = models.TextField(blank=True)
    resource_version = models.CharField(max_length=64, blank=True)

    class Meta:
        abstract = True
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.phase} {self.reason}".rstrip()
