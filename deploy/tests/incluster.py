"""The in-cluster leg's cluster: kubesim secured as a cluster is, the chart's RBAC applied, one token per
ServiceAccount laid out as a kubelet mounts it, and every process of the chart started with its own.

Used by test_incluster.py (the leg), by deploy/rbac_necessity.py (the leg once per removed rule) and by
deploy/rbac_can_i.py (kubectl's `auth can-i --list` for docs/install.md).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from .kubesim_apply import apply_server_side, kubectl
from .manifests import NAMESPACE, RELEASE, REPO, Manifest, documents, of_kind, render_chart

#: The kinds that make up the chart's identities: who the processes are and what they may do.
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
#: The chart values the leg installs with: Kubeflow's group on (`kubeflow.installCRDs`), so its rules are
#: judged beside ours.
LEG_VALUES = {"kubeflow": {"installCRDs": True}}
#: A file of RBAC objects to use instead of the chart's (deploy/rbac_necessity.py removes one rule at a time).
RBAC_FILE_VARIABLE = "ARGOML_INCLUSTER_RBAC_FILE"
#: The namespace where users run their work; the control plane's is the release namespace (NAMESPACE).
USER_NAMESPACE = "team-a"
PSA_LABEL = "pod-security.kubernetes.io/enforce"
#: Pod Security levels, as the leg labels the namespaces: restricted for us, baseline for users.
NAMESPACE_LEVELS = {NAMESPACE: "restricted", USER_NAMESPACE: "baseline"}
#: process → the ServiceAccount its Deployment runs as (beat's mounts no token in the chart; here it gets
#: one anyway, bound to nothing, so a call it made would be refused and show).
ACCOUNTS = {
    "web": f"{RELEASE}-web",
    "controller": f"{RELEASE}-controller",
    "worker": f"{RELEASE}-worker",
    "beat": RELEASE,
}


def chart_rbac() -> list[Manifest]:
    """The RBAC objects the chart renders with the leg's values, or those of RBAC_FILE_VARIABLE's file."""
    path = os.environ.get(RBAC_FILE_VARIABLE)
    if path:
        return documents(Path(path).read_text(encoding="utf-8"))
    return of_kind(render_chart(LEG_VALUES), *RBAC_KINDS)


def label_namespaces(simulator: Any) -> None:
    for namespace, level in NAMESPACE_LEVELS.items():
        simulator.store.ensure_namespace(namespace)
        result = kubectl(simulator, "label", "namespace", namespace, f"{PSA_LABEL}={level}", "--overwrite")
        if result.returncode != 0:
            raise AssertionError(f"kubectl label namespace {namespace}: {result.stderr}")


def issue_token(simulator: Any, account: str, namespace: str = NAMESPACE) -> str:
    """`kubectl create token`: what the kubelet's projected volume requests for a pod."""
    result = kubectl(simulator, "create", "token", account, "-n", namespace, "--duration=2h")
    if result.returncode != 0:
        raise AssertionError(f"kubectl create token {account}: {result.stderr}")
    return result.stdout.strip()


def mount_service_account(directory: Path, simulator: Any, token: str, namespace: str = NAMESPACE) -> Path:
    """The files a kubelet mounts at /var/run/secrets/kubernetes.io/serviceaccount."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(token)
    (directory / "ca.crt").write_bytes(simulator.security.ca_path.read_bytes())
    (directory / "namespace").write_text(namespace)
    return directory


def install_rbac(simulator: Any, rbac: list[Manifest]) -> None:
    apply_server_side(simulator, rbac, NAMESPACE)


def service_environment(simulator: Any) -> dict[str, str]:
    """What the kubelet sets in every container: the API server's Service address."""
    address = urlsplit(simulator.url)
    return {"KUBERNETES_SERVICE_HOST": str(address.hostname), "KUBERNETES_SERVICE_PORT": str(address.port)}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Process:
    """One process of the chart, in a process group of its own so that its children stop with it."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    ready_text: str = ""

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready_text in self.text():
                return
            if self.popen.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"{self.name} did not start:\n{self.text()[-4000:]}")

    def stop(self) -> None:
        if self.popen.poll() is not None:
            return
        os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)


def start(name: str, command: list[str], env: dict[str, str], logdir: Path, ready_text: str = "") -> Process:
    log = logdir / f"{name}.log"
    with log.open("ab") as output:
        popen = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    return Process(name, popen, log, ready_text)


def celery_worker(name: str, queues: str, concurrency: int, *extra: str) -> list[str]:
    """The entrypoint's `controller` / `worker` command (deploy/docker-entrypoint.sh), with the chart's
    default concurrency (values.yaml)."""
    return [sys.executable, "-m", "celery", "-A", "argoml_site", "worker", "--queues", queues,
            "--hostname", f"{name}@%h", "--concurrency", str(concurrency), "--without-mingle",
            "--without-gossip", "--without-heartbeat", "--loglevel", "INFO", *extra]  # fmt: skip


def commands() -> dict[str, tuple[list[str], str]]:
    """process → (command, the log line that says it is up), as deploy/docker-entrypoint.sh starts them."""
    return {
        "web": ([sys.executable, "-m", "gunicorn", "--config", str(REPO / "deploy" / "gunicorn.conf.py")],
                "Booting worker"),
        "controller": (
            celery_worker("controller", "reconcile", 8, "--pool", "threads", "--controllers"), " ready."
        ),
        "worker": (celery_worker("worker", "reconcile,default", 2), " ready."),
        "beat": ([sys.executable, "-m", "celery", "-A", "argoml_site", "beat", "--scheduler",
                  "django_celery_beat.schedulers:DatabaseScheduler", "--loglevel", "INFO"], "beat: Starting"),
    }  # fmt: skip


def write_rbac(path: Path, manifests: Iterable[Manifest]) -> Path:
    path.write_text(yaml.safe_dump_all(list(manifests), sort_keys=False), encoding="utf-8")
    return path
