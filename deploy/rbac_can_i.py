"""What each ServiceAccount of the chart may do, as kubectl says it: `kubectl auth can-i --list` against
kubesim with the chart's RBAC applied (rendered by Helm's engine with the default values).

    .venv/bin/python deploy/rbac_can_i.py > /tmp/can-i.md   # then paste into docs/install.md

Impersonation (`--as=system:serviceaccount:argoml:<name>`) is the admin's; the answers come from the same
authorizer that refuses the processes' requests in the in-cluster leg (deploy/tests/test_incluster.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def main() -> int:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
    django.setup()
    from deploy.tests.incluster import ACCOUNTS, NAMESPACE, chart_rbac, install_rbac
    from deploy.tests.kubesim_apply import kubectl
    from jobs.tests.cluster import install_crds
    from kubesim.testing import running_simulator

    with running_simulator(https=True, auth=True, argo=True) as sim:
        install_crds(sim)
        install_rbac(sim, chart_rbac())
        for process, account in ACCOUNTS.items():
            user = f"system:serviceaccount:{NAMESPACE}:{account}"
            result = kubectl(sim, "auth", "can-i", "--list", f"--as={user}", "-n", NAMESPACE)
            if result.returncode != 0:
                print(result.stderr, file=sys.stderr)
                return 1
            print(
                f"`{process}` runs as `{account}`: `kubectl auth can-i --list --as={user} -n {NAMESPACE}`\n"
            )
            print("```")
            print(result.stdout.rstrip())
            print("```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
