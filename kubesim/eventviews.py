"""One set of Events, two APIs: core `v1` Events are the `events.k8s.io/v1` Events seen in the older shape.

A real API server stores Events once and serves them through both groups, converting field by field
(kubernetes pkg/apis/events/v1 conversion): what a controller records with `events.k8s.io` is what
`kubectl describe` and `kubectl get events` read through core `v1`, and the other way round. The simulator
stores them as `events.k8s.io/v1` and converts core requests and answers with these pure functions.
"""

from __future__ import annotations

from typing import Any

from kubesim.resources import View
from kubesim.selectors import Selector

# events.k8s.io/v1 field → core v1 field; every other field (metadata, reason, type, action, eventTime,
# series, related, reportingInstance) has the same name and shape in both.
RENAMED = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
TO_EVENTS = {core: events for events, core in RENAMED.items()}
EVENTS_API_VERSION = "events.k8s.io/v1"


def to_core(event: dict[str, Any]) -> dict[str, Any]:
    """A stored events.k8s.io/v1 Event as core v1 serves it (involvedObject is always there, as in Go)."""
    core = {RENAMED.get(key, key): value for key, value in event.items()}
    core["apiVersion"], core["kind"] = "v1", "Event"
    core.setdefault("involvedObject", {})
    return core


def from_core(event: dict[str, Any]) -> dict[str, Any]:
    """A core v1 Event (as a client sent it) in the events.k8s.io/v1 shape the simulator stores."""
    stored = {TO_EVENTS.get(key, key): value for key, value in event.items()}
    stored["apiVersion"], stored["kind"] = EVENTS_API_VERSION, "Event"
    return stored


def core_selector(fields: Selector) -> Selector:
    """A field selector written for core Events (`involvedObject.uid=…`), applied to the stored ones."""
    if fields.empty:
        return fields
    return Selector(fields.text, (lambda event: fields.matches(to_core(event)),))


CORE_EVENTS = View(
    stored_as="events.events.k8s.io", to_view=to_core, from_view=from_core, selector=core_selector
)
