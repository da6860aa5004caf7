"""What a secured simulator remembers for tests to assert on: every RBAC denial (`security.gate.denials`)
and every Pod Security refusal or warning (`pod_security.findings`). kubesim only: a real cluster keeps
these in its audit log."""

from __future__ import annotations

import subprocess

from kubesim.testing import KUBECTL, running_simulator


def kubectl(sim, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(sim.kubeconfig_path), *args],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip


def pod(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}  # fmt: skip


def test_each_refused_request_is_recorded_with_its_attributes():
    with running_simulator(https=True, auth=True) as sim:
        assert kubectl(sim, "create", "serviceaccount", "nobody", "-n", "default").returncode == 0
        gate = sim.security.gate
        assert gate is not None
        assert gate.denials == []
        refused = kubectl(
            sim, "get", "secrets", "-n", "kube-system", "--as=system:serviceaccount:default:nobody"
        )
        assert refused.returncode != 0
        [denial] = gate.denials
        assert (denial.verb, denial.resource, denial.namespace, denial.user.name) == (
            "list",
            "secrets",
            "kube-system",
            "system:serviceaccount:default:nobody",
        )


def test_each_pod_security_refusal_and_warning_is_recorded():
    with running_simulator(https=True, auth=True) as sim:
        assert kubectl(sim, "create", "namespace", "strict").returncode == 0
        label = "pod-security.kubernetes.io/enforce=restricted"
        assert kubectl(sim, "label", "namespace", "strict", label).returncode == 0
        assert sim.pod_security.findings == []
        assert kubectl(sim, "run", "plain", "--image=busybox", "-n", "strict").returncode != 0
        warned = kubectl(sim, "create", "deployment", "web", "--image=busybox", "-n", "strict")
        assert warned.returncode == 0
        refusal, warning = sim.pod_security.findings
        assert refusal.startswith('pods strict/plain: pods "plain" is forbidden: violates PodSecurity')
        assert warning.startswith(
            'deployments.apps strict/web: would violate PodSecurity "restricted:latest"'
        )
