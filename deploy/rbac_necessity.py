"""Is every rule of the chart's Roles needed, and are they enough? Runs the in-cluster leg once as
rendered, then once per rule with that rule removed, and says which request RBAC refused without it.

    .venv/bin/python deploy/rbac_necessity.py [--only ROLE-SUBSTRING ...] [--rule ROLE-SUBSTRING:INDEX ...]
        [--skip-full]

Run by hand and by the cluster CI workflow, not by `make test` (each run of the leg takes minutes). It needs
what the leg needs: DATABASE_URL (PostgreSQL), and Redis at KUBE_QUEUE_TEST_REDIS_HOST. The last lines
it prints are quoted in docs/install.md ("Every rule is needed"). Exit status 1 when the full set fails
the leg or a removed rule leaves it passing.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from deploy.tests.incluster import ACCOUNTS, RBAC_FILE_VARIABLE, chart_rbac, write_rbac  # noqa: E402

LEG = "deploy/tests/test_incluster.py"
PYTEST = ["-m", "pytest", LEG, "-x", "-q", "--reuse-db", "-p", "no:logging", "-p", "no:cacheprovider"]
DENIAL = re.compile(r"403 FORBIDDEN: (.+)")


def rule_text(rule: dict[str, Any]) -> str:
    groups = ",".join(group or "core" for group in rule.get("apiGroups", []))
    names = f" names={','.join(rule['resourceNames'])}" if rule.get("resourceNames") else ""
    return f"{groups} {','.join(rule.get('resources', []))} [{','.join(rule.get('verbs', []))}]{names}"


def leg_roles(rbac: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(kind, name) of the Roles bound to the leg's processes (not the webhook-certs Job's)."""
    accounts = set(ACCOUNTS.values())
    return {
        (binding["roleRef"]["kind"], binding["roleRef"]["name"])
        for binding in rbac
        if binding["kind"] in ("RoleBinding", "ClusterRoleBinding")
        and any(subject.get("name") in accounts for subject in binding.get("subjects") or [])
    }


def without_rule(rbac: list[dict[str, Any]], role_index: int, rule_index: int) -> list[dict[str, Any]]:
    changed = copy.deepcopy(rbac)
    del changed[role_index]["rules"][rule_index]
    return changed


def run_leg(rbac: list[dict[str, Any]], scratch: Path) -> tuple[bool, list[str], float]:
    """(passed, the denials it reported, seconds) of one run of the leg with these RBAC objects."""
    path = write_rbac(scratch / "rbac.yaml", rbac)
    env = {**os.environ, RBAC_FILE_VARIABLE: str(path)}
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, *PYTEST],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    denials = sorted(set(DENIAL.findall(result.stdout)))
    return result.returncode == 0, denials, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", action="append", default=[], help="only Roles whose name contains this")
    parser.add_argument("--skip-full", action="store_true", help="skip the run with every rule")
    parser.add_argument("--rule", action="append", default=[], help="ROLE-SUBSTRING:INDEX, only these rules")
    args = parser.parse_args()
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
    django.setup()
    rbac = chart_rbac()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="rbac-necessity-") as scratch:
        if not args.skip_full:
            passed, denials, seconds = run_leg(rbac, Path(scratch))
            print(f"all rules: leg {'passed' if passed else 'FAILED'} in {seconds:.0f}s", flush=True)
            for denial in denials:
                print(f"  refused: {denial}", flush=True)
            failures += not passed
        for role_index, role in enumerate(rbac):
            if (role["kind"], role["metadata"]["name"]) not in leg_roles(rbac):
                continue
            if args.only and not any(part in role["metadata"]["name"] for part in args.only):
                continue
            for rule_index, rule in enumerate(role.get("rules", [])):
                if args.rule and not any(
                    part in role["metadata"]["name"] and index == str(rule_index)
                    for part, _, index in (wanted.rpartition(":") for wanted in args.rule)
                ):
                    continue
                name = f"{role['kind']} {role['metadata']['name']} rule {rule_index} ({rule_text(rule)})"
                passed, denials, seconds = run_leg(without_rule(rbac, role_index, rule_index), Path(scratch))
                if passed:
                    failures += 1
                    print(f"{name}: the leg PASSED without it ({seconds:.0f}s)", flush=True)
                elif denials:
                    print(f"{name}: needed ({seconds:.0f}s); refused: {denials[0]}", flush=True)
                else:
                    failures += 1
                    print(f"{name}: the leg failed without naming a denial ({seconds:.0f}s)", flush=True)
    print(f"{failures} problem(s)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
