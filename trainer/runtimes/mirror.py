"""The runtimes' watch handler: the mirror row (kube.controller.mirror's one write path), then the revision
of a generation not seen before, in one transaction.

Safe against duplicate and stale events: the mirror ignores them (same resourceVersion, lower generation,
anything after a deletion), and a revision is written only for a generation above every one recorded,
once (a unique constraint backs the check).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from kube.controller.mirror import Action, apply_event
from trainer.models import RuntimeRevision, TrainingRuntime
from trainer.runtimes import revisions

_NOTHING_NEW = (Action.DUPLICATE, Action.STALE)


def mirror_runtime(event_type: str, obj: dict[str, Any], *, now: datetime | None = None) -> Action:
    """Fold one runtime watch event into its row and, for a new generation, a revision."""
    now = now or timezone.now()
    with transaction.atomic():
        action = apply_event(TrainingRuntime, event_type, obj, now=now)
        if action not in _NOTHING_NEW:
            record_revision(obj, now)
    return action


def record_revision(obj: dict[str, Any], now: datetime) -> RuntimeRevision | None:
    """Append the revision of the object's generation unless one as new exists; None when it does."""
    metadata = obj.get("metadata") or {}
    generation = metadata.get("generation")
    if not isinstance(generation, int) or isinstance(generation, bool):
        return None
    # Locking the runtime row serializes two writers of one runtime (a relist racing a watch event).
    runtime = TrainingRuntime.objects.select_for_update().only("pk").get(uid=metadata["uid"])
    latest = runtime.revisions.order_by("-generation").only("generation", "spec").first()
    if latest is not None and latest.generation >= generation:
        return None
    spec = obj.get("spec") or {}
    diff = revisions.spec_diff(latest.spec, latest.generation, spec, generation) if latest else ""
    return RuntimeRevision.objects.create(
        runtime=runtime,
        generation=generation,
        spec=spec,
        diff=diff,
        changed_by=revisions.changed_by(obj),
        recorded_at=now,
    )


@dataclass(frozen=True)
class RuntimeMirror:
    """The controllers' `mirror=`: equal instances, so a controllers module imported twice registers the
    same controller again. Long-lived watch threads drop stale connections first (as MirrorHandler)."""

    def __call__(self, event_type: str, obj: dict[str, Any]) -> None:
        if not connection.in_atomic_block:
            close_old_connections()
        mirror_runtime(event_type, obj)
