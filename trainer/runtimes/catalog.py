"""The ready-made ClusterTrainingRuntimes we ship (`trainer/runtimes/*.yaml`), as Kubeflow Trainer ships
them, for the install command and the chart to apply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workflows import safeyaml

RUNTIMES_DIR = Path(__file__).resolve().parent


def ready_made_runtimes() -> list[dict[str, Any]]:
    """Every shipped runtime manifest, sorted by file name."""
    return [safeyaml.load(path.read_text()) for path in sorted(RUNTIMES_DIR.glob("*.yaml"))]
