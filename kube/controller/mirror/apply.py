"""Write watch events into mirror rows: upsert by uid and append history, a batch in one transaction.

A batch reads its rows with `SELECT ... FOR UPDATE` (one query for every uid in it), folds each uid's
events in order against its row (decide.py), then writes: one UPDATE per group of changed
rows, one INSERT of new rows, one INSERT of history. Locking the rows it read is what makes a batch safe
against another writer of the same uids (a leader being replaced). An insert that fails (the uid inserted
by another writer meanwhile, or a name still held by a live row whose delete event was missed) fails the
batch, which is then applied uid by uid: read again, or the name's old row retired first. A batch that
fails for any other reason is also applied uid by uid, so one bad row never loses the others' events.
No cluster calls happen here, inside or outside the transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from operator import or_
from typing import Any, cast

from django.apps import apps
from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from django.db import DatabaseError, IntegrityError, close_old_connections, connection, transaction
from django.db.models import Field, Q
from django.utils import timezone

from kube.logging import runtime_logger
from kube.models import MirroredResource, MirrorHistory

from .decide import EVENT_TYPES, Action, Folded, Stored, Transition, deletion, fold

logger = runtime_logger(__name__)

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

#: A watch event as the informer hands it over: (ADDED | MODIFIED | DELETED, the raw object).
Event = tuple[str, dict[str, Any]]
#: What became of one event: an Action, or the error that kept it out of the mirror.
Outcome = Action | Exception


class MirrorRaceLost(RuntimeError):
    """The row kept changing under us (another writer of the same uid) for MAX_ATTEMPTS tries."""


def apply_event(
    model: type[MirroredResource], event_type: str, obj: dict[str, Any], *, now: datetime | None = None
) -> Action:
    """Fold one watch event (ADDED, MODIFIED or DELETED, with its raw object) into `model`'s row.

    Returns what happened: INSERT, UPDATE, DELETE, or DUPLICATE / STALE when nothing changed.
    """
    outcome = apply_events(model, [(event_type, obj)], now=now)[0]
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def apply_events(
    model: type[MirroredResource], events: Sequence[Event], *, now: datetime | None = None
) -> list[Outcome]:
    """Fold a batch of watch events into `model`'s rows, in one transaction when all goes well.

    Events of one uid are applied in their order; every transition among them gets its history row, and
    the row ends as the last event left it. Returns one outcome per event, in order: an event refused
    (no uid, no name, an unknown type) or whose uid could not be written gets its error, the rest of
    the batch is written all the same.
    """
    now = now or timezone.now()
    outcomes: list[Outcome | None] = [None] * len(events)
    by_uid: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
    for index, (event_type, obj) in enumerate(events):
        try:
            uid, fields = _identify(model, event_type, obj)
        except ValueError as error:
            outcomes[index] = error
            continue
        by_uid.setdefault(uid, []).append((index, event_type, fields))
    if len(by_uid) > 1:
        try:
            _apply_once(model, by_uid, now, outcomes)
            by_uid = {}
        except DatabaseError as error:
            logger.warning("mirror: a batch of %d %s rows failed (%s); writing them one by one",
                           len(by_uid), model.__name__, error)  # fmt: skip
    for uid, group in by_uid.items():
        try:
            _apply_retrying(model, {uid: group}, now, outcomes)
        except (DatabaseError, MirrorRaceLost) as error:
            for index, _event_type, _fields in group:
                outcomes[index] = error
    return [outcome if outcome is not None else Action.DUPLICATE for outcome in outcomes]


def _identify(model: type[MirroredResource], event_type: str, obj: dict[str, Any]) -> tuple[str, dict]:
    if event_type not in EVENT_TYPES:
        raise ValueError(f"event type must be one of {', '.join(EVENT_TYPES)}, not {event_type!r}")
    uid = (obj.get("metadata") or {}).get("uid")
    if not uid:
        raise ValueError(
            f"metadata.uid is missing: a {obj.get('kind') or 'object'} cannot be mirrored without it"
        )
    fields = model.observed_fields(obj)
    if not fields["name"]:
        raise ValueError(f"metadata.name is missing on {obj.get('kind') or 'object'} uid={uid}")
    return str(uid), fields


Groups = dict[str, list[tuple[int, str, dict[str, Any]]]]


def _apply_retrying(
    model: type[MirroredResource], groups: Groups, now: datetime, outcomes: list[Outcome | None]
) -> None:
    """One uid's events: a uid another writer inserted meanwhile is read again and decided again; a name
    a live row of another uid holds is taken from it (its delete event was missed) on the next try."""
    retire = False
    for _attempt in range(MAX_ATTEMPTS):
        try:
            _apply_once(model, groups, now, outcomes, retire=retire)
            return
        except IntegrityError:
            if not model._default_manager.filter(uid__in=list(groups)).exists():
                if retire:
                    raise  # not the name either: a constraint this row breaks, retrying cannot help
                retire = True
    raise MirrorRaceLost(
        f"{model.__name__} uid={', '.join(groups)} changed {MAX_ATTEMPTS} times while being mirrored"
    )


def _apply_once(
    model: type[MirroredResource],
    groups: Groups,
    now: datetime,
    outcomes: list[Outcome | None],
    *,
    retire: bool = False,
) -> None:
    history = history_model_of(model)
    with transaction.atomic():
        stored = _read(model, list(groups))
        folded = {
            uid: fold(stored.get(uid), [(event_type, fields) for _, event_type, fields in group], now)
            for uid, group in groups.items()
        }
        _write(model, history, folded, now, retire=retire)
    for uid, group in groups.items():
        for (index, event_type, _fields), action in zip(group, folded[uid].actions, strict=True):
            outcomes[index] = action
            logger.debug("mirror %s %s: %s", event_type, uid, action.value)


@dataclass(frozen=True)
class MirrorHandler:
    """A watch handler `(event_type, obj)` mirroring into `model`, for a controller's `mirror=`.

    The controller runtime never calls it: its writer thread batches the events of every handler of one
    model into `apply_events` (writer.py). Called directly (an Informer's handler, a tool), it
    writes the one event at once. Handlers of one model compare equal, so a controllers module imported
    twice registers the same controller again. Threads that live for days never see Django's request
    signals, so each event first drops a database connection that broke or outlived CONN_MAX_AGE
    (outside any transaction only).
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


def _read(model: type[MirroredResource], uids: list[str]) -> dict[str, Stored]:
    """The rows of `uids`, locked until the batch's transaction ends (in pk order, as every batch locks)."""
    rows = (
        model._default_manager.select_for_update()
        .filter(uid__in=uids)
        .order_by("pk")
        .values_list("uid", *_STORED_COLUMNS)
    )
    return {
        uid: Stored(pk, version, generation, observed, phase, conditions, deleted_at is not None)
        for uid, pk, version, generation, observed, phase, conditions, deleted_at in rows
    }


def _write(
    model: type[MirroredResource],
    history: type[MirrorHistory] | None,
    folded: dict[str, Folded],
    now: datetime,
    *,
    retire: bool,
) -> None:
    """Updates first (a delete in the batch frees its name for an insert in the same batch), then
    inserts (after retiring the rows holding their names, with `retire`), then every history row at once.
    """
    transitions: list[tuple[int, Transition, str]] = []
    by_columns: dict[tuple[str, ...], list[MirroredResource]] = {}
    deleted_only: list[int] = []
    for found in folded.values():
        if found.stored is None or not found.writes:
            continue
        pk = found.stored.pk
        if found.content is not None:
            values = {**found.content, "updated_at": now, "deleted_at": now if found.deleted else None}
            row = model(**values)
            row.pk = pk
            by_columns.setdefault(tuple(values), []).append(row)
        else:
            deleted_only.append(pk)
        transitions += [(pk, change, version) for change, version in found.history]
    manager = model._default_manager
    for columns, changed in by_columns.items():
        _update_rows(model, columns, changed)
    if deleted_only:
        manager.filter(pk__in=deleted_only).update(deleted_at=now, updated_at=now)
    inserts = {uid: found for uid, found in folded.items() if found.inserts}
    if inserts:
        if retire:
            transitions += _retire_names(model, inserts, now)
        created = _create(model, inserts, now)
        transitions += [
            (row.pk, transition, version)
            for row, found in zip(created, inserts.values(), strict=True)
            for transition, version in found.history
        ]
    if history is not None and transitions:
        _append_history(history, transitions)


def _update_rows(
    model: type[MirroredResource], columns: tuple[str, ...], rows: list[MirroredResource]
) -> None:
    """One `UPDATE ... WHERE pk = %s` sent for every row with `executemany` (psycopg pipelines them).

    Django's `bulk_update` builds a `CASE WHEN pk = ... THEN ...` expression per column per row; for the
    mirror's batches (tens of rows, a dozen columns) building it cost the operator more CPU than anything
    else it did per job (bench/mirror_apply.py).
    """
    meta = model._meta
    quote = connection.ops.quote_name
    fields = [cast(Field, meta.get_field(column)) for column in columns]  # concrete columns only
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    # Only the model's own table and column names, quoted; every value is a parameter.
    sql = f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s"  # noqa: S608
    params = [
        [field.get_db_prep_save(getattr(row, field.attname), connection) for field in fields] + [row.pk]
        for row in rows
    ]
    with connection.cursor() as cursor:
        if len(params) == 1:
            cursor.execute(sql, params[0])  # no pipeline to open and sync for one row
        else:
            cursor.executemany(sql, params)


def _create(model: type[MirroredResource], inserts: dict[str, Folded], now: datetime) -> list[Any]:
    rows = [
        model(uid=uid, **(found.content or {}), updated_at=now, deleted_at=now if found.deleted else None)
        for uid, found in inserts.items()
    ]
    # No savepoint: a name or uid taken fails the whole transaction, and the caller tries again uid by uid.
    return model._default_manager.bulk_create(rows)


def _retire_names(
    model: type[MirroredResource], inserts: dict[str, Folded], now: datetime
) -> list[tuple[int, Transition, str]]:
    """Mark deleted the live rows of other uids holding names the inserts take; their history rows."""
    names = model.live_name_fields
    taken = reduce(
        or_, (Q(**{field: (found.content or {})[field] for field in names}) for found in inserts.values())
    )
    live = list(
        model._default_manager.filter(taken, deleted_at__isnull=True)
        .exclude(uid__in=list(inserts))
        .values_list("pk", "phase", "resource_version", *names)
    )
    if not live:
        return []
    model._default_manager.filter(pk__in=[row[0] for row in live]).update(deleted_at=now, updated_at=now)
    for row in live:
        logger.info(
            "mirror: %s has a new object; the old one is marked deleted",
            dict(zip(names, row[3:], strict=True)),
        )
    return [(pk, deletion(phase, now, inferred=True), version) for pk, phase, version, *_ in live]


def _append_history(history: type[MirrorHistory], rows: list[tuple[int, Transition, str]]) -> None:
    history._default_manager.bulk_create(
        history(
            **{f"{HISTORY_OWNER_FIELD}_id": pk},
            at=row.at,
            phase=row.phase,
            reason=row.reason,
            message=row.message,
            resource_version=resource_version,
        )
        for pk, row, resource_version in rows
    )
