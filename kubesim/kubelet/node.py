"""The simulated kubelet: binds every pod to a simulated node and runs its containers on the simulator clock.

A pod goes Pending (bound, ContainerCreating) → after `start_delay` its init containers run one by one, then
its containers run their scripts (kubesim/kubelet/script.py) → each exits with its scripted code and is
restarted in place (restartCount + 1, after a CrashLoopBackOff delay) when the restartPolicy says so →
the pod ends Succeeded or Failed. A deleted pod is stopped (exit 143, or 137 past its grace period) and then
removed. Every step is a clock timer, so tests advance the clock instead of sleeping.
"""

from __future__ import annotations

import functools
import ipaddress
import itertools
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kubesim.clock import Clock, format_timestamp
from kubesim.errors import ApiError, Cause, invalid
from kubesim.jsonutil import clone
from kubesim.kubelet import nodes
from kubesim.kubelet.logs import LogStore
from kubesim.kubelet.script import (
    OUTPUTS_ANNOTATION,
    SCRIPT_ANNOTATION,
    ContainerScript,
    Run,
    Script,
    ScriptError,
    for_container,
    parse_script,
)
from kubesim.kubelet.state import (
    RUNNING,
    TERMINATED,
    WAITING,
    ContainerRun,
    PodRun,
    render_status,
    settled_phase,
    should_restart,
)
from kubesim.selectors import match_labels_selector
from kubesim.store import DELETED, AdmissionRequest, Store, Subscriptions

if TYPE_CHECKING:
    from kubesim.kubelet.process.pods import ProcessPods
    from kubesim.kubelet.process.runtime import ProcessRuntime

log = logging.getLogger(__name__)

SIGTERM_EXIT, SIGKILL_EXIT = 143, 137


@dataclass
class KubeletSettings:
    """Timings of the simulated node; change them on `simulator.kubelet.settings` before creating pods."""

    node_name: str = "kubesim-node"  # the first node; more are named `<node_name>-2`, `-3`…
    node_count: int = 1  # Nodes created at start; unbound pods go to each in turn
    host_ip: str = "172.18.0.2"  # the first node's InternalIP; the next nodes count up from it
    start_delay: float = 1.0  # bound → containers running (image pull, sandbox)
    duration: float = 2.0  # how long an unscripted container runs (restartPolicy Always: until deleted)
    restart_backoff: float = 10.0  # first CrashLoopBackOff delay, doubled per restart
    max_restart_backoff: float = 300.0


@dataclass(frozen=True)
class ScriptRule:
    """Python-API scripting: pods matching namespace, labels and name prefix get `script`."""

    script: Script
    namespace: str | None = None
    labels: Mapping[str, str] | None = None
    name_prefix: str = ""

    def matches(self, pod: dict[str, Any]) -> bool:
        metadata = pod["metadata"]
        if self.namespace is not None and metadata.get("namespace") != self.namespace:
            return False
        if not metadata["name"].startswith(self.name_prefix):
            return False
        return match_labels_selector({"matchLabels": dict(self.labels or {})}).matches(pod)


class Kubelet:
    """One simulated node running every pod of the store. `start()` subscribes; `stop()` ends it."""

    def __init__(self, store: Store, clock: Clock, settings: KubeletSettings | None = None) -> None:
        self.store = store
        self.clock = clock
        self.settings = settings or KubeletSettings()
        self.logs = LogStore()
        self._lock = threading.RLock()
        self._runs: dict[str, PodRun] = {}  # by pod uid
        self._rules: list[ScriptRule] = []
        self._ips = itertools.count(2)
        self._subscriptions = Subscriptions()
        self._remove_admission: Callable[[], None] | None = None
        self._pods = store.resource("pods")
        self._node_ips: dict[str, str] = {}
        self._next_node = itertools.count()
        self.processes: ProcessPods | None = None

    def run_processes(self, runtime: ProcessRuntime) -> None:
        """Run pods' containers as local processes on `runtime` (before `start()`); pods carrying the script
        annotation, or matched by a script rule, keep their scripted behaviour."""
        from kubesim.kubelet.process.pods import ProcessPods

        self.processes = ProcessPods(self, runtime)

    # --- life cycle ----------------------------------------------------------------------------------

    def start(self) -> None:
        self._register_nodes()
        self._remove_admission = self.store.add_admission(self._validate_script)
        self.store.graceful_deletion.add("pods")
        self._subscriptions = self.store.list_then_watch(("pods", self._on_pod), ("nodes", self._on_node))

    def _register_nodes(self) -> None:
        """Create the Ready Nodes (kept if they exist already, as a restarted kubelet finds them)."""
        first = ipaddress.ip_address(self.settings.host_ip)
        names = nodes.node_names(self.settings.node_name, self.settings.node_count)
        self._node_ips = {name: str(first + index) for index, name in enumerate(names)}
        nodes.register(self.store, self._node_ips, self.clock.timestamp())

    def _pick_node(self, spec: dict[str, Any]) -> tuple[str, str] | None:
        """(node name, host IP) of a pod: the node it names, or the next of ours in turn that is not
        cordoned (`spec.unschedulable`, unless the pod tolerates it); None when no node can take it."""
        if spec.get("nodeName"):
            name = str(spec["nodeName"])
            return name, self._node_ips.get(name, self.settings.host_ip)
        names = list(self._node_ips) or [self.settings.node_name]
        if not nodes.tolerates_unschedulable(spec):
            cordoned = nodes.cordoned(self.store)
            names = [name for name in names if name not in cordoned]
        if not names:
            return None
        name = names[next(self._next_node) % len(names)]
        return name, self._node_ips.get(name, self.settings.host_ip)

    def _on_node(self, event_type: str, node: dict[str, Any]) -> None:
        """A node became schedulable (uncordoned, added): the pods no node could take try again."""
        if event_type == DELETED or (node.get("spec") or {}).get("unschedulable"):
            return
        for pod in self.store.list("pods")["items"]:
            if not (pod.get("spec") or {}).get("nodeName") and pod["metadata"]["uid"] not in self._runs:
                self._on_pod("MODIFIED", pod)

    def stop(self) -> None:
        self._subscriptions.cancel()
        if self._remove_admission is not None:
            self._remove_admission()
        with self._lock:
            for run in self._runs.values():
                run.cancel_timers()
        if self.processes is not None:
            self.processes.stop()
        self.logs.close()

    # --- Python API ----------------------------------------------------------------------------------

    def script(
        self,
        behaviour: Mapping[str, Any] | str,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
        name_prefix: str = "",
    ) -> Callable[[], None]:
        """Script the containers of pods created from now on that match; newer rules win. Returns a remover.

        `behaviour` has the annotation's format: {"main": {"duration": 3, "exitCode": 1, "output": [...]}}.
        """
        rule = ScriptRule(
            parse_script(behaviour, "script", self.settings.duration), namespace, labels, name_prefix
        )
        with self._lock:
            self._rules.insert(0, rule)

        def remove() -> None:
            with self._lock:
                if rule in self._rules:
                    self._rules.remove(rule)

        return remove

    def exit(self, namespace: str, pod: str, container: str, exit_code: int = 0, reason: str = "") -> None:
        """End the running container now with `exit_code` (restart policy applies as usual)."""
        with self._lock:
            run = self._run_by_name(namespace, pod)
            found = run.container(container) if run else None
            if run is None or found is None or not found.running:
                raise LookupError(f"no running container {container!r} in pod {namespace}/{pod}")
            self._container_exited(run, found, exit_code, reason, "")

    def evict(self, namespace: str, pod: str, message: str = "The node was low on resource: memory.") -> None:
        """Fail the pod as a node-pressure eviction does: phase Failed, reason Evicted, containers killed."""
        with self._lock:
            run = self._run_by_name(namespace, pod)
            if run is None or run.finished:
                raise LookupError(f"no running pod {namespace}/{pod} on the simulated node")
            self._fail_pod(run, "Evicted", message)

    def _fail_pod(self, run: PodRun, reason: str, message: str) -> None:
        """The node gives up on the pod (eviction, deadline): containers killed, phase Failed."""
        run.cancel_timers()
        if run.process and self.processes is not None:
            self.processes.kill_all(run)
        for container in run.init + run.main:
            if container.running:
                self._stop_container(run, container, SIGKILL_EXIT, "Error")
            container.done = True
        run.phase, run.reason, run.message = "Failed", reason, message
        self._write_status(run)

    def pod_ip(self, namespace: str, pod: str) -> str | None:
        with self._lock:
            run = self._run_by_name(namespace, pod)
            return run.pod_ip if run else None

    # --- events --------------------------------------------------------------------------------------

    def _validate_script(self, request: AdmissionRequest) -> None:
        """Refuse a pod whose script annotation cannot be parsed, naming the field (422)."""
        if request.resource.key != "pods" or request.operation != "CREATE" or request.object is None:
            return None
        text = ((request.object.get("metadata") or {}).get("annotations") or {}).get(SCRIPT_ANNOTATION)
        if text is None:
            return None
        try:
            parse_script(text)
        except ScriptError as error:
            field = f"metadata.annotations[{SCRIPT_ANNOTATION}]"
            raise invalid("Pod", "", request.name, [Cause(field, str(error))]) from None
        return None

    def _on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        metadata = pod["metadata"]
        uid = metadata["uid"]
        with self._lock:
            run = self._runs.get(uid)
            if event_type == DELETED:
                if run is not None:
                    run.cancel_timers()
                    del self._runs[uid]
                    if run.process and self.processes is not None:
                        self.processes.removed(run)
                    self.logs.drop_pod(run.namespace, run.name)
                return
            if run is None:
                if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    return
                if metadata.get("deletionTimestamp"):
                    self._finish_deletion(metadata.get("namespace", ""), metadata["name"], uid)
                    return
                run = self._admit(pod)
                if run is None:
                    return
            if metadata.get("deletionTimestamp") and not run.terminating:
                self._terminate(run, int(metadata.get("deletionGracePeriodSeconds") or 0))

    def _run_by_name(self, namespace: str, name: str) -> PodRun | None:
        return next((r for r in self._runs.values() if r.key == (namespace, name)), None)

    # --- admitting and starting ----------------------------------------------------------------------

    def _scripts_for(self, pod: dict[str, Any]) -> list[Script]:
        scripts: list[Script] = []
        text = (pod["metadata"].get("annotations") or {}).get(SCRIPT_ANNOTATION)
        if text is not None:
            try:
                scripts.append(parse_script(text, default_duration=self.settings.duration))
            except ScriptError:
                log.warning("kubesim kubelet: ignoring the invalid script of pod %s", pod["metadata"]["name"])
        scripts.extend(rule.script for rule in self._rules if rule.matches(pod))
        return scripts

    def _default_script(self, restart_policy: str) -> ContainerScript:
        forever = restart_policy == "Always"
        return ContainerScript((Run(duration=None if forever else self.settings.duration),))

    def _admit(self, pod: dict[str, Any]) -> PodRun | None:
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        restart_policy = spec.get("restartPolicy") or "Always"
        scripts = self._scripts_for(pod)

        def containers(field: str, init: bool) -> list[ContainerRun]:
            found = []
            for container in spec.get(field) or []:
                sidecar = init and container.get("restartPolicy") == "Always"
                policy = "Always" if sidecar else ("Never" if init else restart_policy)
                script = for_container(scripts, container.get("name", "")) or self._default_script(policy)
                found.append(
                    ContainerRun(
                        container.get("name", ""), container.get("image", ""), script, init, sidecar=sidecar
                    )
                )
            return found

        picked = self._pick_node(spec)
        if picked is None:
            nodes.report_unschedulable(self.store, pod, len(self._node_ips) or 1, self.clock.timestamp())
            return None
        node_name, host_ip = picked
        index = next(self._ips)
        annotations = metadata.get("annotations") or {}
        process = (
            self.processes is not None
            and not scripts
            and OUTPUTS_ANNOTATION not in annotations
            and not self.processes.simulates(pod)
        )
        run = PodRun(
            namespace=metadata.get("namespace", ""),
            name=metadata["name"],
            uid=metadata["uid"],
            restart_policy=restart_policy,
            node_name=node_name,
            pod_ip="" if process else f"10.244.{index // 250 % 250}.{index % 250 + 1}",
            host_ip=host_ip,
            start_time=self.clock.timestamp(),
            init=containers("initContainers", True),
            main=containers("containers", False),
            process=process,
            pod=clone(pod) if process else {},
        )
        if run.init:
            for container in run.main:
                container.state = {WAITING: {"reason": "PodInitializing"}}
        self._runs[run.uid] = run
        if not spec.get("nodeName") and not self._bind(run):
            del self._runs[run.uid]
            return None
        self._write_status(run)
        self._later(run, 0.0 if process else self.settings.start_delay, lambda: self._start_pod(run))
        deadline = spec.get("activeDeadlineSeconds")
        if isinstance(deadline, int) and deadline > 0:
            message = "Pod was active on the node longer than the specified deadline"
            self._later(run, float(deadline), lambda: self._fail_pod(run, "DeadlineExceeded", message))
        return run

    def _bind(self, run: PodRun) -> bool:
        def change(pod: dict[str, Any]) -> dict[str, Any] | None:
            if pod["metadata"]["uid"] != run.uid or pod["spec"].get("nodeName"):
                return None
            pod["spec"]["nodeName"] = run.node_name
            return pod

        try:
            self.store.mutate(
                self._pods, run.name, change, namespace=run.namespace, field_manager="kube-scheduler"
            )
        except ApiError as error:
            log.debug("kubesim kubelet: could not bind %s/%s: %s", run.namespace, run.name, error)
            return False
        return True

    def _later(self, run: PodRun, delay: float, action: Callable[[], None]) -> None:
        def fire() -> None:
            with self._lock:
                if self._runs.get(run.uid) is run:
                    action()

        run.timers.append(self.clock.call_later(delay, fire))

    def _start_pod(self, run: PodRun) -> None:
        if run.terminating or run.finished:
            return
        if run.process and not run.pod_ip and self.processes is not None:
            self.processes.start_pod(run)  # comes back here once the sandbox has its IP
            return
        if run.init:
            self._start_container(run, run.init[0])
        else:
            for container in run.main:
                self._start_container(run, container, write=False)
            self._write_status(run)

    def _start_container(self, run: PodRun, container: ContainerRun, *, write: bool = True) -> None:
        if run.process and self.processes is not None:
            self.processes.start_container(run, container)
            self._sidecar_started(run, container)
            run.phase = settled_phase(run)
            if write:
                self._write_status(run)
            return
        behaviour = container.run
        if behaviour.waiting:
            container.state = {WAITING: {"reason": behaviour.waiting}}
        else:
            started = self.clock.time()
            container.state = {RUNNING: {"startedAt": format_timestamp_at(started)}}
            key = (run.namespace, run.name, container.name)
            self.logs.start_run(key)
            self._emit_output(run, container, behaviour, started)
            if behaviour.duration is not None:
                restarts = container.restarts
                self._later(
                    run,
                    behaviour.duration,
                    lambda: self._scripted_exit(run, container, restarts),
                )
        self._sidecar_started(run, container)
        run.phase = settled_phase(run)
        if write:
            self._write_status(run)

    def _emit_output(self, run: PodRun, container: ContainerRun, behaviour: Run, started: float) -> None:
        key = (run.namespace, run.name, container.name)
        lines = behaviour.output
        spacing = (behaviour.duration or 0.0) / len(lines) if lines else 0.0
        restarts = container.restarts
        for index, line in enumerate(lines):
            if index == 0 or spacing == 0:
                self.logs.append(key, started, line)
                continue

            def emit(text: str = line, at: float = started + index * spacing) -> None:
                if container.restarts == restarts and container.running:
                    self.logs.append(key, at, text)

            self._later(run, index * spacing, emit)

    def _scripted_exit(self, run: PodRun, container: ContainerRun, restarts: int) -> None:
        if container.restarts != restarts or not container.running:
            return
        behaviour = container.run
        self._container_exited(run, container, behaviour.exit_code, behaviour.reason, behaviour.message)

    # --- exits and restarts --------------------------------------------------------------------------

    def _stop_container(
        self, run: PodRun, container: ContainerRun, exit_code: int, reason: str, message: str = ""
    ) -> None:
        started = container.state.get(RUNNING, {}).get("startedAt")
        terminated: dict[str, Any] = {
            "exitCode": exit_code,
            "reason": reason or ("Completed" if exit_code == 0 else "Error"),
            "startedAt": started,
            "finishedAt": self.clock.timestamp(),
            "containerID": container.container_id(run.uid),
        }
        if message:
            terminated["message"] = message
        container.state = {TERMINATED: terminated}
        self.logs.finish_run((run.namespace, run.name, container.name))

    def _container_exited(
        self, run: PodRun, container: ContainerRun, exit_code: int, reason: str, message: str
    ) -> None:
        self._stop_container(run, container, exit_code, reason, message)
        policy = "Never" if container.init and run.restart_policy == "Never" else run.restart_policy
        if container.sidecar:  # restarted whatever its exit, until the pod's containers are done
            if all(c.done for c in run.main) and any(c.started_once for c in run.main):
                container.done = True
            else:
                self._back_off(run, container)
        elif container.init and exit_code == 0:
            container.done = True
            self._advance_init(run, container)
        elif (container.init and policy != "Never") or (
            not container.init and should_restart(policy, exit_code)
        ):
            self._back_off(run, container)
        else:
            container.done = True
        if not container.init and all(c.done for c in run.main):
            self._stop_sidecars(run)
        run.phase = settled_phase(run)
        self._write_status(run)

    def _advance_init(self, run: PodRun, container: ContainerRun) -> None:
        """The init container is through (exited 0, or a sidecar started): the next one, or the containers."""
        following = run.init.index(container) + 1
        if following < len(run.init):
            self._start_container(run, run.init[following], write=False)
        else:
            for main in run.main:
                self._start_container(run, main, write=False)

    def _sidecar_started(self, run: PodRun, container: ContainerRun) -> None:
        if container.running and not container.started_once:
            container.started_once = True
            if container.sidecar:
                self._advance_init(run, container)

    def _stop_sidecars(self, run: PodRun) -> None:
        """The pod's containers are done: its sidecars are stopped, last started first, as kubelets do."""
        for sidecar in reversed(run.sidecars):
            if sidecar.running and run.process and self.processes is not None:
                self.processes.terminate(run, [sidecar], 30)
            elif sidecar.running:
                self._stop_container(run, sidecar, 0, "Completed")
                sidecar.done = True
            else:
                sidecar.done = True

    def _back_off(self, run: PodRun, container: ContainerRun) -> None:
        delay = min(
            self.settings.restart_backoff * (2**container.restarts), self.settings.max_restart_backoff
        )
        container.last_state = clone(container.state)
        if delay > 0:
            container.state = {
                WAITING: {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {_duration(delay)} restarting failed container={container.name} "
                    f"pod={run.name}_{run.namespace}({run.uid})",
                }
            }

        def restart() -> None:
            if run.terminating or run.finished:
                return
            container.restarts += 1
            self._start_container(run, container)

        self._later(run, delay, restart)

    # --- deletion ------------------------------------------------------------------------------------

    def _terminate(self, run: PodRun, grace: int) -> None:
        """The pod is being deleted: stop its containers (SIGTERM, then SIGKILL at the grace period)."""
        run.terminating = True
        run.cancel_timers()
        running = [c for c in run.init + run.main if c.running]
        if not running:
            self._finish_deletion(run.namespace, run.name, run.uid)
            return
        if run.process and self.processes is not None:
            self.processes.terminate(run, running, grace)
            return
        for container in running:
            delay = container.run.termination_delay
            code = SIGTERM_EXIT if delay < grace or grace == 0 else SIGKILL_EXIT
            self._later(run, min(delay, float(grace)), functools.partial(self._killed, run, container, code))

    def _killed(self, run: PodRun, container: ContainerRun, exit_code: int) -> None:
        self._stop_container(run, container, exit_code, "Error")
        container.done = True
        if any(c.running for c in run.init + run.main):
            return
        for other in run.init + run.main:
            other.done = True
        run.phase = "Failed" if any(c.exit_code not in (None, 0) for c in run.main) else "Succeeded"
        self._write_status(run)
        self._finish_deletion(run.namespace, run.name, run.uid)

    def _finish_deletion(self, namespace: str, name: str, uid: str) -> None:
        try:
            self.store.delete(self._pods, name, namespace, preconditions={"uid": uid}, grace_period_seconds=0)
        except ApiError as error:
            log.debug("kubesim kubelet: final delete of %s/%s: %s", namespace, name, error)

    # --- status --------------------------------------------------------------------------------------

    def _write_status(self, run: PodRun) -> None:
        now = self.clock.timestamp()

        def change(pod: dict[str, Any]) -> dict[str, Any] | None:
            if pod["metadata"]["uid"] != run.uid:
                return None
            pod["status"] = render_status(run, pod.get("status") or {}, now)
            return pod

        try:
            self.store.mutate(
                self._pods,
                run.name,
                change,
                namespace=run.namespace,
                subresource="status",
                field_manager="kubelet",
            )
        except ApiError as error:
            log.debug("kubesim kubelet: status of %s/%s not written: %s", run.namespace, run.name, error)


def format_timestamp_at(epoch: float) -> str:
    return format_timestamp(datetime.fromtimestamp(epoch, UTC))


def _duration(seconds: float) -> str:
    """Go's time.Duration formatting for whole seconds and minutes (10s, 1m20s, 5m0s)."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    return f"{whole // 60}m{whole % 60}s"
