"""Timestamps as the Kubernetes API writes them (RFC 3339), read without ever raising."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_time(text: object) -> datetime | None:
    """An API timestamp (`2026-01-02T03:04:05Z`) as an aware datetime (UTC when it names no zone); None when
    absent or malformed: status fields are written by other processes too, and one odd value must never stop
    a reconcile, a collection or the mirror."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def format_time(moment: datetime) -> str:
    """`moment` as the API writes it, `2026-01-02T03:04:05Z` (UTC, seconds); a naive datetime is UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
