"""The process kubelet's pure parts: $(VAR) expansion, a container's environment and argv, the image map."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim.kubelet.process.environment import (
    ConfigError,
    PodContext,
    container_argv,
    container_environment,
    quantity,
    service_variables,
)
from kubesim.kubelet.process.expansion import expand, lookup_in
from kubesim.kubelet.process.images import DEFAULT_MAP, ImageMap, ImageMapError, normalize

VARS = {"A": "1", "EMPTY": "", "NESTED": "$(A)"}


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("plain", "plain"),
        ("$(A)", "1"),
        ("x$(A)y$(A)", "x1y1"),
        ("$(MISSING)", "$(MISSING)"),  # undefined references stay as written
        ("$$(A)", "$(A)"),  # escaped
        ("$$$(A)", "$1"),
        ("$$", "$"),
        ("$", "$"),
        ("a$b", "a$b"),
        ("$(A", "$(A"),  # incomplete: kept, scanning goes on
        ("$($(A)", "$($(A)"),  # the name runs to the first `)`: "$(A" is undefined
        ("$()", "$()"),
        ("$(EMPTY)", ""),
        ("$(NESTED)", "$(A)"),  # one pass: a value is not expanded again
    ],
)
def test_expansion_follows_the_kubelet(text: str, expanded: str) -> None:
    assert expand(text, lookup_in(VARS)) == expanded


def test_lookup_tries_mappings_in_order() -> None:
    assert expand("$(A)", lookup_in({"A": "first"}, {"A": "second"})) == "first"
    assert expand("$(B)", lookup_in({"A": "first"}, {"B": "second"})) == "second"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1),
        ("500m", 0.5),
        ("2Gi", 2 * 2**30),
        ("1k", 1000),
        ("1e3", 1000),
        ("1.5", 1.5),
        ("128Mi", 2**27),
    ],
)
def test_quantities(text: str, value: float) -> None:
    assert float(quantity(text)) == value


@pytest.mark.parametrize("text", ["", "Gi", "1Xi", "abc", "1 Gi"])
def test_not_quantities(text: str) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        quantity(text)


class Objects:
    def __init__(
        self, config_maps: dict[str, Any] | None = None, secrets: dict[str, Any] | None = None
    ) -> None:
        self.config_maps, self.secrets = config_maps or {}, secrets or {}

    def config_map(self, name: str) -> Any:
        return self.config_maps.get(name)

    def secret(self, name: str) -> Any:
        return self.secrets.get(name)


def _pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "labels": {"app": "x", "tier": "a"}},
        "spec": {"serviceAccountName": "runner", "nodeName": "node-1", **spec},
    }


SERVICE = {
    "metadata": {"name": "my-svc", "namespace": "ns"},
    "spec": {"clusterIP": "10.96.0.7", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
}
MASTER = {
    "metadata": {"name": "kubernetes"},
    "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443}]},
}


def _context(pod: dict[str, Any] | None = None, services: tuple[Any, ...] = (SERVICE,)) -> PodContext:
    return PodContext(pod or _pod(), "10.244.0.5", "172.18.0.2", "p", services, MASTER)


def test_service_variables_are_docker_links() -> None:
    assert service_variables([SERVICE]) == {
        "MY_SVC_SERVICE_HOST": "10.96.0.7",
        "MY_SVC_SERVICE_PORT": "80",
        "MY_SVC_SERVICE_PORT_HTTP": "80",
        "MY_SVC_PORT": "tcp://10.96.0.7:80",
        "MY_SVC_PORT_80_TCP": "tcp://10.96.0.7:80",
        "MY_SVC_PORT_80_TCP_PROTO": "tcp",
        "MY_SVC_PORT_80_TCP_PORT": "80",
        "MY_SVC_PORT_80_TCP_ADDR": "10.96.0.7",
    }
    headless = {"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}}
    assert service_variables([headless]) == {}


def test_environment_is_exactly_what_the_spec_gives() -> None:
    container = {
        "name": "main",
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}, {"secretRef": {"name": "s"}}],
        "env": [
            {"name": "PLAIN", "value": "v-$(CM_key)-$(MY_SVC_SERVICE_HOST)-$(LATER)"},
            {"name": "LATER", "value": "late"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
            {"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "key"}}},
            {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "s", "key": "password"}}},
            {
                "name": "MEM",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
            },
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu"}}},
            {"name": "MY_SVC_SERVICE_PORT", "value": "overridden"},
        ],
        "resources": {"limits": {"memory": "256Mi"}, "requests": {"cpu": "250m"}},
    }
    objects = Objects(
        {"cm": {"data": {"key": "cm-value", "bad name": "skipped"}}},
        {"s": {"data": {"password": base64.b64encode(b"secret").decode()}}},
    )
    env = container_environment(container, _context(), objects, {"PATH": "/image/bin:/usr/bin", "LANG": "C"})
    assert env["PLAIN"] == "v-cm-value-10.96.0.7-$(LATER)"  # only what is defined so far expands
    assert env["POD"] == "p"
    assert env["IP"] == "10.244.0.5"
    assert env["APP"] == "x"
    assert env["SA"] == "runner"
    assert env["KEY"] == "cm-value"
    assert env["PASSWORD"] == "secret"
    assert env["CM_key"] == "cm-value"
    assert "CM_bad name" not in env
    assert env["MEM"] == "256"
    assert env["CPU"] == "1"  # rounded up, as the kubelet does
    assert env["MY_SVC_SERVICE_PORT"] == "overridden"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    assert env["KUBERNETES_SERVICE_PORT"] == "443"
    assert env["PATH"] == "/image/bin:/usr/bin"
    assert env["LANG"] == "C"
    assert env["HOSTNAME"] == "p"
    assert env["HOME"] == "/root"
    assert "VIRTUAL_ENV" not in env
    assert "USER" not in env  # nothing of the developer's environment


def test_service_links_can_be_turned_off_but_not_the_masters() -> None:
    env = container_environment({"name": "c"}, _context(_pod(enableServiceLinks=False)), Objects(), {})
    assert "MY_SVC_SERVICE_HOST" not in env
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k"}}}],
            'configmap "nope" not found',
        ),
        (
            [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "nope"}}}],
            "couldn't find key nope in ConfigMap ns/cm",
        ),
        (
            [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k"}}}],
            'secret "nope" not found',
        ),
        ([{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.nothing"}}}], "unsupported fieldRef"),
    ],
)
def test_unresolvable_references_are_config_errors(env: list[Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        container_environment({"name": "c", "env": env}, _context(), Objects({"cm": {"data": {}}}), {})


def test_optional_references_are_left_out() -> None:
    env = container_environment(
        {
            "name": "c",
            "envFrom": [{"configMapRef": {"name": "nope", "optional": True}}],
            "env": [
                {"name": "X", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k", "optional": True}}}
            ],
        },
        _context(),
        Objects(),
        {},
    )
    assert "X" not in env


@pytest.mark.parametrize(
    ("container", "argv"),
    [
        ({}, ["python", "-i"]),  # the image's entrypoint and default args
        ({"args": ["train.py", "$(LR)"]}, ["python", "train.py", "0.1"]),
        ({"command": ["sh", "-c"], "args": ["echo $(LR) $$(LR)"]}, ["sh", "-c", "echo 0.1 $(LR)"]),
        ({"command": ["run"]}, ["run"]),  # a command drops the image's default args
        ({"args": []}, ["python"]),
    ],
)
def test_argv(container: dict[str, Any], argv: list[str]) -> None:
    assert container_argv(container, {"LR": "0.1"}, ["python"], ["-i"]) == argv


def test_image_map_resolves_globs_and_docker_hub_names(tmp_path: Path) -> None:
    images = ImageMap.parse(DEFAULT_MAP, tmp_path, "map.yaml")
    python = images.resolve("docker.io/library/python:3.11@sha256:abc")
    assert python is not None
    assert python.command == ("python3",)
    assert python.environment()["PATH"].startswith("/opt/kubesim/python/bin:")
    tensorflow = images.resolve("tensorflow/tensorflow:2.20.0")
    assert tensorflow is not None
    assert tensorflow.path == (str(tmp_path / ".venv-frameworks/bin"),)
    assert tensorflow.missing() == f"{tmp_path}/.venv-frameworks/.installed does not exist"
    assert images.resolve("busybox") is not None
    assert images.resolve("ghcr.io/someone/private:1") is None
    assert "map.yaml" in images.unmapped_message("ghcr.io/someone/private:1")
    assert normalize("index.docker.io/tensorflow/tensorflow:1") == "tensorflow/tensorflow:1"


def test_image_map_file_is_written_with_defaults_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "image-map.yaml"
    loaded = ImageMap.load(path, tmp_path)
    assert path.exists()
    assert loaded.resolve("python:3.12") is not None
    path.write_text("images:\n- image: x\n  paths: []\n")
    with pytest.raises(ImageMapError, match=r"images\[0\]\.paths: unknown field"):
        ImageMap.load(path, tmp_path)
    path.write_text("images:\n- image: x\n  env: {A: 1}\n")
    with pytest.raises(ImageMapError, match=r"images\[0\]\.env"):
        ImageMap.load(path, tmp_path)


def test_our_own_image_runs_the_repository_at_app_as_the_dockerfile_lays_it_out(tmp_path: Path) -> None:
    image = ImageMap.parse(DEFAULT_MAP, tmp_path, "map.yaml").resolve("argoml/argoml:latest")
    assert image is not None
    assert not image.simulate
    assert image.mounts == ((str(tmp_path / "."), "/app"),)
    assert image.path == (str(tmp_path / ".venv/bin"),)
    assert image.env["DJANGO_SETTINGS_MODULE"] == "argoml_site.settings"
    assert image.env["PYTHONPATH"] == "/app"
    dockerfile = (Path(__file__).resolve().parents[2] / "deploy" / "Dockerfile").read_text()
    assert "WORKDIR /app" in dockerfile
    for name in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE", "ARGOML_APP_DIR"):
        assert f"{name}={image.env[name]}" in dockerfile


@pytest.mark.parametrize(
    ("mounts", "message"),
    [
        ("x", r"mounts: must be a list"),
        ([{"host": "."}], r"mounts\[0\]: must be a mapping with exactly `host` and `container`"),
        ([{"host": ".", "container": "app"}], r"mounts\[0\]\.container: must be an absolute path"),
        ([{"host": ".", "container": "/a/../b"}], r"mounts\[0\]\.container: must be an absolute path"),
        ([{"host": ".", "container": "/"}], r"mounts\[0\]\.container: must not be /"),
        ([{"host": "", "container": "/app"}], r"mounts\[0\]\.host: must be a path"),
    ],
)
def test_a_bad_mount_in_the_image_map_names_its_field(tmp_path: Path, mounts: object, message: str) -> None:
    with pytest.raises(ImageMapError, match=r"map.yaml: images\[0\]\." + message):
        ImageMap.parse({"images": [{"image": "x", "mounts": mounts}]}, tmp_path, "map.yaml")


def test_simulated_images_make_the_whole_pod_scripted(tmp_path: Path) -> None:
    images = ImageMap.parse(DEFAULT_MAP, tmp_path, "map.yaml")
    kubeflow = {"spec": {"containers": [{"image": "docker.io/kubeflow/xgboost-dist-iris:latest"}]}}
    mixed = {
        "spec": {
            "initContainers": [{"image": "mpioperator/mpi-pi:openmpi"}],
            "containers": [{"image": "python:3"}],
        }
    }
    real = {"spec": {"containers": [{"image": "tensorflow/tensorflow:2.21.0"}, {"image": "busybox"}]}}
    assert images.simulates(kubeflow)
    assert images.simulates(mixed)
    assert not images.simulates(real)
    with pytest.raises(ImageMapError, match=r"images\[0\]\.simulate: must be true or false"):
        ImageMap.parse({"images": [{"image": "x", "simulate": "yes"}]}, tmp_path, "map.yaml")


def test_kubeflow_trainers_xgboost_and_jax_runtime_images_run_on_the_frameworks_virtualenv(
    tmp_path: Path,
) -> None:
    """Trainer's runtimes name these images (manifests/base/runtimes, untagged, and `:v2.3.0` in the
    overlay); their TrainJobs bring the command, which NVIDIA's entrypoint runs as given."""
    images = ImageMap.parse(DEFAULT_MAP, tmp_path, "map.yaml")
    for reference in (
        "ghcr.io/kubeflow/trainer/xgboost-runtime",
        "ghcr.io/kubeflow/trainer/xgboost-runtime:v2.3.0",
        "nvcr.io/nvidia/jax:25.10-py3",
    ):
        found = images.resolve(reference)
        assert found is not None, reference
        assert not found.simulate
        assert found.path == (str(tmp_path / ".venv-frameworks/bin"),)
        assert found.command == ()
        assert container_argv({"args": ["python", "train.py"]}, {}, found.command, ()) == [
            "python",
            "train.py",
        ]


@pytest.mark.parametrize(
    "reference",
    [
        "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",  # torch-distributed, torch_distributed_with_cache
        "ghcr.io/kubeflow/trainer/deepspeed-runtime",
        "ghcr.io/kubeflow/trainer/mlx-runtime:v2.3.0",
        "ghcr.io/kubeflow/trainer/torchtune-trainer",
        "ghcr.io/kubeflow/trainer/dataset-initializer",
        "ghcr.io/kubeflow/trainer/model-initializer:v2.3.0",
    ],
)
def test_kubeflow_trainers_other_runtime_images_stay_simulated(tmp_path: Path, reference: str) -> None:
    found = ImageMap.parse(DEFAULT_MAP, tmp_path, "map.yaml").resolve(reference)
    assert found is not None
    assert found.simulate


def test_the_written_map_says_why_each_framework_image_runs_or_is_simulated(tmp_path: Path) -> None:
    path = tmp_path / "image-map.yaml"
    ImageMap.load(path, tmp_path)
    text = path.read_text()
    assert yaml.safe_load(text) == DEFAULT_MAP
    lines = text.splitlines()
    for pattern in (
        "ghcr.io/kubeflow/trainer/xgboost-runtime",
        "pytorch/pytorch:*",
        "ghcr.io/kubeflow/trainer/*",
    ):
        entry = lines.index(f"- image: {pattern}")
        assert lines[entry - 1].startswith("# "), pattern
    assert "# PyTorch" in text
    assert "xgboost-cpu is the same XGBoost" in text
