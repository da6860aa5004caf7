"""The process kubelet's files: volumes set up on disk, container mounts, and /etc/hosts as cluster DNS."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from kubesim.kubelet.process import hosts
from kubesim.kubelet.process.environment import PodContext
from kubesim.kubelet.process.network import replace_in_place
from kubesim.kubelet.process.pods import host_access
from kubesim.kubelet.process.probes import ProbeSettings, ProbeState, resolve_port
from kubesim.kubelet.process.volumes import (
    SERVICE_ACCOUNT_DIR,
    VolumeError,
    VolumeHost,
    container_mounts,
    set_up,
)


class Objects:
    def config_map(self, name: str) -> Any:
        return {"code": {"data": {"train.py": "print('hi')", "conf.json": "{}"}}}.get(name)

    def secret(self, name: str) -> Any:
        return {"creds": {"data": {"token": base64.b64encode(b"s3cr3t").decode()}}}.get(name)


def _host(root: Path, claims: dict[tuple[str, str], str] | None = None) -> VolumeHost:
    issued: list[tuple[Any, ...]] = []

    def issue(namespace: str, account: str, audiences: tuple[str, ...], expiration: int, pod: Any) -> str:
        issued.append((namespace, account, audiences, expiration))
        return f"token-for-{account}-{','.join(audiences)}"

    return VolumeHost(Objects(), issue, lambda ns, name: (claims or {}).get((ns, name)), root, "CA PEM")


def _context(**spec: Any) -> PodContext:
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"a": "1"}}, "spec": spec}
    return PodContext(pod, "10.244.0.9", "172.18.0.2", "p")


def test_every_volume_kind_is_materialised(tmp_path: Path) -> None:
    data = tmp_path / "claims" / "data"
    data.mkdir(parents=True)
    context = _context(
        serviceAccountName="runner",
        volumes=[
            {"name": "scratch", "emptyDir": {}},
            {
                "name": "code",
                "configMap": {
                    "name": "code",
                    "items": [{"key": "train.py", "path": "bin/train.py", "mode": 0o755}],
                },
            },
            {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o400}},
            {
                "name": "info",
                "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]},
            },
            {
                "name": "token",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"audience": "argoml", "path": "t"}},
                        {"configMap": {"name": "code"}},
                    ]
                },
            },
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        ],
    )
    found = set_up(context, _host(tmp_path, {("ns", "data"): str(data)}), tmp_path / "pod")
    assert (Path(found["code"]) / "bin/train.py").read_text() == "print('hi')"
    assert (Path(found["code"]) / "bin/train.py").stat().st_mode & 0o777 == 0o755
    assert (Path(found["creds"]) / "token").read_text() == "s3cr3t"
    assert (Path(found["creds"]) / "token").stat().st_mode & 0o777 == 0o400
    assert (Path(found["info"]) / "labels").read_text() == 'a="1"'
    assert (Path(found["token"]) / "t").read_text() == "token-for-runner-argoml"
    assert (Path(found["token"]) / "conf.json").read_text() == "{}"
    assert found["data"] == str(data)
    assert Path(found["scratch"]).is_dir()
    account = Path(found[""])  # the automatic service-account volume
    assert (account / "token").read_text() == "token-for-runner-"
    assert (account / "ca.crt").read_text() == "CA PEM"
    assert (account / "namespace").read_text() == "ns"


@pytest.mark.parametrize(
    ("volume", "message"),
    [
        (
            {"name": "v", "configMap": {"name": "nope"}},
            'MountVolume.SetUp failed for volume "v" : configmap "nope" not found',
        ),
        ({"name": "v", "secret": {"secretName": "nope"}}, 'secret "nope" not found'),
        (
            {"name": "v", "configMap": {"name": "code", "items": [{"key": "x", "path": "x"}]}},
            "non-existent config key: x",
        ),
        (
            {"name": "v", "configMap": {"name": "code", "items": [{"key": "train.py", "path": "../x"}]}},
            "must be relative",
        ),
        (
            {"name": "v", "persistentVolumeClaim": {"claimName": "unbound"}},
            'persistentvolumeclaim "unbound" is not bound',
        ),
        ({"name": "v", "hostPath": {"path": "/etc"}}, "outside the process kubelet's sandbox root"),
        ({"name": "v", "nfs": {"server": "x", "path": "/"}}, "nfs volumes are not supported"),
    ],
)
def test_volumes_that_cannot_be_set_up_say_why(tmp_path: Path, volume: dict[str, Any], message: str) -> None:
    with pytest.raises(VolumeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        set_up(_context(volumes=[volume]), _host(tmp_path), tmp_path / "pod")


def test_optional_sources_and_host_paths_inside_the_root(tmp_path: Path) -> None:
    inside = tmp_path / "shared"
    found = set_up(
        _context(
            automountServiceAccountToken=False,
            volumes=[
                {"name": "maybe", "configMap": {"name": "nope", "optional": True}},
                {"name": "shared", "hostPath": {"path": str(inside), "type": "DirectoryOrCreate"}},
            ],
        ),
        _host(tmp_path),
        tmp_path / "pod",
    )
    assert list(Path(found["maybe"]).iterdir()) == []
    assert found["shared"] == str(inside)
    assert inside.is_dir()
    assert "" not in found


def test_container_mounts_with_sub_paths_and_the_service_account(tmp_path: Path) -> None:
    volumes = {"data": str(tmp_path / "data"), "": str(tmp_path / "sa")}
    mounts = container_mounts(
        {
            "volumeMounts": [
                {"name": "data", "mountPath": "/data"},
                {"name": "data", "mountPath": "/logs", "subPath": "run/logs", "readOnly": True},
            ]
        },
        volumes,
    )
    assert [(m.container_path, m.read_only) for m in mounts] == [
        ("/data", False),
        ("/logs", True),
        (SERVICE_ACCOUNT_DIR, True),
    ]
    assert mounts[1].host_path == str(tmp_path / "data/run/logs")
    assert Path(mounts[1].host_path).is_dir()
    with pytest.raises(VolumeError, match="names no volume"):
        container_mounts({"volumeMounts": [{"name": "nope", "mountPath": "/x"}]}, volumes)


def _pod(
    name: str, ip: str, labels: dict[str, str], *, ready: bool = True, hostname: str = "", subdomain: str = ""
) -> hosts.PodAddress:
    return hosts.PodAddress("ns", name, ip, labels, hostname, subdomain, ready)


def test_hosts_file_has_every_name_a_pod_may_ask_for() -> None:
    services: list[dict[str, Any]] = [
        {"metadata": {"name": "api", "namespace": "ns"}, "spec": {"clusterIP": "10.96.0.5"}},
        {
            "metadata": {"name": "job-worker-0", "namespace": "ns"},
            "spec": {"clusterIP": "None", "selector": {"replica": "w0"}},
        },
        {"metadata": {"name": "elsewhere", "namespace": "other"}, "spec": {"clusterIP": "10.96.0.6"}},
        {
            "metadata": {"name": "workers", "namespace": "ns"},
            "spec": {"clusterIP": "None", "selector": {"role": "w"}, "publishNotReadyAddresses": True},
        },
    ]
    pods = [
        _pod("w0", "10.244.0.2", {"replica": "w0", "role": "w"}),
        _pod(
            "w1",
            "10.244.0.3",
            {"replica": "w1", "role": "w"},
            ready=False,
            hostname="w1",
            subdomain="workers",
        ),
        _pod("pending", "", {"replica": "w0"}),
    ]
    own = _pod("chief", "10.244.0.4", {}, hostname="chief", subdomain="workers")
    text = hosts.render(own, services, pods)
    lines = {line.split("\t")[0]: line.split("\t")[1].split() for line in text.splitlines() if "\t" in line}
    assert lines["127.0.0.1"] == ["localhost"]
    assert lines["10.244.0.4"] == ["chief.workers.ns.svc.cluster.local", "chief"]
    assert lines["10.96.0.5"] == ["api.ns.svc.cluster.local", "api.ns.svc", "api.ns", "api"]
    assert "elsewhere" not in lines["10.96.0.6"]
    assert "elsewhere.other.svc" in lines["10.96.0.6"]
    assert "job-worker-0.ns.svc" in lines["10.244.0.2"]
    assert "job-worker-0" in lines["10.244.0.2"]
    assert "workers.ns.svc" in lines["10.244.0.3"]  # not ready, but published
    assert "w1.workers.ns.svc.cluster.local" in lines["10.244.0.3"]
    assert not any("job-worker-0" in names for ip, names in lines.items() if ip != "10.244.0.2")


def test_a_headless_service_names_only_ready_pods() -> None:
    service = {
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"clusterIP": "None", "selector": {"a": "b"}},
    }
    assert hosts.records([service], [_pod("x", "10.244.0.2", {"a": "b"}, ready=False)], "ns") == []


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"hostNetwork": True}, "spec.hostNetwork"),
        ({"hostPID": True}, "spec.hostPID"),
        ({"hostIPC": True}, "spec.hostIPC"),
        (
            {"containers": [{"name": "a"}, {"name": "b", "securityContext": {"privileged": True}}]},
            "spec.containers[1].securityContext.privileged",
        ),
        (
            {"initContainers": [{"name": "a", "securityContext": {"privileged": True}}]},
            "spec.initContainers[0].securityContext.privileged",
        ),
        ({"containers": [{"name": "a", "securityContext": {"privileged": False}}], "hostNetwork": False}, ""),
    ],
)
def test_pods_asking_for_the_host_are_named_by_field(spec: dict[str, Any], field: str) -> None:
    assert host_access({"spec": spec}) == field


def _settings(success: int = 1, failure: int = 3) -> ProbeSettings:
    return ProbeSettings(0, 10, 1, success, failure)


def test_probe_verdicts_flip_at_their_thresholds() -> None:
    readiness = ProbeState(_settings(success=2, failure=2), initially=False)
    assert [readiness.record(r) for r in (True, True, True, False, True, False, False, False)] == [
        None, True, None, None, None, None, False, None,
    ]  # fmt: skip
    liveness = ProbeState(_settings(failure=3), initially=True)
    assert [liveness.record(r) for r in (False, False, True, False, False, False)] == [
        None, None, None, None, None, False,
    ]  # fmt: skip


def test_probe_settings_default_as_the_api_server() -> None:
    assert ProbeSettings.of({}) == ProbeSettings(0.0, 10.0, 1.0, 1, 3)


@pytest.mark.parametrize(("port", "found"), [(8080, 8080), ("http", 6006), ("9000", 9000)])
def test_probe_ports_by_number_or_name(port: Any, found: int) -> None:
    assert resolve_port(port, {"ports": [{"name": "http", "containerPort": 6006}]}) == found


def test_an_unknown_named_port_is_an_error() -> None:
    with pytest.raises(ValueError, match="not a number nor a named port"):
        resolve_port("grpc", {"ports": []})


def test_a_cluster_ip_service_proxies_to_its_ready_pods_target_ports() -> None:
    service = {
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "clusterIP": "10.96.0.9",
            "selector": {"app": "web"},
            "ports": [
                {"port": 80, "targetPort": "http"},
                {"port": 81, "targetPort": 9000},
                {"port": 53, "protocol": "UDP"},
            ],
        },
    }
    pods = [
        _pod("a", "10.244.0.2", {"app": "web"}),
        _pod("b", "10.244.0.3", {"app": "web"}, ready=False),
        _pod("c", "10.244.0.4", {"app": "other"}),
        _pod("d", "10.244.0.5", {"app": "web"}),
    ]
    containers = {("ns", "a"): [{"ports": [{"name": "http", "containerPort": 8000}]}], ("ns", "d"): []}
    assert hosts.service_backends(service, pods, containers) == {
        80: [("10.244.0.2", 8000)],  # d has no port named http; b is not ready; c is not selected
        81: [("10.244.0.2", 9000), ("10.244.0.5", 9000)],
    }
    headless = {
        "metadata": {"name": "h", "namespace": "ns"},
        "spec": {"clusterIP": "None", "selector": {"a": "b"}},
    }
    assert hosts.service_backends(headless, pods, containers) == {}


def test_a_bind_mounted_file_is_rewritten_on_its_own_inode_and_only_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    replace_in_place(path, b"10.0.0.1 a\n10.0.0.2 b\n")
    inode = path.stat().st_ino
    modified = path.stat().st_mtime_ns
    replace_in_place(path, b"10.0.0.1 a\n10.0.0.2 b\n")
    assert path.stat().st_mtime_ns == modified, "unchanged content is not written"
    replace_in_place(path, b"10.0.0.1 a\n")
    assert path.read_bytes() == b"10.0.0.1 a\n"
    assert path.stat().st_ino == inode
