"""The Pod Security Standards' checks as pure functions, with the upstream wording and order."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.podsecurity import checks
from kubesim.podsecurity.admission import policy

SAFE = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def spec(**fields: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "i", "securityContext": dict(SAFE), **fields.pop("container", {})}
    return {"containers": [container], **fields}


def details(level: str, pod_spec: dict[str, Any], metadata: dict[str, Any] | None = None) -> str:
    return checks.forbidden_detail(checks.evaluate(level, metadata or {}, pod_spec))


def test_a_restricted_pod_passes_every_level() -> None:
    for level in checks.LEVELS:
        assert checks.evaluate(level, {}, spec()) == []


def test_privileged_allows_everything() -> None:
    assert (
        checks.evaluate(
            "privileged", {}, spec(hostPID=True, container={"securityContext": {"privileged": True}})
        )
        == []
    )


@pytest.mark.parametrize(
    ("pod_spec", "expected"),
    [
        (spec(hostNetwork=True, hostPID=True), "host namespaces (hostNetwork=true, hostPID=true)"),
        (
            spec(container={"securityContext": {"privileged": True}}),
            'privileged (container "c" must not set securityContext.privileged=true)',
        ),
        (
            spec(container={"securityContext": {"capabilities": {"add": ["SYS_ADMIN", "CHOWN", "NET_RAW"]}}}),
            'non-default capabilities (container "c" must not include "NET_RAW", "SYS_ADMIN" '
            "in securityContext.capabilities.add)",
        ),
        (
            spec(
                volumes=[{"name": "a", "hostPath": {"path": "/"}}, {"name": "b", "hostPath": {"path": "/x"}}]
            ),
            'hostPath volumes (volumes "a", "b")',
        ),
        (
            spec(
                container={
                    "ports": [{"containerPort": 1, "hostPort": 80}, {"containerPort": 2, "hostPort": 443}]
                }
            ),
            'hostPort (container "c" uses hostPorts 443, 80)',
        ),
        (
            spec(
                container={
                    "livenessProbe": {"httpGet": {"host": "localhost", "port": 80}},
                    "readinessProbe": {"tcpSocket": {"host": "::1", "port": 80}},
                    "startupProbe": {"httpGet": {"port": 80}},
                },
                initContainers=[
                    {"name": "a", "image": "i", "lifecycle": {"preStop": {"httpGet": {"host": "127.0.0.1"}}}}
                ],
            ),
            'probe or lifecycle host (containers "a", "c" use probe or lifecycle hosts "127.0.0.1", "::1", '
            '"localhost")',
        ),
        (
            spec(container={"lifecycle": {"postStart": {"tcpSocket": {"host": "db", "port": 5432}}}}),
            'probe or lifecycle host (container "c" uses probe or lifecycle host "db")',
        ),
        (
            spec(container={"securityContext": {"procMount": "Unmasked"}}),
            'procMount (container "c" must not set securityContext.procMount to "Unmasked")',
        ),
        (
            spec(securityContext={"seccompProfile": {"type": "Unconfined"}}),
            'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")',
        ),
        (
            spec(
                securityContext={
                    "sysctls": [
                        {"name": "kernel.msgmax", "value": "1"},
                        {"name": "net.ipv4.tcp_syncookies", "value": "1"},
                    ]
                }
            ),
            "forbidden sysctls (kernel.msgmax)",
        ),
        (
            spec(securityContext={"seLinuxOptions": {"type": "spc_t", "user": "root"}}),
            "seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: "
            'type "spc_t"; user may not be set)',
        ),
        (
            spec(container={"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}),
            'forbidden AppArmor profile (container "c" must not set AppArmor profile type to "Unconfined")',
        ),
        (
            spec(securityContext={"windowsOptions": {"hostProcess": True}}),
            "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)",
        ),
    ],
)
def test_each_baseline_check_names_what_it_found(pod_spec: dict[str, Any], expected: str) -> None:
    assert details("baseline", pod_spec) == expected


def test_baseline_checks_run_in_sorted_order() -> None:
    pod_spec = spec(
        hostIPC=True,
        volumes=[{"name": "v", "hostPath": {"path": "/"}}],
        container={"securityContext": {"privileged": True, "capabilities": {"add": ["NET_ADMIN"]}}},
    )
    reasons = [v.reason for v in checks.evaluate("baseline", {}, pod_spec)]
    assert reasons == ["non-default capabilities", "host namespaces", "hostPath volumes", "privileged"]


def test_restricted_reports_a_default_container_as_the_apiserver_does() -> None:
    bare = {"containers": [{"name": "c", "image": "i"}], "initContainers": [{"name": "init", "image": "i"}]}
    assert details("restricted", bare) == (
        "allowPrivilegeEscalation != false "
        '(containers "init", "c" must set securityContext.allowPrivilegeEscalation=false), '
        "unrestricted capabilities "
        '(containers "init", "c" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or containers "init", "c" must set securityContext.runAsNonRoot=true), '
        "seccompProfile "
        '(pod or containers "init", "c" must set securityContext.seccompProfile.type to '
        '"RuntimeDefault" or "Localhost")'
    )


@pytest.mark.parametrize(
    ("pod_spec", "expected"),
    [
        (
            spec(
                container={
                    "securityContext": {
                        **SAFE,
                        "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "SYS_TIME"]},
                    }
                }
            ),
            'unrestricted capabilities (container "c" must not include "SYS_TIME" '
            "in securityContext.capabilities.add)",
        ),
        (
            spec(
                volumes=[
                    {"name": "data", "nfs": {"server": "s", "path": "/"}},
                    {"name": "ok", "emptyDir": {}},
                ]
            ),
            'restricted volume types (volume "data" uses restricted volume type "nfs")',
        ),
        (
            spec(container={"securityContext": {**SAFE, "runAsNonRoot": False}}),
            'runAsNonRoot != true (container "c" must not set securityContext.runAsNonRoot=false)',
        ),
        (spec(securityContext={"runAsUser": 0}), "runAsUser=0 (pod must not set runAsUser=0)"),
        (
            spec(container={"securityContext": {**SAFE, "seccompProfile": {"type": "Unconfined"}}}),
            'seccompProfile (container "c" must not set securityContext.seccompProfile.type to "Unconfined")',
        ),
        (
            spec(volumes=[{"name": "h", "hostPath": {"path": "/"}}]),
            'restricted volume types (volume "h" uses restricted volume type "hostPath")',
        ),
    ],
)
def test_each_restricted_check_names_what_it_found(pod_spec: dict[str, Any], expected: str) -> None:
    assert details("restricted", pod_spec) == expected


def test_pod_level_settings_satisfy_the_containers() -> None:
    pod_spec = {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "Localhost"}},
        "containers": [
            {
                "name": "c",
                "image": "i",
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }
        ],
    }
    assert checks.evaluate("restricted", {}, pod_spec) == []


def test_windows_pods_skip_the_linux_only_restricted_checks() -> None:
    bare = {
        "os": {"name": "windows"},
        "securityContext": {"runAsNonRoot": True},
        "containers": [{"name": "c", "image": "i"}],
    }
    assert checks.evaluate("restricted", {}, bare) == []


def test_user_namespace_pods_may_run_as_root() -> None:
    pod_spec = spec(hostUsers=False, securityContext={"runAsUser": 0})
    pod_spec["containers"][0]["securityContext"]["runAsNonRoot"] = False
    assert checks.evaluate("restricted", {}, pod_spec) == []


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, ("privileged", "privileged", "latest")),
        ({"pod-security.kubernetes.io/enforce": "baseline"}, ("baseline", "baseline", "latest")),
        (
            {
                "pod-security.kubernetes.io/enforce": "baseline",
                "pod-security.kubernetes.io/warn": "restricted",
            },
            ("baseline", "restricted", "latest"),
        ),
        (
            {
                "pod-security.kubernetes.io/enforce": "restricted",
                "pod-security.kubernetes.io/warn": "privileged",
            },
            ("restricted", "privileged", "latest"),
        ),
        ({"pod-security.kubernetes.io/enforce": "bogus"}, ("restricted", "privileged", "latest")),
        ({"pod-security.kubernetes.io/warn": "bogus"}, ("privileged", "privileged", "latest")),
        (
            {
                "pod-security.kubernetes.io/enforce": "baseline",
                "pod-security.kubernetes.io/enforce-version": "v1.30",
            },
            ("baseline", "baseline", "v1.30"),
        ),
    ],
)
def test_namespace_labels_give_the_policy(labels: dict[str, str], expected: tuple[str, str, str]) -> None:
    """Warn defaults to the enforce level; an unknown enforce level fails closed, a warn level open."""
    assert policy(labels) == expected
