"""One pass of the simulated Argo controller over a Workflow: walk its templates from the entrypoint, create
the pods that may start, read the pods that finished, and compute the new `status` (pure apart from the
`log_text` and `Scripting` it is handed).

Like Argo's operator, every pass starts again at the root and re-executes each template node: finished
nodes return at once, running ones look at their pod or children. Node names, ids, display names, types,
phases, children, boundaries and outputs follow Argo (see names.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubesim.argo import dag, steps
from kubesim.argo.names import attempt_name, pod_name
from kubesim.argo.nodes import NodeBook, Walker
from kubesim.argo.phases import (
    ERROR,
    FAILED,
    OMITTED,
    PENDING,
    RUNNING,
    SKIPPED,
    SUCCEEDED,
    UNSUCCESSFUL,
    WAIT,
    fulfilled,
)
from kubesim.argo.pods import (
    COMPLETED_LABEL,
    collect_outputs,
    main_exit,
    pod_manifest,
    pod_outcome,
    running_sidecars,
)
from kubesim.argo.scripting import NodeContext, Scripting
from kubesim.argo.values import (
    WorkflowError,
    backoff_seconds,
    input_artifact_scope,
    parse_duration,
    resolve_input_artifacts,
    resolve_inputs,
    retries,
    substitute,
)
from kubesim.clock import format_timestamp, parse_timestamp
from kubesim.jsonutil import clone

PHASE_LABEL = "workflows.argoproj.io/phase"
WORKFLOW_COMPLETED_LABEL = "workflows.argoproj.io/completed"
_LEAF_KINDS = ("container", "script")
_UNSUPPORTED_KINDS = ("resource", "data", "http", "plugin", "containerSet")


def template_kind(template: dict[str, Any]) -> str:
    for kind in ("container", "script", "steps", "dag", "suspend", *_UNSUPPORTED_KINDS):
        if kind in template:
            return kind
    return ""


@dataclass
class Outcome:
    """What a pass decided: the new workflow, pods to create (by node id), follow-ups for the controller."""

    workflow: dict[str, Any]
    create: dict[str, dict[str, Any]] = field(default_factory=dict)
    completed_pods: list[str] = field(default_factory=list)  # pods to label completed=true
    containers_to_stop: dict[str, list[str]] = field(default_factory=dict)  # pod name → containers
    requeue_after: float | None = None


@dataclass(frozen=True)
class _Run:
    """A node's run of a template once `execute` resolved it: the node's name, the template with its inputs
    substituted, the template's name, the boundary the node is in, and the input parameters."""

    name: str
    template: dict[str, Any]
    template_name: str
    boundary_id: str
    inputs: list[dict[str, Any]]


class Operation(Walker):
    """One pass over one Workflow; node bookkeeping is NodeBook's, the walk over templates is here."""

    def __init__(
        self,
        workflow: dict[str, Any],
        pods: dict[str, dict[str, Any]],
        *,
        now: float,
        log_text: Callable[[str, str], str],
        scripting: Scripting,
    ) -> None:
        metadata = workflow["metadata"]
        self.workflow = {  # the spec is only read; status and labels are rewritten
            **workflow,
            "metadata": {**metadata, "labels": dict(metadata.get("labels") or {})},
            "status": clone(workflow.get("status") or {}),
        }
        self.name: str = self.workflow["metadata"]["name"]
        self.namespace: str = self.workflow["metadata"].get("namespace", "")
        self.spec: dict[str, Any] = self.workflow.get("spec") or {}
        self.status: dict[str, Any] = self.workflow.setdefault("status", {})
        self.nodes: dict[str, dict[str, Any]] = self.status.setdefault("nodes", {})
        self.templates = {t.get("name"): t for t in self.spec.get("templates") or [] if isinstance(t, dict)}
        self.pods = pods  # by node id
        self.now = now
        self.timestamp = format_timestamp(datetime.fromtimestamp(now, UTC))
        self.log_text = log_text
        self.scripting = scripting
        self.outcome = Outcome(self.workflow)
        self.scope = self._global_scope()
        NodeBook.__init__(self, self.name, self.nodes, self.timestamp)

    # --- the workflow --------------------------------------------------------------------------------

    def operate(self) -> Outcome:
        phase = self.status.get("phase")
        if phase in (SUCCEEDED, FAILED, ERROR):
            self._collect_follow_ups()
            return self.outcome
        if not phase:
            self._begin()
            if self.status.get("phase") == ERROR:
                return self.outcome
        shutdown = self.spec.get("shutdown")
        if shutdown:
            self._shut_down(str(shutdown))
        root = self.execute(self.name, str(self.spec.get("entrypoint", "")), self.spec.get("arguments"), "")
        if fulfilled(root) and self.spec.get("onExit") and shutdown != "Terminate":
            assert root is not None
            self.scope["workflow.status"] = _workflow_phase(root)
            self.scope["workflow.failures"] = json.dumps(self._failures())
            exit_node = self.execute(f"{self.name}.onExit", str(self.spec["onExit"]), None, "")
            if not fulfilled(exit_node):
                root = None
            elif exit_node is not None and exit_node["phase"] in UNSUCCESSFUL and root["phase"] == SUCCEEDED:
                root = {**root, "phase": FAILED, "message": exit_node.get("message") or "exit handler failed"}
        if fulfilled(root):
            assert root is not None
            self._finish(_workflow_phase(root), root.get("message", ""))
        self._summarize()
        self._collect_follow_ups()
        return self.outcome

    def _global_scope(self) -> dict[str, str]:
        metadata = self.workflow["metadata"]
        scope = {
            "workflow.name": self.name,
            "workflow.namespace": self.namespace,
            "workflow.uid": metadata.get("uid", ""),
            "workflow.serviceAccountName": str(self.spec.get("serviceAccountName", "")),
            "workflow.creationTimestamp": metadata.get("creationTimestamp", ""),
        }
        for parameter in (self.spec.get("arguments") or {}).get("parameters") or []:
            if isinstance(parameter, dict) and "value" in parameter:
                scope[f"workflow.parameters.{parameter['name']}"] = str(parameter["value"])
        return scope

    def _begin(self) -> None:
        self.status.update(phase=RUNNING, startedAt=self.timestamp, finishedAt=None, progress="0/0")
        problem = self._validate()
        if problem:
            self._finish(ERROR, f"invalid spec: {problem}")

    def _validate(self) -> str | None:
        if self.spec.get("workflowTemplateRef"):
            return "kubesim does not simulate workflowTemplateRef"
        entrypoint = self.spec.get("entrypoint")
        if not entrypoint:
            return "spec.entrypoint is required"
        names = [("spec.entrypoint", entrypoint)]
        if self.spec.get("onExit"):
            names.append(("spec.onExit", self.spec["onExit"]))
        for template in self.templates.values():
            for index, group in enumerate(template.get("steps") or []):
                for step in group if isinstance(group, list) else []:
                    names.append(
                        (
                            f"templates.{template['name']}.steps[{index}].{step.get('name')}",
                            step.get("template"),
                        )
                    )
            for task in (template.get("dag") or {}).get("tasks") or []:
                names.append((f"templates.{template['name']}.tasks.{task.get('name')}", task.get("template")))
        for where, name in names:
            if name not in self.templates:
                return f"{where} template name '{name}' undefined"
            kind = template_kind(self.templates[name])
            if kind in _UNSUPPORTED_KINDS or not kind:
                return f"templates.{name}: kubesim does not simulate {kind or 'this'} templates"
        return None

    def _shut_down(self, strategy: str) -> None:
        """Stop/Terminate: running pods are stopped and their nodes fail; no new nodes start."""
        message = f"Stopped with strategy '{strategy}'"
        for node in self.nodes.values():
            if node["type"] == "Pod" and not fulfilled(node):
                self.mark(node, FAILED, message)
                pod = self.pods.get(node["id"])
                if pod is not None and main_exit(pod) is None:
                    self.outcome.containers_to_stop[pod["metadata"]["name"]] = ["main"]
        self.scope["__shutdown__"] = message

    def _finish(self, phase: str, message: str) -> None:
        self.status.update(phase=phase, finishedAt=self.timestamp)
        if message:
            self.status["message"] = message
        labels = self.workflow["metadata"].setdefault("labels", {})
        labels[WORKFLOW_COMPLETED_LABEL] = "true"

    def _failures(self) -> list[dict[str, Any]]:
        return [
            {
                "displayName": n["displayName"],
                "message": n.get("message", ""),
                "templateName": n.get("templateName", ""),
                "phase": n["phase"],
                "podName": n.get("podName", ""),
                "finishedAt": n.get("finishedAt"),
            }
            for n in self.nodes.values()
            if n["type"] == "Pod" and n["phase"] in UNSUCCESSFUL
        ]

    def _summarize(self) -> None:
        pods = [n for n in self.nodes.values() if n["type"] == "Pod"]
        self.status["progress"] = f"{sum(n['phase'] == SUCCEEDED for n in pods)}/{len(pods)}"
        for identifier, progress in progress_by_node(self.nodes).items():
            self.nodes[identifier]["progress"] = progress
        conditions = [
            {"type": "PodRunning", "status": "True" if any(n["phase"] == RUNNING for n in pods) else "False"}
        ]
        if self.status.get("phase") in (SUCCEEDED, FAILED, ERROR):
            conditions = [{"type": "PodRunning", "status": "False"}, {"type": "Completed", "status": "True"}]
        self.status["conditions"] = conditions
        labels = self.workflow["metadata"].setdefault("labels", {})
        labels[PHASE_LABEL] = self.status.get("phase", RUNNING)
        labels.setdefault(WORKFLOW_COMPLETED_LABEL, "false")

    def _collect_follow_ups(self) -> None:
        for node_key, pod in self.pods.items():
            node = self.nodes.get(node_key)
            labels = pod["metadata"].get("labels") or {}
            if fulfilled(node) and labels.get(COMPLETED_LABEL) != "true":
                self.outcome.completed_pods.append(pod["metadata"]["name"])
            if main_exit(pod) is not None and running_sidecars(pod):
                self.outcome.containers_to_stop[pod["metadata"]["name"]] = running_sidecars(pod)

    def requeue(self, seconds: float) -> None:
        current = self.outcome.requeue_after
        self.outcome.requeue_after = seconds if current is None else min(current, seconds)

    def start_blocker(self, boundary_id: str) -> str | None:
        """Why no new child may start in this boundary now: None (it may), WAIT (parallelism), or the
        message a group ends with because nothing will start any more (failFast, shutdown)."""
        if "__shutdown__" in self.scope:
            return self.scope["__shutdown__"]
        boundary = self.nodes.get(boundary_id)
        template = self.templates.get(boundary["templateName"]) if boundary else None
        if template is None:
            return None
        if template.get("failFast") is True and self.unsuccessful_in(boundary_id):
            return "template has failed or errored children and failFast enabled"
        limit = template.get("parallelism")
        if limit is not None and self.active_in(boundary_id) >= int(limit):
            return WAIT
        return None

    # --- templates -----------------------------------------------------------------------------------

    def execute(
        self,
        name: str,
        template_name: str,
        arguments: dict[str, Any] | None,
        boundary_id: str,
        *,
        attempt: int | None = None,
    ) -> dict[str, Any] | None:
        """Run (or look at) the node `name` for `template_name`; None when it may not start yet."""
        existing = self.node(name)
        if fulfilled(existing):
            return existing
        template = self.templates[template_name]
        kind = template_kind(template)
        node_kind = {
            "container": "Pod",
            "script": "Pod",
            "steps": "Steps",
            "dag": "DAG",
            "suspend": "Suspend",
        }[kind]
        try:
            inputs = resolve_inputs(template, arguments)
            artifacts = resolve_input_artifacts(template, arguments)
        except WorkflowError as error:
            return existing or self.init_node(name, node_kind, template_name, boundary_id, ERROR, str(error))
        scope = {**self.scope, **{f"inputs.parameters.{p['name']}": p["value"] for p in inputs}}
        scope.update(input_artifact_scope(artifacts))
        if kind in _LEAF_KINDS:
            scope["pod.name"] = pod_name(self.name, name, template_name)
        if attempt is not None:
            scope["retries"] = str(attempt)
        resolved = substitute(template, scope)
        if artifacts:
            resolved["inputs"] = {**(resolved.get("inputs") or {}), "artifacts": artifacts}
        run = _Run(name, resolved, template_name, boundary_id, inputs)
        if resolved.get("retryStrategy") and attempt is None:
            return self._execute_retry(run, arguments)
        if existing is None and "__shutdown__" in self.scope:
            return None
        if kind in _LEAF_KINDS:
            return self._execute_pod(run, attempt or 0)
        if kind == "suspend":
            return self._execute_suspend(run)
        node = existing or self._start(run, node_kind, RUNNING)
        if kind == "steps":
            return steps.execute_steps(self, node, resolved, scope)
        return dag.execute_dag(self, node, resolved, scope)

    def _start(self, run: _Run, node_kind: str, phase: str) -> dict[str, Any]:
        """The run's node, new in `phase`."""
        return self.init_node(
            run.name, node_kind, run.template_name, run.boundary_id, phase, inputs=run.inputs
        )

    def _execute_pod(self, run: _Run, attempt: int) -> dict[str, Any] | None:
        template = run.template
        node = self.node(run.name)
        if node is None:
            limit = self.spec.get("parallelism")
            active = sum(1 for n in self.nodes.values() if n["type"] == "Pod" and not fulfilled(n))
            if limit is not None and active >= int(limit):
                return None
            node = self._start(run, "Pod", PENDING)
            if (template.get("inputs") or {}).get("artifacts"):
                node.setdefault("inputs", {})["artifacts"] = template["inputs"]["artifacts"]
            self._create_pod(node, run, attempt)
            return node
        pod = self.pods.get(node["id"])
        if pod is None:
            if node["id"] not in self.outcome.create:
                self.mark(node, ERROR, "pod deleted")
            return node
        node["hostNodeName"] = (pod.get("spec") or {}).get("nodeName", "")
        phase, message = pod_outcome(pod)
        if phase in (SUCCEEDED, FAILED):
            pod_key = pod["metadata"]["name"]
            outputs, problem = collect_outputs(template, pod, self.log_text(pod_key, "main"), self.name)
            if outputs:
                node["outputs"] = outputs
            if problem and phase == SUCCEEDED:
                phase, message = ERROR, problem
        return self.mark(node, phase, message)

    def _create_pod(self, node: dict[str, Any], run: _Run, attempt: int) -> None:
        name = node["name"]
        context = NodeContext(
            workflow=self.name,
            namespace=self.namespace,
            node_name=name,
            display_name=node["displayName"],
            template=run.template_name,
            inputs={p["name"]: p["value"] for p in run.inputs},
            attempt=attempt,
        )
        try:
            annotations = self.scripting.annotations(context)
        except ValueError as error:
            self.mark(node, ERROR, str(error))
            return
        manifest = pod_manifest(
            self.workflow,
            run.template,
            name=pod_name(self.name, name, run.template_name),
            node_name=name,
            node_id=node["id"],
            annotations=annotations,
        )
        node["podName"] = manifest["metadata"]["name"]
        self.outcome.create[node["id"]] = manifest

    def _execute_suspend(self, run: _Run) -> dict[str, Any]:
        node = self.node(run.name) or self._start(run, "Suspend", RUNNING)
        duration = (run.template.get("suspend") or {}).get("duration")
        if duration is None:
            return node
        remaining = parse_timestamp(node["startedAt"]).timestamp() + parse_duration(str(duration)) - self.now
        if remaining <= 0:
            return self.mark(node, SUCCEEDED)
        self.requeue(remaining)
        return node

    def _execute_retry(self, run: _Run, arguments: dict[str, Any] | None) -> dict[str, Any] | None:
        """The Retry node: each attempt executes the template again, with the arguments the node was given."""
        name, template_name, boundary_id = run.name, run.template_name, run.boundary_id
        strategy = run.template["retryStrategy"]
        node = self.node(name)
        if node is None:
            if boundary_id and self.start_blocker(boundary_id) is not None:
                return None
            node = self._start(run, "Retry", RUNNING)
        attempts = [self.nodes[c] for c in node.get("children") or []]
        if attempts and not fulfilled(attempts[-1]):
            self.execute(
                attempts[-1]["name"], template_name, arguments, boundary_id, attempt=len(attempts) - 1
            )
        if attempts and fulfilled(attempts[-1]):
            last = attempts[-1]
            if last["phase"] == SUCCEEDED:
                if last.get("outputs"):
                    node["outputs"] = last["outputs"]
                return self.mark(node, SUCCEEDED)
            limit = strategy.get("limit")
            exhausted = limit is not None and len(attempts) > int(str(limit))
            if exhausted or not retries(strategy.get("retryPolicy") or "OnFailure", last["phase"]):
                if last.get("outputs"):
                    node["outputs"] = last["outputs"]
                message = "No more retries left" if exhausted else last.get("message", "")
                return self.mark(node, last["phase"], message)
            wait = backoff_seconds(strategy.get("backoff") or {}, len(attempts))
            ready_at = parse_timestamp(last["finishedAt"]).timestamp() + wait
            if ready_at > self.now:
                self.requeue(ready_at - self.now)
                return node
        if not attempts or fulfilled(attempts[-1]):
            index = len(attempts)
            child = self.execute(
                attempt_name(name, index), template_name, arguments, boundary_id, attempt=index
            )
            if child is not None:
                self.add_child(node, child)
        return node


def _workflow_phase(root: dict[str, Any]) -> str:
    return {SKIPPED: SUCCEEDED, OMITTED: SUCCEEDED}.get(root["phase"], root["phase"])


def progress_by_node(nodes: dict[str, dict[str, Any]]) -> dict[str, str]:
    """`done/total` pods under each node: a pod counts for itself and every boundary around it."""
    counts: dict[str, list[int]] = {}
    for node in nodes.values():
        if node["type"] != "Pod":
            continue
        done = int(node["phase"] == SUCCEEDED)
        around, current = [node["id"]], node.get("boundaryID")
        while current and current not in around:
            around.append(current)
            current = nodes.get(current, {}).get("boundaryID")
        for identifier in around:
            entry = counts.setdefault(identifier, [0, 0])
            entry[0] += done
            entry[1] += 1
    return {identifier: f"{done}/{total}" for identifier, (done, total) in counts.items()}
