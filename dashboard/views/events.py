"""An object's Kubernetes Events, read from the cluster (they are not mirrored), as a job's and a TrainJob's
pages show them in a lazy fragment, so a slow or unreachable cluster never slows the page."""

from __future__ import annotations

from typing import Any

from dashboard.cluster import cluster_client
from fields import as_dict
from kube.errors import ApiError
from kube.resources import EVENT

EVENTS_SHOWN = 50


def events_context(namespace: str, uid: str) -> dict[str, Any]:
    """The newest EVENTS_SHOWN Events regarding the object, as the table shows them, or why there are none."""
    try:
        found = cluster_client().list(EVENT, namespace, field_selector=f"regarding.uid={uid}")
    except ApiError as failure:
        return {"events": [], "error": f"Events are unavailable: {failure}"}
    rows = [event_row(event) for event in found.get("items") or [] if isinstance(event, dict)]
    rows.sort(key=lambda row: row["last_seen"], reverse=True)
    return {"events": rows[:EVENTS_SHOWN], "error": ""}


def event_row(event: dict[str, Any]) -> dict[str, Any]:
    """What the table shows of one Event. An Event written through the core v1 API (the trainer's recorder
    writes them so, as Kubeflow's does) reads through events.k8s.io/v1 without `eventTime` or `series`, with
    its count and times in the `deprecated*` fields: each is taken from whichever the Event has."""
    series, metadata = as_dict(event.get("series")), as_dict(event.get("metadata"))
    last_seen = (
        series.get("lastObservedTime")
        or event.get("eventTime")
        or event.get("deprecatedLastTimestamp")
        or metadata.get("creationTimestamp")
    )
    return {
        "type": str(event.get("type") or ""),
        "reason": str(event.get("reason") or ""),
        "note": str(event.get("note") or ""),
        "count": series.get("count") or event.get("deprecatedCount") or 1,
        "last_seen": str(last_seen or ""),
    }
