"""Write watch events into mirror rows: upsert by uid and append history, in one transaction.

Every write is a compare-and-swap on the state it was decided from (`filter(pk, resource_version,
deleted_at=None).update(...)`, then the row count is checked); a lost race rereads and decides again.
No cluster calls happen here, inside or outside the transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.apps import apps
from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from django.db import IntegrityError, close_old_connections, connection, transaction
from django.utils import timezone

from kube.models import MirroredResource, MirrorHistory

from .decide import Action, Decision, Stored, Transition, decide, deletion, transition

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
_STORED_COLUMNS = (
    "pk",
    "resource_version",
    "generation",
    "observed_generation",
    "phase",
    "conditions",
    "deleted_at",
)


class MirrorRaceLost(RuntimeError):
    """The row kept changing under us (another writer of the same uid) for MAX_ATTEMPTS tries."""


def apply_event(
    model: type[MirroredResource], event_type: str, obj: dict[str, Any], *, now: datetime | None = None
) -> Action:
    """Fold one watch event (ADDED, MODIFIED or DELETED, with its raw object) into `model`'s row.

    Returns what happened: INSERT, UPDATE, DELETE, or DUPLICATE / STALE when nothing changed.
    """
    uid = (obj.get("metadata") or {}).get("uid")
    if not uid:
        raise ValueError(
            f"metadata.uid is missing: a {obj.get('kind') or 'object'} cannot be mirrored without it"
        )
    fields = model.observed_fields(obj)
    if not fields["name"]:
        raise ValueError(f"metadata.name is missing on {obj.get('kind') or 'object'} uid={uid}")
    history = history_model_of(model)
    now = now or timezone.now()
    for _attempt in range(MAX_ATTEMPTS):
        stored = _read(model, uid)
        decision = decide(stored, event_type, fields)
        if decision.action in (Action.DUPLICATE, Action.STALE):
            logger.debug("mirror %s %s: %s, nothing to do", event_type, uid, decision.action.value)
            return decision.action
        if _write(model, history, uid, fields, stored, decision, now):
            logger.debug("mirror %s %s: %s", event_type, uid, decision.action.value)
            return decision.action
    raise MirrorRaceLost(f"{model.__name__} uid={uid} changed {MAX_ATTEMPTS} times while being mirrored")


@dataclass(frozen=True)
class MirrorHandler:
    """A watch handler `(event_type, obj)` mirroring into `model`, for a controller's `mirror=`.

    Handlers of one model compare equal, so a controllers module imported twice registers the same
    controller again. Watch threads live for days and never see Django's request signals, so each event
    first drops a database connection that broke or outlived CONN_MAX_AGE (outside any transaction only).
    """

    model: type[MirroredResource]

    def __call__(self, event_type: str, obj: dict[str, Any]) -> None:
        if not connection.in_atomic_block:
            close_old_connections()
        apply_event(self.model, event_type, obj)


def mirror_handler(model: type[MirroredResource]) -> Callable[[str, dict[str, Any]], None]:
    return MirrorHandler(model)


_history_models: dict[type[MirroredResource], type[MirrorHistory] | None] = {}


# The foreign key every concrete MirrorHistory declares to its resource (see MirrorHistory's docstring).
HISTORY_OWNER_FIELD: str = "resource"


def history_model_of(model: type[MirroredResource]) -> type[MirrorHistory] | None:
    """The history model named by `model.history_model`, checked once: it must have `resource` → model."""
    if model in _history_models:
        return _history_models[model]
    history: type[MirrorHistory] | None = None
    if model.history_model:
        found = apps.get_model(model.history_model)
        if not issubclass(found, MirrorHistory):
            raise ImproperlyConfigured(
                f"{model.__name__}.history_model: {found.__name__} is not a MirrorHistory"
            )
        try:
            target = found._meta.get_field(HISTORY_OWNER_FIELD).related_model
        except FieldDoesNotExist:
            target = None
        if target is not model:
            raise ImproperlyConfigured(
                f"{found.__name__} needs `resource = models.ForeignKey({model.__name__}, ...)` for "
                f"{model.__name__}.history_model"
            )
        history = found
    _history_models[model] = history
    return history


def _read(model: type[MirroredResource], uid: str) -> Stored | None:
    row = model._default_manager.filter(uid=uid).values_list(*_STORED_COLUMNS).first()
    if row is None:
        return None
    pk, resource_version, generation, observed_generation, phase, conditions, deleted_at = row
    return Stored(
        pk, resource_version, generation, observed_generation, phase, conditions, deleted_at is not None
    )


def _write(
    model: type[MirroredResource],
    history: type[MirrorHistory] | None,
    uid: str,
    fields: dict[str, Any],
    stored: Stored | None,
    decision: Decision,
    now: datetime,
) -> bool:
    """Carry out `decision` in one transaction; False when the row changed since `stored` was read."""
    with transaction.atomic():
        if stored is None:
            pk = _insert(model, history, uid, fields, decision, now)
        else:
            pk = _update(model, fields, stored, decision, now)
        if pk is None:
            return False
        if history is not None:
            rows: list[Transition] = []
            if decision.transition:
                rows.append(transition(fields, stored.conditions if stored else None, now))
            if decision.deleted:
                phase = stored.phase if stored is not None and not decision.write_content else fields["phase"]
                rows.append(deletion(phase, now))
            _append_history(history, pk, rows, fields["resource_version"])
    return True


def _insert(
    model: type[MirroredResource],
    history: type[MirrorHistory] | None,
    uid: str,
    fields: dict[str, Any],
    decision: Decision,
    now: datetime,
) -> int | None:
    values = {**fields, "uid": uid, "updated_at": now, "deleted_at": now if decision.deleted else None}
    try:
        return _create(model, values)
    except IntegrityError:
        if model._default_manager.filter(uid=uid).exists():
            return None  # another writer inserted this uid first: decide again from its row
        # The name belongs to a live row of another uid: that object must be gone, its delete event missed.
        if not _retire_name(model, history, fields, uid, now):
            raise
    try:
        return _create(model, values)
    except IntegrityError:
        return None


def _create(model: type[MirroredResource], values: dict[str, Any]) -> int:
    with transaction.atomic():  # a savepoint, so a lost race leaves the outer transaction usable
        return model._default_manager.create(**values).pk


def _retire_name(
    model: type[MirroredResource],
    history: type[MirrorHistory] | None,
    fields: dict[str, Any],
    uid: str,
    now: datetime,
) -> bool:
    identity = {field: fields[field] for field in model.live_name_fields}
    live = (
        model._default_manager.filter(**identity, deleted_at__isnull=True)
        .exclude(uid=uid)
        .values_list("pk", "phase", "resource_version")
        .first()
    )
    if live is None:
        return False
    pk, phase, resource_version = live
    if (
        model._default_manager.filter(pk=pk, deleted_at__isnull=True).update(deleted_at=now, updated_at=now)
        == 1
    ):
        logger.info("mirror: %s has a new uid %s; the old object is marked deleted", identity, uid)
        if history is not None:
            _append_history(history, pk, [deletion(phase, now, inferred=True)], resource_version)
    return True


def _update(
    model: type[MirroredResource], fields: dict[str, Any], stored: Stored, decision: Decision, now: datetime
) -> int | None:
    rows = model._default_manager.filter(pk=stored.pk, deleted_at__isnull=True)
    values: dict[str, Any] = {"updated_at": now}
    if decision.write_content:
        rows = rows.filter(resource_version=stored.resource_version)
        values.update(fields)
    if decision.deleted:
        values["deleted_at"] = now
    return stored.pk if rows.update(**values) == 1 else None


def _append_history(
    history: type[MirrorHistory], pk: int, rows: list[Transition], resource_version: str
) -> None:
    if rows:
        history._default_manager.bulk_create(
            history(
                **{f"{HISTORY_OWNER_FIELD}_id": pk},
                at=row.at,
                phase=row.phase,
                reason=row.reason,
                message=row.message,
                resource_version=resource_version,
            )
            for row in rows
        )
