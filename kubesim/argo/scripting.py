"""Scripting what Argo nodes do: the main container's run and the node's output parameters and artifacts.

A rule matches nodes by template name, workflow name prefix and display-name prefix. When the controller
creates a node's pod it writes the rule's answers into two pod annotations, which a template may also set
itself through `metadata.annotations` (with `{{inputs.parameters.x}}` substituted):

    kubesim.argoml.io/script:  {"main": {"duration": 30, "exitCode": 0, "output": ["loss=0.1"]}}
    kubesim.argoml.io/outputs: {"parameters": {"loss": "0.1"}, "artifacts": {"m": {"s3": {"key": "m.tgz"}}}}
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesim.kubelet.script import OUTPUTS_ANNOTATION, SCRIPT_ANNOTATION, ScriptError, parse_container_script


@dataclass(frozen=True)
class NodeContext:
    """What a rule's callables are told about the node whose pod is being created."""

    workflow: str
    namespace: str
    node_name: str
    display_name: str
    template: str
    inputs: Mapping[str, str]
    attempt: int  # retry attempt (0 for the first run or a node without retryStrategy)


Answer = Any  # a value, or a callable NodeContext -> value


def _answer(value: Answer, context: NodeContext) -> Any:
    return value(context) if callable(value) else value


@dataclass(frozen=True)
class NodeRule:
    template: str | None = None
    workflow: str | None = None  # workflow name prefix
    display_name: str | None = None  # node display-name prefix, e.g. "trial(3:"
    run: Answer = None  # main container behaviour: a dict, a list (one per retry attempt) or a callable
    parameters: Answer = None  # {"loss": "0.1"} or a callable
    artifacts: Answer = None  # {"model": {"s3": {"key": "..."}}} or a callable

    def matches(self, context: NodeContext) -> bool:
        return (
            (self.template is None or self.template == context.template)
            and (self.workflow is None or context.workflow.startswith(self.workflow))
            and (self.display_name is None or context.display_name.startswith(self.display_name))
        )

    def annotations(self, context: NodeContext) -> dict[str, str]:
        found: dict[str, str] = {}
        run = _answer(self.run, context)
        if isinstance(run, list) and run:
            run = run[min(context.attempt, len(run) - 1)]
        if run is not None:
            try:
                parse_container_script(run, "run")
            except ScriptError as error:
                raise ValueError(f"argo rule for template {self.template!r}: {error}") from None
            found[SCRIPT_ANNOTATION] = json.dumps({"main": run})
        outputs: dict[str, Any] = {}
        parameters = _answer(self.parameters, context)
        if parameters is not None:
            outputs["parameters"] = {str(k): str(v) for k, v in dict(parameters).items()}
        artifacts = _answer(self.artifacts, context)
        if artifacts is not None:
            outputs["artifacts"] = dict(artifacts)
        if outputs:
            found[OUTPUTS_ANNOTATION] = json.dumps(outputs)
        return found


class Scripting:
    """The rules, newest first; the first matching rule that answers a question wins."""

    def __init__(self) -> None:
        self._rules: list[NodeRule] = []

    def add(self, rule: NodeRule) -> Callable[[], None]:
        self._rules.insert(0, rule)
        return lambda: self._rules.remove(rule) if rule in self._rules else None

    def annotations(self, context: NodeContext) -> dict[str, str]:
        found: dict[str, str] = {}
        for rule in self._rules:
            if rule.matches(context):
                for key, value in rule.annotations(context).items():
                    found.setdefault(key, value)
        return found


def scripted_outputs(pod: dict[str, Any]) -> dict[str, Any]:
    """The outputs a pod's annotation scripts: {"parameters": {...}, "artifacts": {...}} (empty if none)."""
    text = (pod["metadata"].get("annotations") or {}).get(OUTPUTS_ANNOTATION)
    if not text:
        return {}
    try:
        found = json.loads(text)
    except ValueError as error:
        raise ValueError(f"{OUTPUTS_ANNOTATION}: not valid JSON: {error}") from None
    if not isinstance(found, dict):
        raise ValueError(f"{OUTPUTS_ANNOTATION}: must be an object with parameters and artifacts")
    return found
