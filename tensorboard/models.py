"""The mirror of Tensorboard objects: one row per object (kube.models.MirroredResource) plus what the admin
and the API list by — URL, source and last access — and the history of its phases.

Only the mirror (kube.controller.mirror, from watch events) writes these rows; the API creates and deletes
Tensorboards in the cluster.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from kube.models import MirroredResource, MirrorHistory, parse_time

from .status import last_access


class Tensorboard(MirroredResource):
    history_model = "tensorboard.TensorboardHistory"

    url = models.CharField(max_length=2048, blank=True, help_text="status.url: where it is served.")
    source_kind = models.CharField(
        max_length=32, blank=True, help_text="spec.workflowRef.kind: what its logdirs were collected from."
    )
    source_name = models.CharField(max_length=253, blank=True, help_text="spec.workflowRef.name")
    last_access = models.DateTimeField(null=True, blank=True, help_text="When it was last opened.")

    class Meta(MirroredResource.Meta):
        verbose_name = "TensorBoard"
        indexes = [
            models.Index(fields=["phase"], name="tensorboard_phase"),
            models.Index(fields=["created_at"], name="tensorboard_created"),
            models.Index(fields=["namespace", "source_kind", "source_name"], name="tensorboard_source"),
        ]

    @classmethod
    def observed_fields(cls, obj: dict[str, Any]) -> dict[str, Any]:
        spec = obj.get("spec") or {}
        reference = spec.get("workflowRef")
        if not isinstance(reference, dict):
            reference = {}
        name = str(reference.get("name") or "")
        return {
            **super().observed_fields(obj),
            "url": str((obj.get("status") or {}).get("url") or "")[:2048],
            "source_kind": str(reference.get("kind") or ("Workflow" if name else ""))[:32],
            "source_name": name[:253],
            "last_access": parse_time(last_access(obj)),
        }

    @property
    def source(self) -> str:
        return f"{self.source_kind} {self.source_name}" if self.source_name else ""

    @property
    def logdirs(self) -> list[dict[str, Any]]:
        entries = self.spec.get("logdirs") if isinstance(self.spec, dict) else None
        return [entry for entry in entries or [] if isinstance(entry, dict)]


class TensorboardHistory(MirrorHistory):
    resource = models.ForeignKey(Tensorboard, on_delete=models.CASCADE, related_name="history")
