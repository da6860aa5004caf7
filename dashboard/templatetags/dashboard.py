"""Small display helpers of the dashboard's templates: phase colours, durations, YAML."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import template
from django.http import QueryDict
from django.utils import timezone
from django.utils.safestring import mark_safe

from kube.models import parse_time
from web import yamlio

register = template.Library()

# Phase (of a job, replica, sweep, trial, TensorBoard or GC run) → the CSS tone that colours it.
TONES = {
    "succeeded": "ok",
    "complete": "ok",
    "ready": "ok",
    "running": "active",
    "restarting": "warn",
    "created": "idle",
    "pending": "idle",
    "suspended": "idle",
    "partial": "warn",
    "skipped": "idle",
    "failed": "bad",
    "error": "bad",
    "metricsunavailable": "bad",
}


@register.filter
def tone(phase: str | None) -> str:
    return TONES.get((phase or "").lower(), "idle")


@register.filter
def duration(seconds: float | int | timedelta | None) -> str:
    """`3h 05m`, `4m 12s`, `9s`; an em dash when unknown."""
    if seconds is None:
        return "—"
    total = int(seconds.total_seconds() if isinstance(seconds, timedelta) else seconds)
    days, rest = divmod(max(total, 0), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


@register.simple_tag
def elapsed(start: datetime | None, end: datetime | None = None, finished: bool = False) -> str:
    """How long something ran: start to end, or to now while it runs (a finished thing with no recorded
    end has no known duration)."""
    if start is None or (end is None and finished):
        return "—"
    return duration((end or timezone.now()) - start)


@register.filter
def k8s_time(value: Any) -> str:
    """An RFC 3339 time from the API (`2026-06-01T08:00:05.123Z`) as `2026-06-01 08:00:05`."""
    moment = parse_time(value)
    if moment is None:
        return str(value or "—")
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S")


@register.filter
def as_yaml(value: Any) -> str:
    return yamlio.dump(value, allow_unicode=True)


@register.simple_tag(takes_context=True)
def query_with(context: template.Context, **changes: Any) -> str:
    """The current query string with some parameters replaced (None or "" removes one): filter and page
    links keep the other filters in the URL."""
    params: QueryDict = context["request"].GET.copy()
    for key, value in changes.items():
        if value in (None, ""):
            params.pop(key, None)
        else:
            params[key] = value
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.filter
def get_item(mapping: dict[str, Any] | None, key: str) -> Any:
    return (mapping or {}).get(key, "")


@register.filter
def metric(value: float | None) -> str:
    """An objective value with 6 significant digits, an em dash when the trial reported none."""
    return "—" if value is None else f"{value:.6g}"


@register.simple_tag
def vendored(name: str) -> str:
    """The URL of a front-end library shipped by a Python package, versioned by its content."""
    from django.urls import reverse

    from dashboard.views.assets import digest

    return f"{reverse('dashboard:vendored', args=[name])}?v={digest(name)}"


# Main navigation: section → the url names that belong to it.
SECTIONS = {
    "overview": ("overview",),
    "jobs": ("jobs", "job", "replica-logs", "job-by-name"),
    "trainjobs": ("trainjobs", "trainjob", "trainjob-pod-logs"),
    "sweeps": ("sweeps", "sweep", "sweep-tab", "sweep-by-name"),
    "tensorboards": ("tensorboards",),
    "gc": ("gc", "gc-run"),
    "submit": ("submit",),
}


@register.simple_tag(takes_context=True)
def current(context: template.Context, section: str) -> str:
    """`aria-current="page"` on the navigation link of the section being shown."""
    match = getattr(context.get("request"), "resolver_match", None)
    if match is not None and match.url_name in SECTIONS.get(section, ()):
        return mark_safe('aria-current="page"')
    return ""
