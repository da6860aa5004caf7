"""What kubesim's security costs per request: GETs/s plain, over HTTPS, and over HTTPS with token + RBAC.

    .venv/bin/python bench/kubesim_auth.py [--requests 500] [--roles 0]

One keep-alive connection, sequential GETs of one ConfigMap, the simulator in this process. `--roles N`
adds N Roles and RoleBindings (in other namespaces) that the authorizer must read on every request, as a
chart's RBAC would. No target: the figure says what the secured fixtures and `make run` pay.
"""

from __future__ import annotations

import argparse
import time

import requests

from kubesim.testing import running_simulator

PATH = "/api/v1/namespaces/default/configmaps/probe"


def _rbac(sim: object, count: int) -> None:
    store = sim.store  # type: ignore[attr-defined]
    for index in range(count):
        namespace = f"team-{index}"
        store.ensure_namespace(namespace)
        rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
        store.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                      "metadata": {"name": "reader", "namespace": namespace}, "rules": [rule]})  # fmt: skip
        store.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                      "metadata": {"name": "reader", "namespace": namespace},
                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
                      "subjects": [{"kind": "User", "name": f"user-{index}"}]})  # fmt: skip


def measure(requests_count: int, roles: int, **options: bool) -> float:
    with running_simulator(**options) as sim:
        sim.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}})
        _rbac(sim, roles)
        session = requests.Session()
        if sim.security.gate is not None:
            session.headers["Authorization"] = f"Bearer {sim.security.admin_token}"
        verify = str(sim.security.ca_path) if sim.security.ca_path else True
        session.get(sim.url + PATH, verify=verify, timeout=10).raise_for_status()
        started = time.perf_counter()
        for _ in range(requests_count):
            session.get(sim.url + PATH, verify=verify, timeout=10)
        return requests_count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--roles", type=int, default=0)
    arguments = parser.parse_args()
    print(f"settings: {arguments.requests} sequential GETs, {arguments.roles} extra Roles+RoleBindings")
    for label, options in (
        ("plain HTTP, no auth", {}),
        ("HTTPS, no auth", {"https": True}),
        ("HTTPS + token + RBAC", {"https": True, "auth": True}),
    ):
        rate = measure(arguments.requests, arguments.roles, **options)
        print(f"{label:24} {rate:8.0f} GET/s")


if __name__ == "__main__":
    main()
