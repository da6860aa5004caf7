"""Kubernetes-style status conditions, as plain dicts (API conventions: type, status, reason, message,
lastTransitionTime). Pure functions: the caller passes `now`, so tests need no clock."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .times import format_time

Condition = dict[str, Any]
TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"


def timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with second precision, as the API server writes times."""
    return format_time(moment)


def find_condition(conditions: list[Condition] | None, type_: str) -> Condition | None:
    return next((condition for condition in conditions or [] if condition.get("type") == type_), None)


def is_true(conditions: list[Condition] | None, type_: str) -> bool:
    condition = find_condition(conditions, type_)
    return condition is not None and condition.get("status") == TRUE


def set_condition(
    conditions: list[Condition] | None,
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
) -> list[Condition]:
    """A new list with `type_` set. lastTransitionTime moves only when the status itself changes, so a
    reason or message update does not look like a transition; the order of the other conditions is kept."""
    if status not in (TRUE, FALSE, UNKNOWN):
        raise ValueError(f"status must be True, False or Unknown, not {status!r}")
    updated: list[Condition] = []
    found = False
    for condition in conditions or []:
        if condition.get("type") != type_:
            updated.append(condition)
            continue
        found = True
        transition = condition.get("lastTransitionTime") if condition.get("status") == status else None
        updated.append(_condition(type_, status, reason, message, transition or timestamp(now)))
    if not found:
        updated.append(_condition(type_, status, reason, message, timestamp(now)))
    return updated


def _condition(type_: str, status: str, reason: str, message: str, transition: str) -> Condition:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
    }


def status_changed(current: dict[str, Any] | None, desired: dict[str, Any]) -> bool:
    """Whether a /status patch is needed: any field of `desired` differs from what the object has."""
    current = current or {}
    return any(current.get(key) != value for key, value in desired.items())
