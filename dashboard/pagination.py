"""Keyset pages over big tables, newest first: no COUNT(*) and no OFFSET, so page 2,000 of 100,000 jobs
costs what page 1 costs (one index range scan). The cursor is the last row's (time, id), opaque to users."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from django.db.models import Model, Q, QuerySet

M = TypeVar("M", bound=Model)

PAGE_SIZE = 50
_NULL = "-"


class BadCursor(ValueError):
    """A cursor that did not come from us (edited by hand, or from an older version)."""


@dataclass(frozen=True)
class Page(Generic[M]):
    rows: list[M]
    next_cursor: str | None
    first: bool


def encode_cursor(moment: datetime | None, pk: int) -> str:
    return f"{moment.isoformat() if moment else _NULL}~{pk}"


def decode_cursor(cursor: str) -> tuple[datetime | None, int]:
    moment, sep, pk = cursor.rpartition("~")
    if not sep or not pk.isdigit():
        raise BadCursor(f"cursor {cursor!r} is not one of ours")
    if moment == _NULL:
        return None, int(pk)
    try:
        return datetime.fromisoformat(moment), int(pk)
    except ValueError as error:
        raise BadCursor(f"cursor {cursor!r} is not one of ours") from error


def after(time_field: str, cursor: str) -> Q:
    """Rows after the cursor in `-time, -id` order (PostgreSQL puts NULL times first when descending)."""
    moment, pk = decode_cursor(cursor)
    if moment is None:
        return Q(**{f"{time_field}__isnull": True, "pk__lt": pk}) | Q(**{f"{time_field}__isnull": False})
    # The first term is redundant but bounds the index range scan; without it PostgreSQL reads the index
    # from its start and filters (200 ms deep into 100,000 jobs instead of 1 ms).
    return Q(**{f"{time_field}__lte": moment}) & (
        Q(**{f"{time_field}__lt": moment}) | Q(**{time_field: moment, "pk__lt": pk})
    )


def newest_first(
    queryset: QuerySet[M], time_field: str, cursor: str | None, size: int = PAGE_SIZE
) -> Page[M]:
    """One page in `-time, -id` order, and the cursor of the next one (None on the last page)."""
    ordered = queryset.order_by(f"-{time_field}", "-pk")
    if cursor:
        ordered = ordered.filter(after(time_field, cursor))
    rows = list(ordered[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    next_cursor = encode_cursor(getattr(rows[-1], time_field), rows[-1].pk) if more else None
    return Page(rows, next_cursor, first=not cursor)
