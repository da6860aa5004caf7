"""A small model of how Argo runs DAG templates, to show which path a failure takes in a transpiled workflow.

It follows Argo's documented rules (enhanced depends logic) and its controller's ``assessDAGPhase``: a task
runs when its ``depends`` expression is true once every task it names has finished, and is Omitted otherwise;
a DAG's phase comes from its leaf tasks, where an Omitted leaf inherits the worst phase of the tasks it waited
for. A container fails when the test says so or when its command ends in ``exit 1`` (our fail terminals).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_OPERAND = re.compile(r"([A-Za-z0-9][-A-Za-z0-9]*)\.(Succeeded|Failed|Errored|Skipped|Omitted|Daemoned)")
_RESULT_PHASE = {"Succeeded": "Succeeded", "Failed": "Failed", "Errored": "Error", "Omitted": "Omitted"}


@dataclass
class Run:
    phase: str = ""
    containers: list[str] = field(default_factory=list)


def run_workflow(workflow: dict[str, Any], failing: set[str] | None = None) -> Run:
    """Run the workflow's entrypoint; ``failing`` names the container templates whose pods exit non-zero."""
    templates = {template["name"]: template for template in workflow["spec"]["templates"]}
    arguments = {p["name"]: p["value"] for p in workflow["spec"].get("arguments", {}).get("parameters", [])}
    run = Run()
    run.phase = _run_template(templates, workflow["spec"]["entrypoint"], arguments, failing or set(), run)
    return run


def _run_template(templates: dict, name: str, arguments: dict[str, str], failing: set[str], run: Run) -> str:
    template = templates[name]
    if "container" in template:
        run.containers.append(name)
        exits_non_zero = template["container"]["command"][-1].endswith("exit 1")
        return "Failed" if name in failing or exits_non_zero else "Succeeded"
    tasks = {task["name"]: task for task in template["dag"]["tasks"]}
    phases: dict[str, str] = {}
    while len(phases) < len(tasks):
        ready = [
            task
            for task in tasks.values()
            if task["name"] not in phases and all(dep in phases for dep in _dependencies(task))
        ]
        assert ready, f"DAG {name} is stuck"
        for task in ready:
            if "depends" in task and not _evaluate(task["depends"], phases):
                phases[task["name"]] = "Omitted"
                continue
            phases[task["name"]] = _run_task(templates, task, arguments, failing, run)
    return _dag_phase(tasks, phases)


def _run_task(templates: dict, task: dict, arguments: dict[str, str], failing: set[str], run: Run) -> str:
    if "withParam" in task:
        parameter = re.fullmatch(r"\{\{workflow\.parameters\.(.+)\}\}", task["withParam"])
        assert parameter, task["withParam"]
        items = json.loads(arguments[parameter.group(1)])
    elif "withItems" in task:
        items = task["withItems"]
    else:
        items = [None]
    phases = [_run_template(templates, task["template"], arguments, failing, run) for _ in items]
    return "Failed" if "Failed" in phases else "Succeeded"


def _dependencies(task: dict) -> set[str]:
    return {match.group(1) for match in _OPERAND.finditer(task.get("depends", ""))}


def _evaluate(expression: str, phases: dict[str, str]) -> bool:
    def truth(match: re.Match[str]) -> str:
        return str(phases[match.group(1)] == _RESULT_PHASE[match.group(2)])

    python = (
        _OPERAND.sub(truth, expression).replace("||", " or ").replace("&&", " and ").replace("!", " not ")
    )
    assert re.fullmatch(r"[\sA-Za-z()]*", python), python
    return bool(eval(python))  # noqa: S307 - only True/False/and/or/not survive the assertion above


def _dag_phase(tasks: dict[str, dict], phases: dict[str, str]) -> str:
    dependants = {dep for task in tasks.values() for dep in _dependencies(task)}
    leaves = [name for name in tasks if name not in dependants]

    def branch_phase(name: str) -> str:
        if phases[name] != "Omitted":
            return phases[name]
        inherited = [branch_phase(dep) for dep in _dependencies(tasks[name])]
        return "Failed" if any(phase in ("Failed", "Error") for phase in inherited) else "Succeeded"

    return "Failed" if any(branch_phase(leaf) in ("Failed", "Error") for leaf in leaves) else "Succeeded"
