"""Every Pod Security check, at each level, on regular, init and ephemeral containers."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

import podsecurity
from podsecurity import BASELINE, PRIVILEGED, RESTRICTED, Violation, check_pod

# A pod that passes restricted: every other case changes one thing in a copy of it.
RESTRICTED_CONTAINER: dict[str, Any] = {
    "name": "main",
    "image": "python:3.11",
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    },
}
RESTRICTED_POD: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [RESTRICTED_CONTAINER],
    "volumes": [
        {"name": "scratch", "emptyDir": {}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "d"}},
    ],
}


def pod(**changes: Any) -> dict[str, Any]:
    """The restricted pod with top-level fields replaced."""
    spec = copy.deepcopy(RESTRICTED_POD)
    spec.update(changes)
    return spec


def container(name: str = "main", **security: Any) -> dict[str, Any]:
    """The restricted container with securityContext fields replaced (None removes one)."""
    body = copy.deepcopy(RESTRICTED_CONTAINER)
    body["name"] = name
    for key, value in security.items():
        if value is None:
            body["securityContext"].pop(key, None)
        else:
            body["securityContext"][key] = value
    return body


def test_the_reference_pod_passes_every_level() -> None:
    for level in podsecurity.LEVELS:
        assert check_pod(level, RESTRICTED_POD) == []


def test_a_bare_pod_passes_baseline_but_not_restricted() -> None:
    bare = {"containers": [{"name": "main", "image": "busybox"}]}
    assert check_pod(BASELINE, bare) == []
    assert {v.path for v in check_pod(RESTRICTED, bare)} == {
        "spec.containers[0].securityContext.allowPrivilegeEscalation",
        "spec.containers[0].securityContext.runAsNonRoot",
        "spec.containers[0].securityContext.seccompProfile.type",
        "spec.containers[0].securityContext.capabilities.drop",
    }


def test_an_unknown_level_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown Pod Security level 'strict'"):
        check_pod("strict", RESTRICTED_POD)


def test_privileged_allows_anything() -> None:
    assert check_pod(PRIVILEGED, pod(hostPID=True, containers=[container(privileged=True)])) == []


def test_malformed_specs_are_read_tolerantly() -> None:
    assert check_pod(BASELINE, None) == []
    assert check_pod(BASELINE, {"containers": "x", "volumes": [1, None], "securityContext": []}) == []


# Each case: (name, spec, annotations, the lowest level that refuses it, expected violations there).
CASES: list[tuple[str, dict[str, Any], dict[str, Any], str, list[Violation]]] = [
    (
        "hostProcess on the pod",
        pod(securityContext={**RESTRICTED_POD["securityContext"], "windowsOptions": {"hostProcess": True}}),
        {},
        BASELINE,
        [
            Violation(
                "spec.securityContext.windowsOptions.hostProcess",
                "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)",
            )
        ],
    ),
    (
        "hostProcess on a container",
        pod(containers=[container(windowsOptions={"hostProcess": True})]),
        {},
        BASELINE,
        [
            Violation(
                "spec.containers[0].securityContext.windowsOptions.hostProcess",
                'hostProcess (container "main" must not set securityContext.windowsOptions.hostProcess=true)',
            )
        ],
    ),
    (
        "host namespaces",
        pod(hostNetwork=True, hostPID=True, hostIPC=True),
        {},
        BASELINE,
        [
            Violation("spec.hostNetwork", "host namespaces (hostNetwork=true)"),
            Violation("spec.hostPID", "host namespaces (hostPID=true)"),
            Violation("spec.hostIPC", "host namespaces (hostIPC=true)"),
        ],
    ),
    (
        "privileged init container",
        pod(initContainers=[container("setup", privileged=True)]),
        {},
        BASELINE,
        [
            Violation(
                "spec.initContainers[0].securityContext.privileged",
                'privileged (container "setup" must not set securityContext.privileged=true)',
            )
        ],
    ),
    (
        "privileged ephemeral container",
        pod(ephemeralContainers=[container("debug", privileged=True)]),
        {},
        BASELINE,
        [
            Violation(
                "spec.ephemeralContainers[0].securityContext.privileged",
                'privileged (container "debug" must not set securityContext.privileged=true)',
            )
        ],
    ),
    (
        "a capability outside the default set",
        pod(containers=[container(capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "SYS_ADMIN"]})]),
        {},
        BASELINE,
        [
            Violation(
                "spec.containers[0].securityContext.capabilities.add[1]",
                'non-default capabilities (container "main" must not include "SYS_ADMIN" in '
                "securityContext.capabilities.add)",
            )
        ],
    ),
    (
        "hostPath volume",
        pod(volumes=[{"name": "data", "hostPath": {"path": "/"}}]),
        {},
        BASELINE,
        [Violation("spec.volumes[0].hostPath", 'hostPath volumes (volume "data")')],
    ),
    (
        "host port",
        pod(
            containers=[
                {**container(), "ports": [{"containerPort": 80}, {"containerPort": 8080, "hostPort": 8080}]}
            ]
        ),
        {},
        BASELINE,
        [Violation("spec.containers[0].ports[1].hostPort", 'hostPort (container "main" uses hostPort 8080)')],
    ),
    (
        "AppArmor unconfined by annotation",
        pod(),
        {
            "container.apparmor.security.beta.kubernetes.io/main": "unconfined",
            "container.apparmor.security.beta.kubernetes.io/side": "localhost/mine",
            "other": "unconfined",
        },
        BASELINE,
        [
            Violation(
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/main]",
                "forbidden AppArmor profile"
                ' (container.apparmor.security.beta.kubernetes.io/main="unconfined")',
            )
        ],
    ),
    (
        "AppArmor unconfined by field",
        pod(containers=[container(appArmorProfile={"type": "Unconfined"})]),
        {},
        BASELINE,
        [
            Violation(
                "spec.containers[0].securityContext.appArmorProfile.type",
                'forbidden AppArmor profile (container "main" must not set '
                'securityContext.appArmorProfile.type to "Unconfined")',
            )
        ],
    ),
    (
        "SELinux type, user and role",
        pod(
            securityContext={
                **RESTRICTED_POD["securityContext"],
                "seLinuxOptions": {"type": "spc_t", "user": "root", "level": "s0:c1"},
            },
            containers=[container(seLinuxOptions={"type": "container_t", "role": "sysadm_r"})],
        ),
        {},
        BASELINE,
        [
            Violation(
                "spec.securityContext.seLinuxOptions.type",
                'seLinuxOptions (pod must not set securityContext.seLinuxOptions.type "spc_t")',
            ),
            Violation(
                "spec.securityContext.seLinuxOptions.user",
                "seLinuxOptions (pod must not set securityContext.seLinuxOptions.user)",
            ),
            Violation(
                "spec.containers[0].securityContext.seLinuxOptions.role",
                'seLinuxOptions (container "main" must not set securityContext.seLinuxOptions.role)',
            ),
        ],
    ),
    (
        "/proc mount type",
        pod(containers=[container(procMount="Unmasked")]),
        {},
        BASELINE,
        [
            Violation(
                "spec.containers[0].securityContext.procMount",
                'procMount (container "main" must not set securityContext.procMount to "Unmasked")',
            )
        ],
    ),
    (
        "seccomp unconfined on a container",
        pod(containers=[container(seccompProfile={"type": "Unconfined"})]),
        {},
        BASELINE,
        [
            Violation(
                "spec.containers[0].securityContext.seccompProfile.type",
                'seccompProfile (container "main" must not set'
                ' securityContext.seccompProfile.type to "Unconfined")',
            )
        ],
    ),
    (
        "an unsafe sysctl",
        pod(
            securityContext={
                **RESTRICTED_POD["securityContext"],
                "sysctls": [
                    {"name": "net.ipv4.tcp_syncookies", "value": "1"},
                    {"name": "kernel.msgmax", "value": "1"},
                ],
            }
        ),
        {},
        BASELINE,
        [Violation("spec.securityContext.sysctls[1].name", "forbidden sysctls (kernel.msgmax)")],
    ),
    (
        "a probe and a hook reaching another host",
        pod(
            containers=[
                {
                    **container(),
                    "livenessProbe": {"httpGet": {"path": "/", "port": 80, "host": "10.0.0.1"}},
                    "readinessProbe": {"tcpSocket": {"port": 80, "host": ""}},
                    "lifecycle": {"preStop": {"tcpSocket": {"port": 22, "host": "node"}}},
                }
            ]
        ),
        {},
        BASELINE,
        [
            Violation(
                "spec.containers[0].livenessProbe.httpGet.host",
                'probe or lifecycle host (container "main" uses livenessProbe.httpGet.host "10.0.0.1")',
            ),
            Violation(
                "spec.containers[0].lifecycle.preStop.tcpSocket.host",
                'probe or lifecycle host (container "main" uses lifecycle.preStop.tcpSocket.host "node")',
            ),
        ],
    ),
    (
        "restricted volume types",
        pod(
            volumes=[
                {"name": "share", "nfs": {"server": "x", "path": "/"}},
                {"name": "cfg", "configMap": {"name": "c"}},
            ]
        ),
        {},
        RESTRICTED,
        [
            Violation(
                "spec.volumes[0].nfs",
                'restricted volume types (volume "share" uses restricted volume type "nfs")',
            )
        ],
    ),
    (
        "privilege escalation not forbidden",
        pod(initContainers=[container("setup", allowPrivilegeEscalation=None)]),
        {},
        RESTRICTED,
        [
            Violation(
                "spec.initContainers[0].securityContext.allowPrivilegeEscalation",
                'allowPrivilegeEscalation != false (container "setup" must set '
                "securityContext.allowPrivilegeEscalation=false)",
            )
        ],
    ),
    (
        "runAsNonRoot false on the pod, true on the container",
        pod(
            securityContext={"runAsNonRoot": False, "seccompProfile": {"type": "RuntimeDefault"}},
            containers=[container(runAsNonRoot=True)],
        ),
        {},
        RESTRICTED,
        [
            Violation(
                "spec.securityContext.runAsNonRoot",
                "runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)",
            )
        ],
    ),
    (
        "runAsNonRoot missing on pod and container, false on another",
        pod(
            securityContext={"seccompProfile": {"type": "RuntimeDefault"}},
            containers=[container(), container("b", runAsNonRoot=False), container("c", runAsNonRoot=True)],
        ),
        {},
        RESTRICTED,
        [
            Violation(
                "spec.containers[0].securityContext.runAsNonRoot",
                'runAsNonRoot != true (pod or container "main" must set securityContext.runAsNonRoot=true)',
            ),
            Violation(
                "spec.containers[1].securityContext.runAsNonRoot",
                'runAsNonRoot != true (container "b" must not set securityContext.runAsNonRoot=false)',
            ),
        ],
    ),
    (
        "runAsUser 0",
        pod(
            securityContext={**RESTRICTED_POD["securityContext"], "runAsUser": 0},
            containers=[container(runAsUser=1000), container("b", runAsUser=0)],
        ),
        {},
        RESTRICTED,
        [
            Violation("spec.securityContext.runAsUser", "runAsUser=0 (pod must not set runAsUser=0)"),
            Violation(
                "spec.containers[1].securityContext.runAsUser",
                'runAsUser=0 (container "b" must not set runAsUser=0)',
            ),
        ],
    ),
    (
        "seccomp profile missing, or of an unknown type",
        pod(
            securityContext={"runAsNonRoot": True},
            containers=[
                container(),
                container("b", seccompProfile={"type": "Localhost", "localhostProfile": "p.json"}),
                container("c", seccompProfile={"type": "Mine"}),
            ],
        ),
        {},
        RESTRICTED,
        [
            Violation(
                "spec.containers[0].securityContext.seccompProfile.type",
                'seccompProfile (pod or container "main" must set securityContext.seccompProfile.type to '
                '"RuntimeDefault" or "Localhost")',
            ),
            Violation(
                "spec.containers[2].securityContext.seccompProfile.type",
                'seccompProfile (container "c" must not set securityContext.seccompProfile.type to "Mine")',
            ),
        ],
    ),
    (
        "capabilities not dropped, or a default one added",
        pod(
            containers=[
                container(capabilities={"drop": ["NET_RAW"]}),
                container("b", capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "CHOWN"]}),
            ]
        ),
        {},
        RESTRICTED,
        [
            Violation(
                "spec.containers[0].securityContext.capabilities.drop",
                'unrestricted capabilities (container "main" must set'
                ' securityContext.capabilities.drop=["ALL"])',
            ),
            Violation(
                "spec.containers[1].securityContext.capabilities.add[1]",
                'unrestricted capabilities (container "b" must not include "CHOWN" in '
                "securityContext.capabilities.add)",
            ),
        ],
    ),
]


@pytest.mark.parametrize(
    ("spec", "annotations", "level", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_check_at_each_level(
    spec: dict[str, Any], annotations: dict[str, Any], level: str, expected: list[Violation]
) -> None:
    assert check_pod(PRIVILEGED, spec, annotations) == []
    if level == RESTRICTED:
        assert check_pod(BASELINE, spec, annotations) == []
    assert check_pod(level, spec, annotations) == expected
    # What baseline refuses, restricted refuses too (it may add its own findings about the same field).
    assert set(expected) <= set(check_pod(RESTRICTED, spec, annotations))


def test_paths_carry_where_the_spec_sits_in_the_document() -> None:
    spec = pod(hostPID=True)
    found = check_pod(
        BASELINE,
        spec,
        {"container.apparmor.security.beta.kubernetes.io/main": "unconfined"},
        path="spec.tfReplicaSpecs.Worker.template.spec",
        metadata_path="spec.tfReplicaSpecs.Worker.template.metadata",
    )
    assert [v.path for v in found] == [
        "spec.tfReplicaSpecs.Worker.template.spec.hostPID",
        "spec.tfReplicaSpecs.Worker.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/main]",
    ]


def test_a_hostpath_volume_is_also_a_restricted_volume_type() -> None:
    found = check_pod(RESTRICTED, pod(volumes=[{"name": "data", "hostPath": {"path": "/"}}]))
    assert [v.message for v in found] == [
        'hostPath volumes (volume "data")',
        'restricted volume types (volume "data" uses restricted volume type "hostPath")',
    ]


def test_windows_pods_skip_the_linux_only_restricted_checks() -> None:
    bare = {
        "os": {"name": "windows"},
        "securityContext": {"runAsNonRoot": True},
        "containers": [{"name": "w"}],
    }
    assert check_pod(RESTRICTED, bare) == []
    assert check_pod(RESTRICTED, {**bare, "os": {"name": "linux"}}) != []


def test_the_pod_level_seccomp_and_runasnonroot_cover_every_container() -> None:
    spec = pod(
        containers=[container("a", seccompProfile=None), container("b")], initContainers=[container("i")]
    )
    assert check_pod(RESTRICTED, spec) == []


def test_a_restricted_pod_with_a_pod_level_unconfined_seccomp_is_refused_for_each_container() -> None:
    spec = pod(securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "Unconfined"}})
    assert [v.path for v in check_pod(RESTRICTED, spec)] == [
        "spec.securityContext.seccompProfile.type",
        "spec.containers[0].securityContext.seccompProfile.type",
    ]


def test_violation_reads_as_path_and_message() -> None:
    assert (
        str(Violation("spec.hostPID", "host namespaces (hostPID=true)"))
        == "spec.hostPID: host namespaces (hostPID=true)"
    )


def test_a_pod_names_its_service_accounts_under_both_spellings() -> None:
    view = podsecurity.pod_view(pod(serviceAccountName="trainer", serviceAccount="legacy"), path="x.spec")
    assert view.service_accounts == (
        ("x.spec.serviceAccountName", "trainer"),
        ("x.spec.serviceAccount", "legacy"),
    )


def test_service_accounts_outside_the_allow_list_are_refused_and_default_is_always_allowed() -> None:
    views = [
        podsecurity.pod_view(pod(serviceAccountName="default")),
        podsecurity.pod_view(pod(serviceAccountName="trainer"), path="a.spec"),
        podsecurity.pod_view(pod(serviceAccountName="admin"), path="b.spec"),
    ]
    assert podsecurity.check_service_accounts(views, ["trainer"], "team-a") == [
        Violation(
            "b.spec.serviceAccountName",
            'service account "admin" is not allowed in namespace "team-a" (allowed: default, trainer)',
        )
    ]
    assert podsecurity.check_service_accounts(views, [], "team-a")[0].path == "a.spec.serviceAccountName"


def test_a_pod_spec_patch_is_allowed_only_at_the_privileged_level() -> None:
    view = podsecurity.PodView("spec", {}, "spec.securityContext", {}, (), (), "metadata.annotations", {})
    patched = dataclasses.replace(view, spec_patches=("spec.templates[0].podSpecPatch",))
    assert podsecurity.check_view(PRIVILEGED, patched) == []
    assert podsecurity.check_view(BASELINE, view) == []
    assert [v.path for v in podsecurity.check_view(BASELINE, patched)] == ["spec.templates[0].podSpecPatch"]
    assert podsecurity.check_view(RESTRICTED, patched)[0].message.startswith("podSpecPatch (")
