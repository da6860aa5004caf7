"""What the simulated kubelet knows about each pod it runs, and the pure rendering of that into `status`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from kubesim.clock import Timer
from kubesim.kubelet.script import ContainerScript, Run

WAITING, RUNNING, TERMINATED = "waiting", "running", "terminated"


@dataclass
class ContainerRun:
    """One container of a pod: its script, restart count and current (and last) state."""

    name: str
    image: str
    script: ContainerScript
    init: bool = False
    #: an init container with `restartPolicy: Always` (a native sidecar): it runs beside the containers
    sidecar: bool = False
    started_once: bool = False
    restarts: int = 0
    state: dict[str, Any] = field(default_factory=lambda: {WAITING: {"reason": "ContainerCreating"}})
    last_state: dict[str, Any] = field(default_factory=dict)
    done: bool = False  # exited for good: no restart will follow
    #: what its startup and readiness probes say (process pods; True when it declares none)
    probe_started: bool = True
    probe_ready: bool = True

    @property
    def run(self) -> Run:
        return self.script.run(self.restarts)

    @property
    def running(self) -> bool:
        return RUNNING in self.state

    @property
    def exit_code(self) -> int | None:
        terminated = self.state.get(TERMINATED)
        return None if terminated is None else int(terminated["exitCode"])

    def container_id(self, pod_uid: str) -> str:
        digest = hashlib.sha256(f"{pod_uid}/{self.name}/{self.restarts}".encode()).hexdigest()
        return f"containerd://{digest}"


@dataclass
class PodRun:
    """A pod bound to the simulated node; `timers` are cancelled when the pod stops or goes away."""

    namespace: str
    name: str
    uid: str
    restart_policy: str
    node_name: str
    pod_ip: str
    host_ip: str
    start_time: str
    init: list[ContainerRun]
    main: list[ContainerRun]
    phase: str = "Pending"
    reason: str = ""
    message: str = ""
    terminating: bool = False
    #: its containers run as processes (the process kubelet), not scripts; `pod` is the object as admitted
    process: bool = False
    pod: dict[str, Any] = field(default_factory=dict)
    timers: list[Timer] = field(default_factory=list)
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)  # condition → (status, since)

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name

    @property
    def finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def cancel_timers(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()

    def container(self, name: str) -> ContainerRun | None:
        return next((c for c in self.init + self.main if c.name == name), None)

    def initialized(self) -> bool:
        """Every regular init container succeeded and every sidecar has started."""
        return all(c.started_once if c.sidecar else (c.done and c.exit_code == 0) for c in self.init)

    @property
    def sidecars(self) -> list[ContainerRun]:
        return [c for c in self.init if c.sidecar]


def should_restart(restart_policy: str, exit_code: int) -> bool:
    """Whether the kubelet restarts a container in place after it exited with `exit_code`."""
    return restart_policy == "Always" or (restart_policy == "OnFailure" and exit_code != 0)


def settled_phase(run: PodRun) -> str:
    """The pod phase from its containers, as the kubelet computes it (evictions set `run.phase` directly)."""
    if run.phase == "Failed" and run.reason:
        return "Failed"
    if any(c.done and c.exit_code != 0 for c in run.init if not c.sidecar):
        return "Failed"
    if not run.initialized() or not any(c.running or c.last_state or c.done for c in run.main):
        return "Pending"
    if all(c.done for c in run.main):
        if any(c.running for c in run.sidecars):  # the pod ends once its sidecars have stopped
            return "Running"
        return "Succeeded" if all(c.exit_code == 0 for c in run.main) else "Failed"
    return "Running"


def _container_status(container: ContainerRun, pod_uid: str) -> dict[str, Any]:
    started = container.running and container.probe_started
    status: dict[str, Any] = {
        "name": container.name,
        "image": container.image,
        "imageID": f"docker.io/library/{container.image.split(':')[0]}@sha256:"
        + hashlib.sha256(container.image.encode()).hexdigest(),
        "ready": started and (container.sidecar or not container.init) and container.probe_ready,
        "started": started,
        "restartCount": container.restarts,
        "state": container.state,
        "lastState": container.last_state,
    }
    if container.running or TERMINATED in container.state:
        status["containerID"] = container.container_id(pod_uid)
    return status


def _condition(run: PodRun, kind: str, ok: bool, now: str) -> dict[str, Any]:
    value = "True" if ok else "False"
    previous = run.transitions.get(kind)
    since = previous[1] if previous and previous[0] == value else now
    run.transitions[kind] = (value, since)
    return {"type": kind, "status": value, "lastProbeTime": None, "lastTransitionTime": since}


_KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")


def render_status(run: PodRun, old_status: dict[str, Any], now: str) -> dict[str, Any]:
    """The pod's `status` as the kubelet reports it; fields and conditions the kubelet does not own
    (qosClass, DisruptionTarget) are kept."""
    ready = (
        run.phase == "Running"
        and bool(run.main)
        and all(c.running and c.probe_started and c.probe_ready for c in run.main + run.sidecars)
    )
    foreign = [c for c in old_status.get("conditions") or [] if c.get("type") not in _KUBELET_CONDITIONS]
    status: dict[str, Any] = {
        **{k: v for k, v in old_status.items() if k in ("qosClass", "nominatedNodeName")},
        "phase": run.phase,
        "hostIP": run.host_ip,
        "hostIPs": [{"ip": run.host_ip}],
        **({"podIP": run.pod_ip, "podIPs": [{"ip": run.pod_ip}]} if run.pod_ip else {}),
        "startTime": run.start_time,
        "conditions": [
            _condition(run, "PodReadyToStartContainers", True, now),
            _condition(run, "Initialized", run.initialized(), now),
            _condition(run, "Ready", ready, now),
            _condition(run, "ContainersReady", ready, now),
            _condition(run, "PodScheduled", True, now),
            *foreign,
        ],
        "containerStatuses": [_container_status(c, run.uid) for c in run.main],
    }
    if run.init:
        status["initContainerStatuses"] = [_container_status(c, run.uid) for c in run.init]
    if run.reason:
        status["reason"] = run.reason
    if run.message:
        status["message"] = run.message
    return status
