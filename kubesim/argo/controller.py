"""The simulated Argo workflow-controller: reacts to Workflows and their pods, runs `Operation` passes, and
does the I/O they ask for (create pods, write status and labels, label finished pods, stop sidecars, pod
GC, TTL). Pods are run by the simulated kubelet; time-based waits are clock timers.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

from kubesim.argo.crd import WORKFLOWS, install_crds
from kubesim.argo.operation import Operation, Outcome
from kubesim.argo.phases import ERROR, FULFILLED, SUCCEEDED
from kubesim.argo.pods import COMPLETED_LABEL, NODE_ID_ANNOTATION, WORKFLOW_LABEL
from kubesim.argo.scripting import Answer, NodeRule, Scripting
from kubesim.clock import Timer, parse_timestamp
from kubesim.errors import ApiError
from kubesim.kubelet import Kubelet
from kubesim.selectors import EVERYTHING, parse_label_selector
from kubesim.store import DELETED, Store, Subscriptions

log = logging.getLogger(__name__)

_SIGTERM_EXIT = 143  # how Argo's stopped containers (sidecars, shut-down pods) exit


class ArgoController:
    """Runs every Workflow in the store. `script(...)` scripts what nodes do (see scripting.py)."""

    def __init__(self, store: Store, kubelet: Kubelet) -> None:
        self.store = store
        self.kubelet = kubelet
        self.scripting = Scripting()
        self._lock = threading.RLock()
        self._timers: dict[tuple[str, str], Timer] = {}
        self._written: dict[tuple[str, str], str] = {}  # resourceVersion of our last status write
        self._pod_states: dict[str, tuple[Any, str]] = {}  # pod uid → (phase, container states) seen
        self._subscriptions = Subscriptions()

    def start(self) -> None:
        install_crds(self.store)
        self._workflows = self.store.resource(WORKFLOWS)
        self._pods = self.store.resource("pods")
        self._subscriptions = self.store.list_then_watch(
            (WORKFLOWS, self._on_workflow), ("pods", self._on_pod)
        )

    def stop(self) -> None:
        self._subscriptions.cancel()
        with self._lock:
            for timer in self._timers.values():
                timer.cancel()
            self._timers.clear()

    def script(
        self,
        template: str | None = None,
        *,
        workflow: str | None = None,
        display_name: str | None = None,
        run: Answer = None,
        parameters: Answer = None,
        artifacts: Answer = None,
    ) -> Callable[[], None]:
        """Script the nodes created from now on that match; newer rules win; returns a remover.

        `run` is the main container's behaviour in the kubelet's format ({"duration": 5, "exitCode": 1,
        "output": [...]}), a list of them (one per retry attempt) or a callable of NodeContext;
        `parameters` ({"loss": "0.1"}) and `artifacts` ({"model": {"s3": {"key": "m.tgz"}}}) likewise.
        """
        rule = NodeRule(template, workflow, display_name, run, parameters, artifacts)
        return self.scripting.add(rule)

    # --- events --------------------------------------------------------------------------------------

    def _on_workflow(self, event_type: str, workflow: dict[str, Any]) -> None:
        metadata = workflow["metadata"]
        key = (metadata.get("namespace", ""), metadata["name"])
        if event_type == DELETED:
            with self._lock:
                timer = self._timers.pop(key, None)
                self._written.pop(key, None)
            if timer is not None:
                timer.cancel()
            return
        if self._written.get(key) == metadata.get("resourceVersion"):
            return  # our own status write: nothing new to react to
        self.reconcile(*key)

    def _on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        """React when a workflow pod appears, goes, or its phase or main container state changes."""
        metadata = pod["metadata"]
        owner = (metadata.get("labels") or {}).get(WORKFLOW_LABEL)
        if not owner:
            return
        status = pod.get("status") or {}
        states = [(c.get("name"), list(c.get("state") or {})) for c in status.get("containerStatuses") or []]
        seen = (status.get("phase"), str(states))
        with self._lock:
            if event_type == DELETED:
                self._pod_states.pop(metadata["uid"], None)
            elif self._pod_states.get(metadata["uid"]) == seen:
                return
            else:
                self._pod_states[metadata["uid"]] = seen
        self.reconcile(metadata.get("namespace", ""), owner)

    # --- one pass ------------------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> None:
        with self._lock:
            try:
                workflow = self.store.get_snapshot(self._workflows, name, namespace)
            except ApiError:
                return
            if workflow["metadata"].get("deletionTimestamp"):
                return
            uid = workflow["metadata"]["uid"]
            pods = {}
            selector = parse_label_selector(f"{WORKFLOW_LABEL}={name}")
            for pod in self.store.list_page(self._pods, namespace, selector, EVERYTHING).items:
                owners = pod["metadata"].get("ownerReferences") or []
                node = (pod["metadata"].get("annotations") or {}).get(NODE_ID_ANNOTATION)
                if node and any(ref.get("uid") == uid for ref in owners):
                    pods[node] = pod
            operation = Operation(
                workflow,
                pods,
                now=self.store.clock.time(),
                log_text=lambda pod_name, container: self.kubelet.logs.text(namespace, pod_name, container),
                scripting=self.scripting,
            )
            outcome = operation.operate()
            self._create_pods(outcome, namespace)
            if outcome.workflow.get("status") != workflow.get("status") or outcome.workflow["metadata"].get(
                "labels"
            ) != workflow["metadata"].get("labels"):
                self._write(namespace, name, uid, outcome.workflow)
            self._follow_up(namespace, name, outcome, workflow, pods)

    def _create_pods(self, outcome: Outcome, namespace: str) -> None:
        nodes = outcome.workflow["status"].get("nodes") or {}
        for identifier, manifest in outcome.create.items():
            try:
                self.store.create(manifest, namespace)
            except ApiError as error:
                if error.code == 409:
                    continue
                node = nodes.get(identifier)
                if node is not None:
                    node.update(phase=ERROR, message=error.message, finishedAt=node.get("startedAt"))

    def _write(self, namespace: str, name: str, uid: str, computed: dict[str, Any]) -> None:
        def change(current: dict[str, Any]) -> dict[str, Any] | None:
            if current["metadata"]["uid"] != uid:
                return None
            current["status"] = computed["status"]
            labels = current["metadata"].setdefault("labels", {})
            labels.update(computed["metadata"].get("labels") or {})
            return current

        try:
            written = self.store.mutate(
                WORKFLOWS, name, change, namespace=namespace, field_manager="workflow-controller"
            )
            self._written[(namespace, name)] = written["metadata"]["resourceVersion"]
        except ApiError as error:
            log.debug("kubesim argo: status of %s/%s not written: %s", namespace, name, error)

    def _follow_up(
        self,
        namespace: str,
        name: str,
        outcome: Outcome,
        workflow: dict[str, Any],
        pods: dict[str, dict[str, Any]],
    ) -> None:
        for pod_name in outcome.completed_pods:
            completed = {"metadata": {"labels": {COMPLETED_LABEL: "true"}}}
            self._quietly(
                functools.partial(self.store.patch, "pods", pod_name, completed, namespace=namespace)
            )
        for pod_name, containers in outcome.containers_to_stop.items():
            for container in containers:
                with contextlib.suppress(LookupError):
                    self.kubelet.exit(namespace, pod_name, container, _SIGTERM_EXIT)
        self._collect_pods(namespace, outcome, workflow, pods)
        due = self._ttl_due(outcome.workflow)
        delay = outcome.requeue_after
        if due is not None:
            remaining = due - self.store.clock.time()
            if remaining <= 0:
                self._quietly(lambda: self.store.delete(WORKFLOWS, name, namespace))
                return
            delay = remaining if delay is None else min(delay, remaining)
        if delay is not None:
            self._requeue(namespace, name, delay)

    def _collect_pods(
        self, namespace: str, outcome: Outcome, workflow: dict[str, Any], pods: dict[str, dict[str, Any]]
    ) -> None:
        """spec.podGC: delete pods of finished nodes (OnPodCompletion/OnPodSuccess) or of a finished
        workflow (OnWorkflowCompletion/OnWorkflowSuccess)."""
        strategy = ((workflow.get("spec") or {}).get("podGC") or {}).get("strategy")
        if not strategy:
            return
        status = outcome.workflow["status"]
        nodes = status.get("nodes") or {}
        workflow_phase = status.get("phase")
        for identifier, pod in pods.items():
            phase = (nodes.get(identifier) or {}).get("phase")
            doomed = {
                "OnPodCompletion": phase in FULFILLED,
                "OnPodSuccess": phase == SUCCEEDED,
                "OnWorkflowCompletion": workflow_phase in FULFILLED,
                "OnWorkflowSuccess": workflow_phase == SUCCEEDED,
            }.get(str(strategy), False)
            if doomed:
                self._quietly(
                    functools.partial(self.store.delete, "pods", pod["metadata"]["name"], namespace)
                )

    def _ttl_due(self, workflow: dict[str, Any]) -> float | None:
        ttl = (workflow.get("spec") or {}).get("ttlStrategy") or {}
        status = workflow.get("status") or {}
        finished = status.get("finishedAt")
        if not ttl or not finished:
            return None
        seconds = ttl.get(
            "secondsAfterSuccess" if status.get("phase") == SUCCEEDED else "secondsAfterFailure"
        )
        if seconds is None:
            seconds = ttl.get("secondsAfterCompletion")
        return None if seconds is None else parse_timestamp(finished).timestamp() + float(seconds)

    def _requeue(self, namespace: str, name: str, delay: float) -> None:
        key = (namespace, name)
        previous = self._timers.pop(key, None)
        if previous is not None:
            previous.cancel()
        self._timers[key] = self.store.clock.call_later(delay, lambda: self.reconcile(namespace, name))

    def _quietly(self, action: Callable[[], Any]) -> None:
        try:
            action()
        except ApiError as error:
            log.debug("kubesim argo: %s", error)
