"""Kubernetes-style status conditions, as plain dicts (API conventions: type, status, reason, message,
lastTransitionTime). Pure functions: the caller passes `now`, so tests need no clock."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from .times import format_time

Condition = dict[str, Any]
TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
#: A condition as read: a dict to change, or any mapping to look at (a frozen view's).
AnyCondition = TypeVar("AnyCondition", bound=Mapping[str, Any])


def timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with second precision, as the API server writes times."""
    return format_time(moment)


def find_condition(conditions: Sequence[AnyCondition] | None, type_: str) -> AnyCondition | None:
    return next((condition for condition in conditions or [] if condition.get("type") == type_), None)


def is_true(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> bool:
    condition = find_condition(conditions, type_)
    return condition is not None and condition.get("status") == TRUE


def set_condition(
    conditions: list[Condition] | None,
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: datetime | str,
    *,
    updated_last: bool = False,
) -> list[Condition]:
    """A new list with `type_` set, as apimachinery's `meta.SetStatusCondition` sets it (the given list and
    its conditions are left as they are): a new type goes last with lastTransitionTime `now`; an existing
    one keeps its place and its other fields, takes the reason and message, and its lastTransitionTime
    moves only when its status changes (a new reason or message is no transition; one without a
    lastTransitionTime gets `now`). A condition whose
    status, reason and message are already these is left unchanged.

    `updated_last` adds what Kubeflow v1's `setCondition` (training-operator) does: a condition that
    changes also gets lastUpdateTime `now` and moves last, so the list reads in the order conditions last
    changed. `now` may be an API time already written (RFC 3339 text)."""
    if status not in (TRUE, FALSE, UNKNOWN):
        raise ValueError(f"status must be True, False or Unknown, not {status!r}")
    moment = now if isinstance(now, str) else timestamp(now)
    existing = find_condition(conditions, type_)
    if existing is not None and (existing.get("status"), existing.get("reason"), existing.get("message")) == (
        status,
        reason,
        message,
    ):
        return list(conditions or [])
    transition = moment
    if existing is not None and existing.get("status") == status and "lastTransitionTime" in existing:
        transition = existing["lastTransitionTime"]
    condition = {
        **(existing or {"type": type_}),
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
    }
    if updated_last:
        condition["lastUpdateTime"] = moment
    others = [c for c in conditions or [] if c.get("type") != type_]
    if existing is None or updated_last:
        return [*others, condition]
    return [condition if c is existing else c for c in conditions or []]


def status_changed(current: dict[str, Any] | None, desired: dict[str, Any]) -> bool:
    """Whether a /status patch is needed: any field of `desired` differs from what the object has."""
    current = current or {}
    return any(current.get(key) != value for key, value in desired.items())
