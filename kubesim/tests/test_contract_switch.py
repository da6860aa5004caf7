"""KUBESIM_CONTRACT_KUBECONFIG is a working switch: the contract tests then talk to the cluster it names.

Here that cluster is another simulator (HTTPS, tokens, RBAC) started by this test, so we can count what the
contract tests asked of it; against a real cluster the command is the same (docs/kubesim.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kubesim.testing import running_simulator

REPO = Path(__file__).resolve().parents[2]


def test_contract_tests_run_against_the_cluster_the_variable_names() -> None:
    with running_simulator(https=True, auth=True) as cluster:
        assert cluster.kubeconfig_path is not None
        env = {**os.environ, "KUBESIM_CONTRACT_KUBECONFIG": str(cluster.kubeconfig_path)}
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "kubesim/tests/test_rbac_escalation.py",
                "-k",
                "role_ref",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert "1 passed" in run.stdout
        assert cluster.counters.count(verb="create", resource="rolebindings.rbac.authorization.k8s.io") == 1
        assert cluster.counters.count(verb="patch", resource="rolebindings.rbac.authorization.k8s.io") == 2
