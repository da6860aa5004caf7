"""The database mirror of cluster resources: watch events → rows (kube.models) and their history.

`mirror_handler(Model)` is what a controller passes as `mirror=`; `apply_event` is the one write path.
"""

from __future__ import annotations

from .apply import MirrorRaceLost, apply_event, history_model_of, mirror_handler
from .decide import Action

__all__ = ["Action", "MirrorRaceLost", "apply_event", "history_model_of", "mirror_handler"]
