"""Startup, readiness and liveness probes of process containers, run for real as the kubelet runs them.

Each probe (exec, httpGet, tcpSocket) runs every `periodSeconds` after `initialDelaySeconds`, times out
after `timeoutSeconds`, and flips after `successThreshold` successes or `failureThreshold` failures in a
row. A startup probe holds the others back until it succeeds; a failed startup or liveness probe kills the
container (its restart policy decides what follows); readiness decides `ready` and the pod's Ready
condition. `Unhealthy` Events carry the kubelet's wording.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: (probe handler, timeout seconds) → (success, message on failure)
Prober = Callable[[Mapping[str, Any], float], "tuple[bool, str]"]
KINDS = ("startupProbe", "readinessProbe", "livenessProbe")
_LABEL = {"startupProbe": "Startup", "readinessProbe": "Readiness", "livenessProbe": "Liveness"}


@dataclass(frozen=True)
class ProbeSettings:
    """One probe's timing, with the API server's defaults."""

    initial_delay: float
    period: float
    timeout: float
    success_threshold: int
    failure_threshold: int

    @classmethod
    def of(cls, probe: Mapping[str, Any]) -> ProbeSettings:
        return cls(
            initial_delay=float(probe.get("initialDelaySeconds", 0)),
            period=float(probe.get("periodSeconds", 10)),
            timeout=float(probe.get("timeoutSeconds", 1)),
            success_threshold=int(probe.get("successThreshold", 1)),
            failure_threshold=int(probe.get("failureThreshold", 3)),
        )


class ProbeState:
    """Consecutive results of one probe and the verdict they make (pure: `record` returns a change)."""

    def __init__(self, settings: ProbeSettings, *, initially: bool) -> None:
        self.settings = settings
        self.passing = initially
        self._successes = 0
        self._failures = 0

    def record(self, success: bool) -> bool | None:
        """The new verdict when this result flips it, else None."""
        if success:
            self._successes, self._failures = self._successes + 1, 0
            if not self.passing and self._successes >= self.settings.success_threshold:
                self.passing = True
                return True
        else:
            self._failures, self._successes = self._failures + 1, 0
            if self.passing is not False and self._failures >= self.settings.failure_threshold:
                self.passing = False
                return False
        return None


def http_get(
    connect: Callable[[str, int, float], socket.socket], pod_ip: str, container: Mapping[str, Any]
) -> Prober:
    """An httpGet prober: a GET from the node's network to the pod; 200-399 succeed, as the kubelet says."""

    def probe(handler: Mapping[str, Any], timeout: float) -> tuple[bool, str]:
        action = handler["httpGet"]
        port = resolve_port(action.get("port"), container)
        path = str(action.get("path") or "/")
        connection = http.client.HTTPConnection(pod_ip, port, timeout=timeout)
        try:
            connection.sock = connect(pod_ip, port, timeout)
        except OSError as error:
            return False, f'Get "http://{pod_ip}:{port}{path}": {error}'
        connection.sock.settimeout(timeout)  # also blocking reads: the fd may come non-blocking
        headers = {h["name"]: h["value"] for h in action.get("httpHeaders") or []}
        try:
            connection.request("GET", path, headers={"User-Agent": "kube-probe/1.37", **headers})
            status = connection.getresponse().status
        except OSError as error:
            return False, f'Get "http://{pod_ip}:{port}{path}": {error}'
        finally:
            connection.close()
        if 200 <= status < 400:
            return True, ""
        return False, f"HTTP probe failed with statuscode: {status}"

    return probe


def tcp_socket(
    connect: Callable[[str, int, float], socket.socket], pod_ip: str, container: Mapping[str, Any]
) -> Prober:
    def probe(handler: Mapping[str, Any], timeout: float) -> tuple[bool, str]:
        port = resolve_port(handler["tcpSocket"].get("port"), container)
        try:
            connect(pod_ip, port, timeout).close()
        except OSError as error:
            return False, f"dial tcp {pod_ip}:{port}: connect: {error}"
        return True, ""

    return probe


def resolve_port(port: Any, container: Mapping[str, Any]) -> int:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int):
        return port
    for declared in container.get("ports") or []:
        if declared.get("name") == port:
            return int(declared["containerPort"])
    if str(port).isdigit():
        return int(str(port))
    raise ValueError(f"port {port!r} is not a number nor a named port of the container")


class ContainerProbes:
    """The probes of one running container, on a thread of their own until `stop()`."""

    def __init__(
        self,
        container: Mapping[str, Any],
        probers: Mapping[str, Prober],
        on_failure: Callable[[str, str], None],
        on_verdict: Callable[[str, bool], None],
    ) -> None:
        self.container = container
        self.probers = probers  # "exec" / "httpGet" / "tcpSocket" → prober
        self.on_failure = on_failure  # (probe kind, message): one Unhealthy Event per failed probe
        self.on_verdict = on_verdict  # (probe kind, passing): the probe's verdict flipped
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubesim-probes", daemon=True)

    @property
    def declared(self) -> list[str]:
        return [kind for kind in KINDS if self.container.get(kind)]

    def start(self) -> None:
        if self.declared:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _probe(self, kind: str) -> tuple[bool, str]:
        handler = self.container[kind]
        action = next((key for key in ("exec", "httpGet", "tcpSocket", "grpc") if key in handler), "")
        prober = self.probers.get(action)
        if prober is None:
            return False, f"{_LABEL[kind]} probe handler {action or 'none'} is not supported"
        try:
            return prober(handler, ProbeSettings.of(handler).timeout)
        except (OSError, ValueError, RuntimeError) as error:
            return False, str(error)

    def _run(self) -> None:
        states = {
            kind: ProbeState(ProbeSettings.of(self.container[kind]), initially=kind == "livenessProbe")
            for kind in self.declared
        }
        due = {kind: state.settings.initial_delay for kind, state in states.items()}
        elapsed = 0.0
        while not self._stop.is_set():
            started = "startupProbe" not in states or states["startupProbe"].passing
            for kind, state in states.items():
                if elapsed < due[kind] or (kind != "startupProbe" and not started):
                    continue
                if kind == "startupProbe" and state.passing:
                    continue
                due[kind] = elapsed + state.settings.period
                success, message = self._probe(kind)
                if not success:
                    self.on_failure(kind, f"{_LABEL[kind]} probe failed: {message}")
                verdict = state.record(success)
                if verdict is not None:
                    self.on_verdict(kind, verdict)
            step = max(0.1, min(due.values()) - elapsed) if due else 1.0
            if self._stop.wait(step):
                return
            elapsed += step
