"""Argo node and workflow phases, shared by the operation and its template executors."""

from __future__ import annotations

from typing import Any

PENDING, RUNNING, SUCCEEDED, FAILED, ERROR = "Pending", "Running", "Succeeded", "Failed", "Error"
SKIPPED, OMITTED = "Skipped", "Omitted"
FULFILLED = frozenset({SUCCEEDED, FAILED, ERROR, SKIPPED, OMITTED})
UNSUCCESSFUL = frozenset({FAILED, ERROR})
WAIT = "wait"  # a start blocker that passes: parallelism is full for now


def fulfilled(node: dict[str, Any] | None) -> bool:
    return node is not None and node.get("phase") in FULFILLED
