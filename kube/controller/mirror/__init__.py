"""The database mirror of cluster resources: watch events → rows (kube.models) and their history.

`mirror_handler(Model)` is what a controller passes as `mirror=`; `apply_events` (a batch;
`apply_event` is a batch of one) is the one write path.
"""

from __future__ import annotations

from .apply import Event, MirrorRaceLost, Outcome, apply_event, apply_events, history_model_of, mirror_handler
from .decide import Action

__all__ = [
    "Action",
    "Event",
    "MirrorRaceLost",
    "Outcome",
    "apply_event",
    "apply_events",
    "history_model_of",
    "mirror_handler",
]
