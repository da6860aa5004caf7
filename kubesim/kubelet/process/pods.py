"""The kubelet's side of process pods: when a sandbox is made, a container started, signalled or killed.

`Kubelet` (kubesim/kubelet/node.py) keeps one life cycle for scripted and process pods; where a scripted
container would set a timer, a process pod calls in here, and a real exit comes back through `on_exit` as
a scripted exit does. The kubelet's Events (Pulled, Created, Started, Killing, BackOff, Failed, FailedMount)
are recorded as a real kubelet records them.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import uuid
from typing import TYPE_CHECKING, Any

from kubesim.errors import ApiError
from kubesim.kubelet.process import argoexec, argoinputs
from kubesim.kubelet.process.probes import ContainerProbes, Prober, http_get, tcp_socket
from kubesim.kubelet.process.runtime import ContainerWaiting, ProcessRuntime
from kubesim.kubelet.sandbox import ExitStatus, SandboxUnavailable
from kubesim.kubelet.script import OUTPUTS_ANNOTATION
from kubesim.kubelet.state import RUNNING, WAITING, ContainerRun, PodRun, settled_phase

if TYPE_CHECKING:
    from kubesim.kubelet.node import Kubelet

log = logging.getLogger(__name__)

SANDBOX_RETRY = 5.0  # seconds before a pod whose volumes could not be set up is tried again
PULL_BACKOFF = 10.0  # the first ImagePullBackOff, doubled per attempt up to MAX_PULL_BACKOFF
MAX_PULL_BACKOFF = 300.0
CONFIG_RETRY = 5.0  # a container waiting in CreateContainerConfigError is tried again after this


class ProcessPods:
    """Runs a kubelet's process pods on a ProcessRuntime."""

    def __init__(self, kubelet: Kubelet, runtime: ProcessRuntime) -> None:
        self.kubelet = kubelet
        self.runtime = runtime
        self._pull_attempts: dict[tuple[str, str], int] = {}
        self._probes: dict[tuple[str, str], ContainerProbes] = {}

    def stop(self) -> None:
        self.runtime.stop()

    def simulates(self, pod: dict[str, Any]) -> bool:
        """Whether the image map says this pod's images cannot run here (the kubelet scripts it instead)."""
        return self.runtime.settings.image_map.simulates(pod)

    # --- sandbox -------------------------------------------------------------------------------------

    def start_pod(self, run: PodRun) -> None:
        """Make the pod's sandbox off the kubelet's lock (it is real work), then start its containers."""
        refused = host_access(run.pod)
        if refused:
            message = f"the process kubelet runs no pod that asks for the host: {refused}"
            self.event(run, "Warning", "Forbidden", message)
            self.kubelet._fail_pod(run, "Forbidden", message)
            return
        threading.Thread(
            target=self._prepare, args=(run,), name=f"kubesim-sandbox-{run.name}", daemon=True
        ).start()

    def _prepare(self, run: PodRun) -> None:
        try:
            ip = self.runtime.create_pod(run.pod)
        except ContainerWaiting as waiting:
            self._sandbox_waiting(run, "FailedMount", waiting.message)
            return
        except (SandboxUnavailable, OSError, RuntimeError) as error:
            log.warning("kubesim kubelet: sandbox of %s/%s: %s", run.namespace, run.name, error)
            self._sandbox_waiting(run, "FailedCreatePodSandBox", f"Failed to create pod sandbox: {error}")
            return
        with self.kubelet._lock:
            if self.kubelet._runs.get(run.uid) is not run or run.terminating or run.finished:
                return
            run.pod_ip = ip
            self.kubelet._start_pod(run)

    def _sandbox_waiting(self, run: PodRun, reason: str, message: str) -> None:
        with self.kubelet._lock:
            if self.kubelet._runs.get(run.uid) is not run or run.terminating:
                return
            for container in run.init[:1] or run.main:
                container.state = {WAITING: {"reason": "ContainerCreating", "message": message}}
            self.event(run, "Warning", reason, message)
            self.kubelet._write_status(run)
            self.kubelet._later(run, SANDBOX_RETRY, lambda: self.start_pod(run))

    def removed(self, run: PodRun) -> None:
        """The pod is gone (or done): its sandbox and every process in it go too."""
        for container in run.init + run.main:
            probes = self._probes.pop((run.uid, container.name), None)
            if probes is not None:
                probes.stop()
        threading.Thread(target=self.runtime.remove_pod, args=(run.uid,), daemon=True).start()

    # --- containers ----------------------------------------------------------------------------------

    def start_container(self, run: PodRun, container: ContainerRun) -> None:
        """Start the container's process (under the kubelet's lock); a container that cannot start waits."""
        spec = self._spec(run, container)
        attempt = container.restarts
        try:
            self.runtime.start_container(
                run.pod, spec, lambda status: self._exited(run, container, attempt, status)
            )
        except argoinputs.InputArtifactError as error:
            # Argo's `init` container would have exited 1; its message becomes the node's
            self.kubelet._fail_pod(run, argoexec.INIT_FAILED_REASON, f"init: Error (exit code 1): {error}")
            return
        except ContainerWaiting as waiting:
            self._waiting(run, container, waiting)
            return
        except (SandboxUnavailable, OSError, RuntimeError) as error:
            self._waiting(run, container, ContainerWaiting("RunContainerError", str(error)))
            return
        self._pull_attempts.pop((run.uid, container.name), None)
        container.state = {RUNNING: {"startedAt": self.kubelet.clock.timestamp()}}
        container.probe_started = not spec.get("startupProbe")
        container.probe_ready = not spec.get("readinessProbe")
        self._start_probes(run, container, spec, attempt)
        image = container.image
        self.event(
            run, "Normal", "Pulled", f'Container image "{image}" already present on machine', container
        )
        self.event(run, "Normal", "Created", f"Created container: {container.name}", container)
        self.event(run, "Normal", "Started", f"Started container {container.name}", container)

    def _spec(self, run: PodRun, container: ContainerRun) -> dict[str, Any]:
        field = "initContainers" if container.init else "containers"
        spec = run.pod.get("spec") or {}
        return next(c for c in spec.get(field) or [] if c.get("name") == container.name)

    def _waiting(self, run: PodRun, container: ContainerRun, waiting: ContainerWaiting) -> None:
        container.state = {WAITING: {"reason": waiting.reason, "message": waiting.message}}
        self.event(run, "Warning", "Failed", waiting.message, container)
        if waiting.reason != "ErrImagePull":
            self.kubelet._later(run, CONFIG_RETRY, lambda: self._retry(run, container))
            return
        key = (run.uid, container.name)
        attempts = self._pull_attempts.get(key, 0)
        self._pull_attempts[key] = attempts + 1
        delay = min(PULL_BACKOFF * 2**attempts, MAX_PULL_BACKOFF)

        def back_off() -> None:
            if WAITING in container.state and container.state[WAITING].get("reason") == "ErrImagePull":
                container.state = {
                    WAITING: {
                        "reason": "ImagePullBackOff",
                        "message": f'Back-off pulling image "{container.image}"',
                    }
                }
                self.event(run, "Normal", "BackOff", f'Back-off pulling image "{container.image}"', container)
                self.kubelet._write_status(run)

        self.kubelet._later(run, 1.0, back_off)
        self.kubelet._later(run, delay, lambda: self._retry(run, container))

    def _retry(self, run: PodRun, container: ContainerRun) -> None:
        if run.terminating or run.finished or WAITING not in container.state:
            return
        self.start_container(run, container)
        run.phase = settled_phase(run)
        self.kubelet._write_status(run)

    def _exited(self, run: PodRun, container: ContainerRun, attempt: int, status: ExitStatus) -> None:
        """The process ended (its output read): the kubelet's exit path, as for a scripted exit."""
        with self.kubelet._lock:
            if (
                self.kubelet._runs.get(run.uid) is not run
                or container.restarts != attempt
                or not container.running
            ):
                return
            if run.terminating:
                self.kubelet._killed(run, container, status.exit_code)
                return
            reason = "OOMKilled" if status.oom_killed else ""
            if container.name == argoexec.MAIN and not container.init and argoexec.declared(run.pod):
                self._record_argo_outputs(run)
            message = self.runtime.termination_message(run.pod, container.name, status.exit_code)
            self.kubelet._container_exited(run, container, status.exit_code, reason, message)
            if container.state.get(WAITING, {}).get("reason") == "CrashLoopBackOff":
                message = (
                    f"Back-off restarting failed container {container.name} in pod "
                    f"{run.name}_{run.namespace}({run.uid})"
                )
                self.event(run, "Warning", "BackOff", message, container)
            if run.finished:
                self.removed(run)

    def _record_argo_outputs(self, run: PodRun) -> None:
        """As Argo's wait container: the step's outputs on the pod, before its exit is reported."""
        outputs = self.runtime.argo_outputs(run.pod)
        if not outputs:
            return

        def annotate(pod: dict[str, Any]) -> dict[str, Any] | None:
            if pod["metadata"]["uid"] != run.uid:
                return None
            pod["metadata"].setdefault("annotations", {})[OUTPUTS_ANNOTATION] = json.dumps(outputs)
            return pod

        try:
            pods = self.kubelet.store.resource("pods")
            self.kubelet.store.mutate(
                pods, run.name, annotate, namespace=run.namespace, field_manager="argoexec"
            )
        except ApiError as error:
            log.warning("kubesim kubelet: outputs of %s/%s not recorded: %s", run.namespace, run.name, error)

    # --- probes --------------------------------------------------------------------------------------

    def _start_probes(self, run: PodRun, container: ContainerRun, spec: dict[str, Any], attempt: int) -> None:
        ip = run.pod_ip
        connect = self.runtime.node.connect

        def run_exec(handler: Any, timeout: float) -> tuple[bool, str]:
            code, output = self.runtime.run_in(
                run.uid, container.name, list(handler["exec"]["command"]), timeout
            )
            if code is None:
                return False, f"command timed out after {timeout:g}s"
            return code == 0, output.strip()

        probers: dict[str, Prober] = {
            "exec": run_exec,
            "httpGet": http_get(connect, ip, spec),
            "tcpSocket": tcp_socket(connect, ip, spec),
        }

        def current() -> bool:
            return (
                self.kubelet._runs.get(run.uid) is run and container.restarts == attempt and container.running
            )

        def failed(kind: str, message: str) -> None:
            with self.kubelet._lock:
                if current():
                    self.event(run, "Warning", "Unhealthy", message, container)

        def verdict(kind: str, passing: bool) -> None:
            with self.kubelet._lock:
                if not current():
                    return
                if kind == "readinessProbe":
                    container.probe_ready = passing
                elif passing:  # the startup probe succeeded: readiness and liveness begin
                    container.probe_started = True
                else:
                    which = "liveness" if kind == "livenessProbe" else "startup"
                    note = f"Container {container.name} failed {which} probe, will be restarted"
                    self.event(run, "Normal", "Killing", note, container)
                    self.runtime.kill(run.uid, container.name)
                self.kubelet._write_status(run)

        probes = ContainerProbes(spec, probers, failed, verdict)
        self._probes[(run.uid, container.name)] = probes
        probes.start()

    # --- stopping ------------------------------------------------------------------------------------

    def terminate(self, run: PodRun, running: list[ContainerRun], grace: int) -> None:
        """SIGTERM to each running container, SIGKILL to what is left at the grace period."""
        for container in running:
            self.event(run, "Normal", "Killing", f"Stopping container {container.name}", container)
            if grace > 0:
                self.runtime.signal(run.uid, container.name, signal.SIGTERM)
            else:
                self.runtime.kill(run.uid, container.name)

        def kill_rest() -> None:
            for container in running:
                if container.running:
                    self.runtime.kill(run.uid, container.name)

        if grace > 0:
            self.kubelet._later(run, float(grace), kill_rest)

    def kill_all(self, run: PodRun) -> None:
        """The node gives up on the pod (deadline, eviction): every process is killed now."""
        for container in run.init + run.main:
            if container.running:
                self.runtime.kill(run.uid, container.name)
        self.removed(run)

    # --- events --------------------------------------------------------------------------------------

    def event(
        self, run: PodRun, kind: str, reason: str, note: str, container: ContainerRun | None = None
    ) -> None:
        """An events.k8s.io/v1 Event about the pod, from the kubelet (`kubectl describe pod` lists it)."""
        regarding: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": run.namespace,
            "name": run.name,
            "uid": run.uid,
        }
        if container is not None:
            field = "initContainers" if container.init else "containers"
            regarding["fieldPath"] = f"spec.{field}{{{container.name}}}"
        now = self.kubelet.clock.timestamp()
        event = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{run.name}.{uuid.uuid4().hex[:16]}", "namespace": run.namespace},
            "eventTime": now.replace("Z", ".000000Z"),
            "reportingController": "kubelet",
            "reportingInstance": run.node_name,
            "action": reason,
            "reason": reason,
            "type": kind,
            "note": note[:1024],
            "regarding": regarding,
            "deprecatedSource": {"component": "kubelet", "host": run.node_name},
            "deprecatedFirstTimestamp": now,
            "deprecatedLastTimestamp": now,
            "deprecatedCount": 1,
        }
        try:
            self.kubelet.store.create(event, run.namespace)
        except ApiError as error:
            log.debug(
                "kubesim kubelet: event %s of %s/%s not recorded: %s", reason, run.namespace, run.name, error
            )


def host_access(pod: dict[str, Any]) -> str:
    """The first field by which a pod asks for the host itself ('' when none): such pods never run here."""
    spec = pod.get("spec") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            return f"spec.{field}"
    for kind in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(kind) or []):
            if (container.get("securityContext") or {}).get("privileged"):
                return f"spec.{kind}[{index}].securityContext.privileged"
    return ""
