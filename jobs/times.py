"""Kubernetes timestamps: RFC 3339 in UTC with second precision, as the API server writes them."""

from datetime import UTC, datetime


def format_time(moment: datetime) -> str:
    """Return `moment` as `2024-05-01T12:00:00Z`; naive datetimes are taken to be UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> datetime | None:
    """Read a timestamp written by the API server or by us; anything unreadable is None, never an error.

    Status fields are written by other processes too, so a malformed value must not crash a reconcile.
    """
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
