"""Contract tests: Pod Security admission as the apiserver applies a namespace's labels. "Pod Security
admission places requirements on a Pod's Security Context and other related fields according to the three
levels defined by the Pod Security Standards: privileged, baseline, and restricted." (Pod Security Admission).
Run against `secure_cluster` (the simulator, or KUBESIM_CONTRACT_KUBECONFIG)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from kubesim.identity import User
from kubesim.podsecurity.config import PodSecurityConfig
from kubesim.simulator import Simulator
from kubesim.tests.conftest import SecureCluster

Labels = dict[str, str]


@pytest.fixture
def labelled(secure_cluster: SecureCluster) -> Iterator[Callable[[Labels], str]]:
    """`labelled({"pod-security.kubernetes.io/enforce": "restricted"})`: a new namespace with the labels."""
    created: list[str] = []

    def make(labels: Labels) -> str:
        name = f"kst-psa-{uuid.uuid4().hex[:8]}"
        body = {"metadata": {"name": name, "labels": labels}}
        response = secure_cluster.call(secure_cluster.admin, "POST", "/api/v1/namespaces", json=body)
        assert response.status_code == 201, response.text
        created.append(name)
        return name

    yield make
    for name in created:
        secure_cluster.call(secure_cluster.admin, "DELETE", f"/api/v1/namespaces/{name}")


def pod(name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", **spec.pop("container", {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container], **spec},
    }


RESTRICTED_CONTAINER = {
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
}


def create(cluster: SecureCluster, namespace: str, body: dict[str, Any], plural: str = "pods") -> Any:
    prefix = "/apis/apps/v1" if plural == "deployments" else "/api/v1"
    return cluster.call(cluster.admin, "POST", f"{prefix}/namespaces/{namespace}/{plural}", json=body)


def warnings(response: Any) -> list[str]:
    return [v for k, v in response.raw.headers.items() if k.lower() == "warning"]


def test_enforce_restricted_refuses_a_default_pod_with_every_reason(
    secure_cluster: SecureCluster, labelled: Callable[[Labels], str]
) -> None:
    """ "enforce: Policy violations will cause the pod to be rejected." The message lists each failed check as
    `reason (detail)`, in the order the Pod Security Standards' checks run."""
    namespace = labelled({"pod-security.kubernetes.io/enforce": "restricted"})
    response = create(secure_cluster, namespace, pod("web"))
    assert response.status_code == 403
    assert response.json()["reason"] == "Forbidden"
    assert response.json()["message"] == (
        'pods "web" is forbidden: violates PodSecurity "restricted:latest": '
        "allowPrivilegeEscalation != false "
        '(container "main" must set securityContext.allowPrivilegeEscalation=false), '
        "unrestricted capabilities "
        '(container "main" must set securityContext.capabilities.drop=["ALL"]), '
        "runAsNonRoot != true "
        '(pod or container "main" must set securityContext.runAsNonRoot=true), '
        "seccompProfile "
        '(pod or container "main" must set securityContext.seccompProfile.type to '
        '"RuntimeDefault" or "Localhost")'
    )


def test_enforce_restricted_admits_a_compliant_pod_without_warnings(
    secure_cluster: SecureCluster, labelled: Callable[[Labels], str]
) -> None:
    namespace = labelled({"pod-security.kubernetes.io/enforce": "restricted"})
    response = create(secure_cluster, namespace, pod("web", container=RESTRICTED_CONTAINER))
    assert response.status_code == 201, response.text
    assert warnings(response) == []


def test_enforce_baseline_admits_a_plain_pod_and_refuses_host_access(
    secure_cluster: SecureCluster, labelled: Callable[[Labels], str]
) -> None:
    """Baseline: "Minimally restrictive policy which prevents known privilege escalations" — a default pod
    passes; host namespaces, privileged containers and hostPath volumes do not."""
    namespace = labelled({"pod-security.kubernetes.io/enforce": "baseline"})
    assert create(secure_cluster, namespace, pod("plain")).status_code == 201
    response = create(
        secure_cluster,
        namespace,
        pod(
            "host",
            hostNetwork=True,
            container={"securityContext": {"privileged": True}},
            volumes=[{"name": "root", "hostPath": {"path": "/"}}],
        ),
    )
    assert response.status_code == 403
    assert response.json()["message"] == (
        'pods "host" is forbidden: violates PodSecurity "baseline:latest": '
        "host namespaces (hostNetwork=true), "
        'hostPath volumes (volume "root"), privileged (container "main" must not set '
        "securityContext.privileged=true)"
    )


def test_warn_admits_the_pod_with_a_warning(
    secure_cluster: SecureCluster, labelled: Callable[[Labels], str]
) -> None:
    """ "warn: Policy violations will trigger a user-facing warning, but are otherwise allowed.\" """
    namespace = labelled({"pod-security.kubernetes.io/warn": "baseline"})
    response = create(
        secure_cluster, namespace, pod("web", container={"ports": [{"containerPort": 80, "hostPort": 8080}]})
    )
    assert response.status_code == 201
    assert warnings(response) == [
        '299 - "would violate PodSecurity \\"baseline:latest\\": '
        'hostPort (container \\"main\\" uses hostPort 8080)"'
    ]


def test_workloads_only_warn_when_their_pod_template_would_be_refused(
    secure_cluster: SecureCluster, labelled: Callable[[Labels], str]
) -> None:
    """ "both the audit and warning modes are applied to the workload resources. However, enforce mode is not
    applied to workload resources, only to the resulting pod objects." (Workload resources and Pod templates);
    the warn level defaults to the enforce level."""
    namespace = labelled({"pod-security.kubernetes.io/enforce": "restricted"})
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{"name": "main", "image": "nginx", **RESTRICTED_CONTAINER}],
                    "hostIPC": True,
                },
            },
        },
    }
    response = create(secure_cluster, namespace, deployment, "deployments")
    assert response.status_code == 201, response.text
    assert warnings(response) == [
        '299 - "would violate PodSecurity \\"restricted:latest\\": host namespaces (hostIPC=true)"'
    ]


def test_updates_are_checked_only_when_an_image_changes(
    secure_cluster: SecureCluster, labelled: Callable[[Labels], str]
) -> None:
    """An update is evaluated only if it is "significant" (isSignificantPodUpdate: an image or the number of
    containers changes); labels and status of a running pod stay writable after the namespace is labelled."""
    namespace = labelled({})
    assert create(secure_cluster, namespace, pod("web")).status_code == 201
    secure_cluster.call(
        secure_cluster.admin,
        "PATCH",
        f"/api/v1/namespaces/{namespace}",
        json={"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    path = f"/api/v1/namespaces/{namespace}/pods/web"
    merge = {"Content-Type": "application/merge-patch+json"}
    relabel = {"metadata": {"labels": {"tier": "front"}}}
    assert (
        secure_cluster.call(secure_cluster.admin, "PATCH", path, json=relabel, headers=merge).status_code
        == 200
    )
    image = {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}
    strategic = {"Content-Type": "application/strategic-merge-patch+json"}
    changed = secure_cluster.call(secure_cluster.admin, "PATCH", path, json=image, headers=strategic)
    assert changed.status_code == 403
    assert 'violates PodSecurity "restricted:latest"' in changed.json()["message"]


def test_raising_the_enforce_level_warns_about_the_pods_already_there(
    secure_cluster: SecureCluster, labelled: Callable[[Labels], str]
) -> None:
    """ "kubectl label --dry-run=server --overwrite ns $NAMESPACE pod-security.kubernetes.io/enforce=$LEVEL
    [...] This command will return a warning for any existing pods that are not valid under the proposed
    level." (Migrate from PodSecurityPolicy to the Built-In PodSecurity Admission Controller). Pods with the
    same reasons are counted under the lexically first one; nothing is refused or evicted."""
    namespace = labelled({})
    for name in ("web-b", "web-a", "web-c"):
        assert create(secure_cluster, namespace, pod(name)).status_code == 201
    compliant = pod("ok", container=RESTRICTED_CONTAINER)
    assert create(secure_cluster, namespace, compliant).status_code == 201
    host = pod("host", hostNetwork=True, container=RESTRICTED_CONTAINER)
    assert create(secure_cluster, namespace, host).status_code == 201

    def label(value: str, dry_run: bool) -> Any:
        return secure_cluster.call(
            secure_cluster.admin,
            "PATCH",
            f"/api/v1/namespaces/{namespace}" + ("?dryRun=All" if dry_run else ""),
            json={"metadata": {"labels": {"pod-security.kubernetes.io/enforce": value}}},
            headers={"Content-Type": "application/merge-patch+json"},
        )

    expected = [
        f'299 - "existing pods in namespace \\"{namespace}\\" violate the new PodSecurity enforce level '
        '\\"restricted:latest\\""',
        '299 - "host: host namespaces"',
        '299 - "web-a (and 2 other pods): allowPrivilegeEscalation != false, unrestricted capabilities, '
        'runAsNonRoot != true, seccompProfile"',
    ]
    dry = label("restricted", dry_run=True)
    assert dry.status_code == 200, dry.text
    assert warnings(dry) == expected
    applied = label("restricted", dry_run=False)
    assert warnings(applied) == expected
    assert secure_cluster.call(secure_cluster.admin, "GET", f"/api/v1/namespaces/{namespace}/pods/web-a").ok
    assert warnings(label("baseline", dry_run=False)) == []  # a relaxation checks nothing


# --- the plugin's configuration (an AdmissionConfiguration on a real apiserver): simulator only -------------


def _secured(kubesim_factory: Callable[..., Simulator], config: PodSecurityConfig) -> tuple[Simulator, Any]:
    sim = kubesim_factory(https=True, auth=True, pod_security=config)
    session = requests.Session()
    session.verify = str(sim.security.ca_path)
    session.headers["Authorization"] = f"Bearer {sim.security.admin_token}"
    return sim, session


def _create_pod(sim: Simulator, session: Any, namespace: str, body: dict[str, Any]) -> Any:
    # verify= on each call: a session's own loses to REQUESTS_CA_BUNDLE
    url = f"{sim.url}/api/v1/namespaces/{namespace}/pods"
    return session.post(url, json=body, timeout=10, verify=session.verify)


def _restricted_namespace(sim: Simulator, name: str) -> str:
    sim.store.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": ENFORCE_RESTRICTED}}
    )
    return name


ENFORCE_RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted"}


def test_exempt_namespaces_users_and_runtime_classes_are_never_checked(
    kubesim_factory: Callable[..., Simulator],
) -> None:
    """PodSecurityConfiguration `exemptions`: "usernames", "runtimeClasses" and "namespaces" listed there
    are not checked at all (Pod Security Admission: Exemptions)."""
    config = PodSecurityConfig(
        exempt_usernames=frozenset({"ci-bot"}),
        exempt_namespaces=frozenset({"tooling"}),
        exempt_runtime_classes=frozenset({"kata"}),
    )
    sim, admin = _secured(kubesim_factory, config)
    checked = _restricted_namespace(sim, "checked")
    _restricted_namespace(sim, "tooling")
    assert _create_pod(sim, admin, checked, pod("plain")).status_code == 403
    assert _create_pod(sim, admin, "tooling", pod("plain")).status_code == 201
    assert _create_pod(sim, admin, checked, pod("kata", runtimeClassName="kata")).status_code == 201

    sim.security.gate.add_token("ci-token", User("ci-bot", ("system:masters",)))
    robot = requests.Session()
    robot.verify = str(sim.security.ca_path)
    robot.headers["Authorization"] = "Bearer ci-token"
    assert _create_pod(sim, robot, checked, pod("by-ci")).status_code == 201


def test_configured_defaults_apply_to_namespaces_without_labels(
    kubesim_factory: Callable[..., Simulator],
) -> None:
    """PodSecurityConfiguration `defaults`: "Defaults applied when a mode label is not set." """
    sim, admin = _secured(kubesim_factory, PodSecurityConfig(enforce="baseline", warn="restricted"))
    refused = _create_pod(sim, admin, "default", pod("host", hostNetwork=True))
    assert refused.status_code == 403
    assert 'violates PodSecurity "baseline:latest": host namespaces' in refused.json()["message"]
    admitted = _create_pod(sim, admin, "default", pod("plain"))
    assert admitted.status_code == 201
    assert warnings(admitted)[0].startswith('299 - "would violate PodSecurity \\"restricted:latest\\"')


def test_baseline_refuses_probes_and_lifecycle_handlers_aimed_at_another_host(
    secure_cluster: SecureCluster, labelled: Callable[[Labels], str]
) -> None:
    """Baseline, "Probes and Lifecycle Hooks (v1.34+)": "The Host field in probes and lifecycle hooks must
    be disallowed." (Pod Security Standards), restricted fields such as
    `spec.containers[*].livenessProbe.httpGet.host`; allowed values "" and undefined."""
    namespace = labelled({"pod-security.kubernetes.io/enforce": "baseline"})
    probe = {"httpGet": {"host": "10.0.0.1", "port": 80, "path": "/"}}
    refused = create(secure_cluster, namespace, pod("probed", container={"livenessProbe": probe}))
    assert refused.status_code == 403
    assert refused.json()["message"] == (
        'pods "probed" is forbidden: violates PodSecurity "baseline:latest": '
        'probe or lifecycle host (container "main" uses probe or lifecycle host "10.0.0.1")'
    )
    local = {"httpGet": {"port": 80, "path": "/"}}
    assert (
        create(secure_cluster, namespace, pod("local", container={"livenessProbe": local})).status_code == 201
    )


def test_an_exempt_namespace_setting_a_policy_is_told_it_is_ignored(
    kubesim_factory: Callable[..., Simulator],
) -> None:
    """An exempt namespace's labels have no effect, and the apiserver says so when they set a policy; pods
    of an exempt runtime class are left out when existing pods are checked against a new level."""
    config = PodSecurityConfig(
        exempt_namespaces=frozenset({"tools"}), exempt_runtime_classes=frozenset({"kata"})
    )
    sim, admin = _secured(kubesim_factory, config)
    labels = {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/warn": "baseline",
    }
    body = {"metadata": {"name": "tools", "labels": labels}}
    answer = admin.post(f"{sim.url}/api/v1/namespaces", json=body, timeout=10, verify=admin.verify)
    assert answer.status_code == 201, answer.text
    assert warnings(answer) == [
        '299 - "namespace \\"tools\\" is exempt from Pod Security, and the policy '
        '(enforce=restricted:latest, warn=baseline:latest) will be ignored"'
    ]
    assert _create_pod(sim, admin, "default", pod("kata", runtimeClassName="kata")).status_code == 201
    relabel = admin.patch(
        f"{sim.url}/api/v1/namespaces/default",
        json={"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}},
        headers={"Content-Type": "application/merge-patch+json"},
        timeout=10,
        verify=admin.verify,
    )
    assert relabel.status_code == 200, relabel.text
    assert warnings(relabel) == []
