"""Steps templates: step groups run one after the other, the steps of a group in parallel.

Node shape, as Argo writes it: the Steps node's first child is `<name>[0]` (StepGroup); a group's children are
its steps (`<name>[0].<step>`, or `<name>[0].<step>(i:item)` when fanned out); every outbound node of a
group's steps has the next group as child.
"""

from __future__ import annotations

import json
from typing import Any

from kubesim.argo.expressions import evaluate_when
from kubesim.argo.nodes import Walker
from kubesim.argo.phases import WAIT, fulfilled
from kubesim.argo.values import WorkflowError, expand, substitute


def continues_on(step: dict[str, Any], phase: str) -> bool:
    tolerated = step.get("continueOn") or {}
    return bool(
        (phase == "Failed" and tolerated.get("failed")) or (phase == "Error" and tolerated.get("error"))
    )


def add_outputs_to_scope(scope: dict[str, str], prefix: str, node: dict[str, Any]) -> None:
    """`<prefix>.outputs.parameters.x`, `.outputs.result`, `.exitCode`, `.status`, `.id`, `.startedAt`..."""
    outputs = node.get("outputs") or {}
    for parameter in outputs.get("parameters") or []:
        scope[f"{prefix}.outputs.parameters.{parameter['name']}"] = str(parameter.get("value", ""))
    for artifact in outputs.get("artifacts") or []:
        scope[f"{prefix}.outputs.artifacts.{artifact['name']}"] = json.dumps(artifact)
    if "result" in outputs:
        scope[f"{prefix}.outputs.result"] = outputs["result"]
    if "exitCode" in outputs:
        scope[f"{prefix}.exitCode"] = outputs["exitCode"]
    scope[f"{prefix}.status"] = node["phase"]
    scope[f"{prefix}.id"] = node["id"]
    scope[f"{prefix}.startedAt"] = node.get("startedAt") or ""
    scope[f"{prefix}.finishedAt"] = node.get("finishedAt") or ""
    if node.get("hostNodeName"):
        scope[f"{prefix}.hostNodeName"] = node["hostNodeName"]


def add_aggregate_to_scope(scope: dict[str, str], prefix: str, nodes: list[dict[str, Any]]) -> None:
    """Outputs of a fanned-out step or task, as Argo aggregates them: JSON lists in item order."""
    parameters = [
        {p["name"]: str(p.get("value", "")) for p in (n.get("outputs") or {}).get("parameters") or []}
        for n in nodes
    ]
    scope[f"{prefix}.outputs.parameters"] = json.dumps(parameters)
    results = [(n.get("outputs") or {}).get("result") for n in nodes]
    if any(result is not None for result in results):
        scope[f"{prefix}.outputs.result"] = json.dumps([r for r in results if r is not None])
    for name in {key for entry in parameters for key in entry}:
        scope[f"{prefix}.outputs.parameters.{name}"] = json.dumps([entry.get(name) for entry in parameters])


def template_outputs(template: dict[str, Any], scope: dict[str, str]) -> dict[str, Any] | None:
    """Outputs of a steps/DAG template: `valueFrom.parameter` (or a value) resolved in its scope."""
    declared = template.get("outputs") or {}
    parameters = []
    for parameter in declared.get("parameters") or []:
        source = parameter.get("valueFrom") or {}
        raw = source.get("parameter", parameter.get("value", source.get("default")))
        if raw is None:
            continue
        value = substitute(str(raw), scope)
        if "{{" in value and source.get("default") is not None:
            value = str(source["default"])
        parameters.append({"name": parameter["name"], "value": value})
    return {"parameters": parameters} if parameters else None


def execute_steps(
    op: Walker, node: dict[str, Any], template: dict[str, Any], scope: dict[str, str]
) -> dict[str, Any]:
    scope = dict(scope)
    groups = template.get("steps") or []
    previous: dict[str, Any] | None = None
    for index, group in enumerate(groups):
        group_name = f"{node['name']}[{index}]"
        group_node = op.node(group_name) or op.init_node(
            group_name, "StepGroup", node["templateName"], node["id"], "Running"
        )
        if previous is None:
            op.add_child(node, group_node)
        elif not previous.get("children"):
            op.add_child(previous, group_node)
        else:
            for child_id in previous["children"]:
                for outbound_id in op.outbound(op.nodes[child_id]):
                    op.add_child(op.nodes[outbound_id], group_node)
        group_node = _execute_group(op, group_node, list(group or []), node["id"], scope)
        if not fulfilled(group_node):
            return node
        _remember_outputs(op, group_node, list(group or []), scope)
        previous = group_node
        if group_node["phase"] in ("Failed", "Error"):
            node["outboundNodes"] = _group_outbound(op, group_node)
            return op.mark(node, "Failed", group_node.get("message", ""))
    if previous is not None:
        node["outboundNodes"] = _group_outbound(op, previous)
    outputs = template_outputs(template, scope)
    if outputs:
        node["outputs"] = outputs
    return op.mark(node, "Succeeded")


def _group_outbound(op: Walker, group: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for child_id in group.get("children") or []:
        found += op.outbound(op.nodes[child_id])
    return found or [group["id"]]


def _remember_outputs(
    op: Walker, group: dict[str, Any], group_steps: list[dict[str, Any]], scope: dict[str, str]
) -> None:
    for step in group_steps:
        child_name = f"{group['name']}.{step.get('name')}"
        child = op.node(child_name)
        prefix = f"steps.{step.get('name')}"
        if child is not None:
            add_outputs_to_scope(scope, prefix, child)
            continue
        expanded = [
            op.nodes[c]
            for c in group.get("children") or []
            if op.nodes[c]["name"].startswith(child_name + "(") and op.nodes[c]["type"] != "Skipped"
        ]
        add_aggregate_to_scope(scope, prefix, expanded)


def _execute_group(
    op: Walker,
    group: dict[str, Any],
    group_steps: list[dict[str, Any]],
    boundary_id: str,
    scope: dict[str, str],
) -> dict[str, Any]:
    if group["phase"] in ("Succeeded", "Failed", "Error"):
        return group
    try:
        concrete = []
        for step in group_steps:
            resolved = substitute(step, scope)
            expanded = expand(resolved)
            if expanded == []:
                empty = op.node(f"{group['name']}.{step['name']}") or op.init_node(
                    f"{group['name']}.{step['name']}",
                    "Skipped",
                    step.get("template", ""),
                    boundary_id,
                    "Skipped",
                    "Skipped, empty params",
                )
                op.add_child(group, empty)
            concrete += expanded if expanded is not None else [resolved]
    except WorkflowError as error:
        return op.mark(group, "Error", str(error))
    by_child: dict[str, dict[str, Any]] = {}
    all_started = True
    stopped: str | None = None
    for step in concrete:
        child_name = f"{group['name']}.{step['name']}"
        child = op.node(child_name)
        if child is None:
            try:
                proceed = evaluate_when(str(step.get("when") or ""))
            except WorkflowError as error:
                return op.mark(group, "Error", str(error))
            if not proceed:
                child = op.init_node(
                    child_name,
                    "Skipped",
                    step.get("template", ""),
                    boundary_id,
                    "Skipped",
                    f"when '{step.get('when')}' evaluated false",
                )
                op.add_child(group, child)
                continue
            blocker = op.start_blocker(boundary_id)
            if blocker is not None:
                all_started = False
                stopped = None if blocker == WAIT else blocker
                continue
        child = op.execute(child_name, str(step.get("template")), step.get("arguments"), boundary_id)
        if child is None:
            all_started = False
            continue
        by_child[child["id"]] = step
        op.add_child(group, child)
    children = [op.nodes[c] for c in group.get("children") or []]
    if not all(fulfilled(c) for c in children):
        return group
    if not all_started:
        return group if stopped is None else op.mark(group, "Failed", stopped)
    for child in children:
        step = by_child.get(child["id"], {})
        if child["phase"] in ("Failed", "Error") and not continues_on(step, child["phase"]):
            return op.mark(group, "Failed", f"child '{child['id']}' failed")
    return op.mark(group, "Succeeded")
