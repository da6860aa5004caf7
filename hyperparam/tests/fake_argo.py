"""Just enough of Argo's behaviour to test our Workflows without a cluster: how a `withItems` step expands
(argument substitution and node names) and what `status.nodes` looks like once the trials ran.

Node entries carry every field a real Argo 3.5 pod node has, with realistic lengths, so size checks against
them are honest.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_TEMPLATE_TAG = re.compile(r"\{\{([^{}]+)\}\}")


@dataclass(frozen=True)
class Outcome:
    phase: str = "Succeeded"
    metric: str | None = "0.5"
    message: str = ""


def entry_template(workflow: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = workflow["spec"]
    return next(t for t in spec["templates"] if t["name"] == spec["entrypoint"])


def expand(workflow: Mapping[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """(display name, arguments the called template receives) per item, as Argo's expandStep makes them."""
    step = entry_template(workflow)["steps"][0][0]
    global_parameters = {
        p["name"]: p.get("value", "") for p in workflow["spec"].get("arguments", {}).get("parameters", [])
    }
    expanded = []
    for position, item in enumerate(step["withItems"]):
        scope = {f"item.{key}": value for key, value in item.items()}
        scope |= {f"workflow.parameters.{key}": value for key, value in global_parameters.items()}
        arguments = {
            p["name"]: _TEMPLATE_TAG.sub(lambda m, s=scope: s[m.group(1).strip()], p["value"])
            for p in step["arguments"]["parameters"]
        }
        rendered = ",".join(f"{key}:{item[key]}" for key in sorted(item))
        expanded.append((f"{step['name']}({position}:{rendered})", arguments))
    return expanded


def node_id(workflow_name: str, node_name: str) -> str:
    return f"{workflow_name}-{zlib.crc32(node_name.encode()):010d}"


def run(
    workflow: Mapping[str, Any],
    outcome: Callable[[int, dict[str, str]], Outcome | None] = lambda position, arguments: Outcome(),
    *,
    workflow_phase: str = "Succeeded",
    message: str = "",
) -> dict[str, Any]:
    """The workflow with the status Argo would write; `outcome` None leaves a trial without a node yet."""
    name = workflow["metadata"]["name"]
    entry = entry_template(workflow)
    trial_template = entry["steps"][0][0]["template"]
    called = next(t for t in workflow["spec"]["templates"] if t["name"] == trial_template)
    root_id = name
    group_name = f"{name}[0]"
    group_id = node_id(name, group_name)
    nodes: dict[str, Any] = {}
    children = []
    for position, (display, arguments) in enumerate(expand(workflow)):
        result = outcome(position, arguments)
        if result is None:
            continue
        node_name = f"{group_name}.{display}"
        trial_id = node_id(name, node_name)
        children.append(trial_id)
        nodes[trial_id] = pod_node(name, trial_id, node_name, display, called, arguments, result, group_id)
    nodes[root_id] = _boundary_node(
        name, root_id, name, name, "Steps", entry["name"], [group_id], workflow_phase
    )
    nodes[group_id] = _boundary_node(
        name, group_id, group_name, "[0]", "StepGroup", entry["name"], children, workflow_phase
    )
    status = {
        "phase": workflow_phase,
        "message": message,
        "startedAt": "2025-01-01T10:00:00Z",
        "finishedAt": "2025-01-01T12:00:00Z",
        "progress": f"{len(children)}/{len(children)}",
        "nodes": nodes,
        "conditions": [{"type": "PodRunning", "status": "False"}, {"type": "Completed", "status": "True"}],
        "resourcesDuration": {"cpu": 12345, "memory": 67890},
        "artifactRepositoryRef": {"default": True, "artifactRepository": {}},
        "taskResultsCompletionStatus": dict.fromkeys(children, True),
    }
    metadata = {**workflow["metadata"], "managedFields": _managed_fields(status)}
    return {**workflow, "metadata": metadata, "status": status}


def _managed_fields(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The apiserver's record of the fields Argo's controller wrote: every node key, every field in it."""
    return [
        {
            "manager": "workflow-controller",
            "operation": "Update",
            "apiVersion": "argoproj.io/v1alpha1",
            "time": "2025-01-01T12:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": _fields(status)},
        }
    ]


def _fields(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    return {".": {}, **{f"f:{key}": _fields(child) for key, child in value.items()}}


def pod_node(
    workflow_name: str,
    trial_id: str,
    node_name: str,
    display: str,
    template: Mapping[str, Any],
    arguments: dict[str, str],
    result: Outcome,
    boundary_id: str,
) -> dict[str, Any]:
    """A trial's node as Argo writes it for a container template, every optional field filled."""
    outputs: dict[str, Any] = {
        "artifacts": [
            {
                "name": "main-logs",
                "s3": {"key": f"{workflow_name}/{trial_id}/main.log"},
            }
        ],
        "exitCode": "0" if result.phase == "Succeeded" else "1",
    }
    declared_outputs = template.get("outputs", {}).get("parameters", [])
    if result.metric is not None and declared_outputs:
        outputs["parameters"] = [{**declared_outputs[0], "value": result.metric}]
    node: dict[str, Any] = {
        "id": trial_id,
        "name": node_name,
        "displayName": display,
        "type": "Pod",
        "templateName": template["name"],
        "templateScope": f"local/{workflow_name}",
        "phase": result.phase,
        "boundaryID": boundary_id,
        "message": result.message or ("" if result.phase == "Succeeded" else "Error (exit code 1)"),
        "startedAt": "2025-01-01T10:00:00Z",
        "finishedAt": "2025-01-01T10:30:00Z",
        "progress": "1/1",
        "estimatedDuration": 1800,
        "resourcesDuration": {"cpu": 1800, "memory": 900000, "nvidia.com/gpu": 1800},
        "inputs": {"parameters": [{"name": key, "value": value} for key, value in arguments.items()]},
        "outputs": outputs,
        "hostNodeName": "gke-ml-cluster-gpu-pool-a1b2c3d4-x7y8",
    }
    if result.phase not in ("Succeeded",):
        node["outputs"].pop("parameters", None)
    return node


def _boundary_node(
    workflow_name: str,
    node_id_: str,
    name: str,
    display: str,
    kind: str,
    template: str,
    children: list[str],
    phase: str,
) -> dict[str, Any]:
    return {
        "id": node_id_,
        "name": name,
        "displayName": display,
        "type": kind,
        "templateName": template,
        "templateScope": f"local/{workflow_name}",
        "phase": phase,
        "boundaryID": workflow_name,
        "startedAt": "2025-01-01T10:00:00Z",
        "finishedAt": "2025-01-01T12:00:00Z",
        "progress": f"{len(children)}/{len(children)}",
        "children": children,
    }
