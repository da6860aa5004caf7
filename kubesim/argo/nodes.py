"""A workflow's node bookkeeping (create, mark, link, count per boundary) and the abstract `Walker`.

`steps` and `dag` walk their children through a `Walker` (implemented by `operation.Operation`) instead of
importing the operation module, so the arrows run one way: operation → steps/dag → nodes.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any

from kubesim.argo.names import node_id
from kubesim.argo.phases import FULFILLED, UNSUCCESSFUL, fulfilled

_SEPARATOR = re.compile(r"^(\[\d+\])?\.")


def strip_separator(display: str) -> str:
    """`[0].train` → `train`, `.task` → `task` (how Argo derives display names from its boundary)."""
    return _SEPARATOR.sub("", display)


class NodeBook:
    """The nodes of one workflow's status (keyed by id) with running tallies per boundary, so parallelism
    and failFast checks need not rescan every node."""

    def __init__(self, workflow_name: str, nodes: dict[str, dict[str, Any]], timestamp: str) -> None:
        self.name = workflow_name
        self.nodes = nodes
        self.timestamp = timestamp
        self._active: dict[str, int] = {}  # boundary id → unfinished pods, steps and DAGs in it
        self._unsuccessful: dict[str, int] = {}  # boundary id → failed or errored nodes in it
        for node in self.nodes.values():
            self._tally(node, +1)

    def node(self, name: str) -> dict[str, Any] | None:
        return self.nodes.get(node_id(self.name, name))

    def init_node(
        self,
        name: str,
        kind: str,
        template_name: str,
        boundary_id: str,
        phase: str,
        message: str = "",
        inputs: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        identifier = node_id(self.name, name)
        boundary = self.nodes.get(boundary_id) if boundary_id else None
        display = name
        if boundary is not None:
            display = name[len(boundary["name"]) :] if name.startswith(boundary["name"]) else name
            display = strip_separator(display)
        node: dict[str, Any] = {
            "id": identifier,
            "name": name,
            "displayName": display,
            "type": kind,
            "templateName": template_name,
            "templateScope": f"local/{self.name}",
            "phase": phase,
            "startedAt": self.timestamp,
            "finishedAt": self.timestamp if phase in FULFILLED else None,
        }
        if boundary_id:
            node["boundaryID"] = boundary_id
        if inputs:
            node["inputs"] = {"parameters": inputs}
        if message:
            node["message"] = message
        self.nodes[identifier] = node
        self._tally(node, +1)
        return node

    def mark(self, node: dict[str, Any], phase: str, message: str | None = None) -> dict[str, Any]:
        self._tally(node, -1)
        node["phase"] = phase
        self._tally(node, +1)
        if phase in FULFILLED and not node.get("finishedAt"):
            node["finishedAt"] = self.timestamp
        if message is not None:
            if message:
                node["message"] = message
            else:
                node.pop("message", None)
        return node

    def add_child(self, parent: dict[str, Any], child: dict[str, Any]) -> None:
        children = parent.setdefault("children", [])
        if child["id"] not in children:
            children.append(child["id"])

    def outbound(self, node: dict[str, Any]) -> list[str]:
        """The node ids a following node hangs from: the node itself, or its own outbound nodes."""
        if node["type"] in ("Pod", "Skipped", "Suspend"):
            return [node["id"]]
        if node.get("outboundNodes"):
            return list(node["outboundNodes"])
        if node["type"] in ("Retry", "TaskGroup"):
            found: list[str] = []
            for child in node.get("children") or []:
                found += self.outbound(self.nodes[child])
            return found or [node["id"]]
        return [node["id"]]

    def _tally(self, node: dict[str, Any], sign: int) -> None:
        boundary = node.get("boundaryID", "")
        if node["type"] in ("Pod", "Steps", "DAG") and not fulfilled(node):
            self._active[boundary] = self._active.get(boundary, 0) + sign
        if node["phase"] in UNSUCCESSFUL:
            self._unsuccessful[boundary] = self._unsuccessful.get(boundary, 0) + sign

    def active_in(self, boundary_id: str) -> int:
        """Unfinished pods, steps and DAGs directly in a boundary (what template parallelism limits)."""
        return self._active.get(boundary_id, 0)

    def unsuccessful_in(self, boundary_id: str) -> bool:
        return self._unsuccessful.get(boundary_id, 0) > 0


class Walker(NodeBook, ABC):
    """What a steps or DAG template needs from the pass that walks it: NodeBook's bookkeeping, the scope and
    the recursion into templates (`operation.Operation`)."""

    scope: dict[str, str]

    @abstractmethod
    def start_blocker(self, boundary_id: str) -> str | None: ...

    @abstractmethod
    def execute(
        self,
        name: str,
        template_name: str,
        arguments: dict[str, Any] | None,
        boundary_id: str,
        *,
        attempt: int | None = None,
    ) -> dict[str, Any] | None: ...
