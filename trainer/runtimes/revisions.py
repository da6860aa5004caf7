"""Runtime revisions as text: a spec's YAML, the unified diff between two revisions, and who made a
generation (the admin user whose edit produced it, else the cluster). Pure functions.

Attribution rides on the object: the admin's edit annotates the runtime with its user and the generation
that edit produces. A later change by anyone else (kubectl edit keeps annotations) makes a newer
generation the annotation does not name, so it is never credited to that admin user.
"""

from __future__ import annotations

import difflib
from typing import Any

import yaml

CHANGED_BY_ANNOTATION = "argoml.io/changed-by"
CHANGED_GENERATION_ANNOTATION = "argoml.io/changed-by-generation"
#: Shown for a revision nobody signed: kubectl, the install command, another controller.
CLUSTER = ""


def spec_text(spec: dict[str, Any]) -> str:
    """The spec as YAML with sorted keys: PostgreSQL's jsonb keeps no key order, so sorting keeps the
    diff between two revisions to what changed."""
    return yaml.safe_dump(spec, sort_keys=True, default_flow_style=False, allow_unicode=True)


def spec_diff(before: dict[str, Any], before_generation: int, after: dict[str, Any], generation: int) -> str:
    """The unified diff from one revision's spec to the next ("" when the spec did not change, as when a
    deletion bumps the generation)."""
    lines = difflib.unified_diff(
        spec_text(before).splitlines(keepends=True),
        spec_text(after).splitlines(keepends=True),
        fromfile=f"generation {before_generation}",
        tofile=f"generation {generation}",
    )
    return "".join(lines)


def changed_by(obj: dict[str, Any]) -> str:
    """Who made the object's current generation: the user its annotations name for exactly this
    generation, else CLUSTER."""
    metadata = obj.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    user = annotations.get(CHANGED_BY_ANNOTATION)
    if not isinstance(user, str) or not user:
        return CLUSTER
    if annotations.get(CHANGED_GENERATION_ANNOTATION) != str(metadata.get("generation")):
        return CLUSTER
    return user


def attribution(username: str, current_generation: int) -> dict[str, str]:
    """The annotations an edit by `username` sets: its spec change makes generation current + 1."""
    return {
        CHANGED_BY_ANNOTATION: username,
        CHANGED_GENERATION_ANNOTATION: str(current_generation + 1),
    }


#: Set on each TrainJob by its controller: the runtime's metadata.generation when the job started.
RUNTIME_GENERATION_ANNOTATION = "argoml.io/runtime-generation"


def started_generation(train_job: dict[str, Any]) -> int | None:
    """The runtime generation a TrainJob's annotation records, or None when absent or not a number."""
    annotations = (train_job.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(RUNTIME_GENERATION_ANNOTATION)
    if not isinstance(value, str) or not value.isdigit():
        return None
    return int(value)
