"""Pure decisions of the mirror: what a watch event means for the row we hold, and which transition it is.

resourceVersion is opaque (compared for equality only), so staleness is judged by signals that only move
forward: a deleted uid never comes back, `metadata.generation` and `status.observedGeneration` never
decrease. An out-of-order status update within one generation cannot be told from a newer one; the next
event (or the resync) heals it, as everywhere in a level-triggered system.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import Enum
from typing import Any

from kube.models import REASON_MAX_LENGTH, parse_time

EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED")

ConditionKey = tuple[str, str, str]  # (type, status, reason)


class Action(Enum):
    INSERT = "insert"  # first sight of this uid
    UPDATE = "update"  # new content for a live row
    DELETE = "delete"  # mark the row deleted (with the object's last content when it is newer)
    DUPLICATE = "duplicate"  # the same resourceVersion again: nothing to do
    STALE = "stale"  # older than what the row holds: nothing to do


@dataclass(frozen=True)
class Stored:
    """The few columns of the existing row a decision needs."""

    pk: int
    resource_version: str
    generation: int
    observed_generation: int | None
    phase: str
    conditions: list[dict[str, Any]]
    deleted: bool


@dataclass(frozen=True)
class Decision:
    action: Action
    write_content: bool = False  # copy the object's spec, status, ... into the row
    transition: bool = False  # the phase or a condition changed: append a history row
    deleted: bool = False  # the row ends up deleted: append a deletion history row


def decide(stored: Stored | None, event_type: str, fields: dict[str, Any]) -> Decision:
    """What to do with an event whose object has column values `fields` (from `observed_fields`)."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"event type must be one of {', '.join(EVENT_TYPES)}, not {event_type!r}")
    deleting = event_type == "DELETED"
    if stored is None:
        # A first sight is a transition from nothing, unless the object has no state to speak of yet.
        has_state = bool(fields["phase"] or fields["conditions"])
        return Decision(Action.INSERT, write_content=True, transition=has_state, deleted=deleting)
    if stored.deleted:
        return Decision(Action.DUPLICATE if deleting else Action.STALE)
    older = _is_older(stored, fields)
    same = fields["resource_version"] == stored.resource_version
    if older or same:
        # A delete is final whatever its object says; the content we hold is as new or newer.
        if deleting:
            return Decision(Action.DELETE, deleted=True)
        return Decision(Action.STALE if older else Action.DUPLICATE)
    changed = fields["phase"] != stored.phase or condition_keys(fields["conditions"]) != condition_keys(
        stored.conditions
    )
    return Decision(
        Action.DELETE if deleting else Action.UPDATE, write_content=True, transition=changed, deleted=deleting
    )


def _is_older(stored: Stored, fields: dict[str, Any]) -> bool:
    if fields["generation"] < stored.generation:
        return True
    observed = fields["observed_generation"]
    return (
        observed is not None
        and stored.observed_generation is not None
        and observed < stored.observed_generation
    )


def condition_keys(conditions: list[dict[str, Any]] | None) -> frozenset[ConditionKey]:
    """What makes a condition change a transition: its type, status and reason (not message or times)."""
    return frozenset(
        (str(c.get("type") or ""), str(c.get("status") or ""), str(c.get("reason") or ""))
        for c in conditions or []
        if isinstance(c, dict)
    )


@dataclass(frozen=True)
class Transition:
    at: datetime
    phase: str
    reason: str
    message: str


def transition(
    fields: dict[str, Any], previous_conditions: list[dict[str, Any]] | None, now: datetime
) -> Transition:
    """The history row for a change to `fields`: the newest condition that changed names the reason, message
    and time; without one (only the phase moved) `status.reason`/`status.message` and `now` do."""
    before = condition_keys(previous_conditions)
    changed = [
        c
        for c in fields["conditions"]
        if isinstance(c, dict) and next(iter(condition_keys([c]))) not in before
    ]
    status = fields["status"]
    if changed:
        newest = max(
            enumerate(changed), key=lambda pair: (str(pair[1].get("lastTransitionTime") or ""), pair[0])
        )[1]
        at = parse_time(newest.get("lastTransitionTime")) or now
        reason, message = newest.get("reason"), newest.get("message")
    else:
        at, reason, message = now, status.get("reason"), status.get("message")
    return Transition(at, fields["phase"], str(reason or "")[:REASON_MAX_LENGTH], str(message or ""))


def deletion(phase: str, now: datetime, *, inferred: bool = False) -> Transition:
    """The history row of a deletion; `inferred` when a new object took the name before we saw the delete."""
    message = (
        "A new object took its name, so it was deleted (the delete event was missed)."
        if inferred
        else "Deleted from the cluster."
    )
    return Transition(now, phase, "Deleted", message)


@dataclass
class Folded:
    """One uid's events of a batch folded into the write they need: the row as the last event leaves it
    (`content`: the newest object's column values), whether it ends deleted, and every transition on the
    way, each with the resourceVersion of the event that made it."""

    stored: Stored | None  # the row as it was read, before the batch
    actions: list[Action] = field(default_factory=list)  # one per event, in order
    content: dict[str, Any] | None = None
    deleted: bool = False
    history: list[tuple[Transition, str]] = field(default_factory=list)

    @property
    def inserts(self) -> bool:
        return self.stored is None and Action.INSERT in self.actions

    @property
    def writes(self) -> bool:
        return self.content is not None or self.deleted


def fold(stored: Stored | None, events: list[tuple[str, dict[str, Any]]], now: datetime) -> Folded:
    """Decide each event (type, column values) of one uid in order, against the row as the events before
    it left it, so a batch writes once what one-at-a-time writes would have left, history included."""
    folded = Folded(stored)
    current = stored
    for event_type, fields in events:
        decision = decide(current, event_type, fields)
        folded.actions.append(decision.action)
        if decision.action in (Action.DUPLICATE, Action.STALE):
            continue
        resource_version = fields["resource_version"]
        if decision.transition:
            previous = current.conditions if current is not None else None
            folded.history.append((transition(fields, previous, now), resource_version))
        if decision.deleted:
            phase = current.phase if current is not None and not decision.write_content else fields["phase"]
            folded.history.append((deletion(phase, now), resource_version))
            folded.deleted = True
        if decision.write_content:
            folded.content = fields
            current = Stored(
                current.pk if current is not None else 0,
                resource_version,
                fields["generation"],
                fields["observed_generation"],
                fields["phase"],
                fields["conditions"],
                decision.deleted,
            )
        elif current is not None:
            current = replace(current, deleted=current.deleted or decision.deleted)
    return folded
