"""The image map of the process kubelet: which local runtime runs each image.

A real kubelet pulls an image and runs its filesystem; the process kubelet runs every container on the
machine's own filesystem (read-only) and an image only decides what comes first on PATH, the default
command (the image's ENTRYPOINT/CMD) and a few variables (the image's ENV). The map is a YAML file
(`make run` writes `.dev/image-map.yaml` with the defaults below on its first run, for you to edit):

    images:
    - image: "tensorflow/tensorflow:*"    # a glob on the image reference; the first entry that matches wins
      path: [".venv-frameworks/bin"]      # directories put first on PATH (relative to kubesim's directory)
      command: ["python"]                 # the image's ENTRYPOINT + CMD when the container gives no command
      env: {PYTHONUNBUFFERED: "1"}
      requires: ".venv-frameworks/.installed"   # optional: the image "cannot be pulled" until this exists
      mounts: [{host: ".", container: /app}]     # optional: host paths bound read-only into the container

`mounts` stands in for files an image carries: our own image (`argoml/argoml:*`, the TensorBoard log
fetcher) has the repository at /app, as deploy/Dockerfile lays it out, and our `.venv` first on PATH, so
`python /app/manage.py fetch_tensorboard_logs` runs for real. A mount is always read-only, and the paths
the kubelet masks (the dev stack's `.dev`) stay hidden inside it.

An entry may instead say `simulate: true`: the image's code cannot run here (it lives inside the image, or
needs a framework the machine lacks), so a pod using it runs as the scripted kubelet runs pods (each
container exits 0 after two seconds, or serves until deleted under restartPolicy Always). The defaults
map the framework images whose code the frameworks virtualenv runs (TensorFlow's, and Kubeflow Trainer's
XGBoost and JAX runtimes' images, whose TrainJobs bring their own code), and simulate the images of
Kubeflow's own examples and of the frameworks the virtualenv does not hold (PyTorch, MXNet, Paddle, MPI,
Trainer's other runtimes), so their manifests still reach their end state on `make run`. The file written
says above each of these entries why it runs here or cannot (`default_map_text`).

An image no entry matches is not pullable: the container waits in ErrImagePull, then ImagePullBackOff,
with a message that names the image and the file to map it in, as a real kubelet does with an unreachable
registry.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

#: PATH after an image's own directories, as in the usual Debian-based images
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
#: where every container finds `python`/`python3` shims for the machine's own Python (see runtime.py)
PYTHON_SHIMS = "/opt/kubesim/python/bin"

#: Kubeflow Trainer's xgboost-distributed runtime image (cmd/runtimes/xgboost), untagged in Trainer's base
#: manifests and `:v2.3.0` in its overlay
TRAINER_XGBOOST_IMAGE = "ghcr.io/kubeflow/trainer/xgboost-runtime"
#: images whose code runs on the frameworks virtualenv (.venv-frameworks: CPU builds of TensorFlow, JAX,
#: XGBoost, numpy), each with its default command (the image's ENTRYPOINT + CMD; none for NVIDIA's CUDA
#: images, whose entrypoint runs the container's command or args as given) and why it runs here
FRAMEWORK_IMAGES = (
    ("tensorflow/tensorflow:*", ["python"], "TensorFlow's own images: tensorflow-cpu is the same TensorFlow"),
    (
        "argoml.local/frameworks:*",
        ["python"],
        "no registry's image: the name our examples give the virtualenv",
    ),
    *(
        (
            pattern,
            [],
            "Kubeflow Trainer's xgboost-distributed runtime: CUDA's Ubuntu with xgboost[cuda12], numpy and "
            "scikit-learn; the TrainJob brings the code. xgboost-cpu is the same XGBoost (3.2.0, the image "
            "3.0.2); scikit-learn is not in the virtualenv",
        )
        for pattern in (TRAINER_XGBOOST_IMAGE, f"{TRAINER_XGBOOST_IMAGE}:*")
    ),
    (
        "nvcr.io/nvidia/jax:*",
        [],
        "NVIDIA's JAX image, Kubeflow Trainer's jax-distributed runtime; the TrainJob brings the code. "
        "jax[cpu] is the same JAX API (0.10.2)",
    ),
)

#: images whose code cannot run on this machine, and why: pods using them stay scripted (module docstring)
SIMULATED = (
    (
        "pytorch/pytorch:*",
        "PyTorch (Trainer's torch-distributed runtime's image too): not in the frameworks virtualenv, as "
        "PyPI's Linux x86_64 torch is a CUDA build with GBs of nvidia-* packages (docs/training.md)",
    ),
    ("mxnet/*", "MXNet: not in the frameworks virtualenv"),
    ("kubeflow/*", "Kubeflow's example images: their code is inside them"),
    ("kubeflowkatib/*", "Katib's example images: their code is inside them"),
    ("docker.io/sandipanify/jaxgoogle:*", "the image of Kubeflow's JAXJob example: its code is inside it"),
    ("registry.baidubce.com/paddlepaddle/*", "Paddle: not in the frameworks virtualenv"),
    ("paddlepaddle/*", "Paddle: not in the frameworks virtualenv"),
    ("mpioperator/*", "MPI Operator's images: sshd and mpirun, which this machine lacks"),
    ("horovod/*", "Horovod: PyTorch and MPI, which this machine lacks"),
    (
        "ghcr.io/kubeflow/trainer/*",
        "Kubeflow Trainer's other images: deepspeed-runtime and mlx-runtime (sshd and OpenMPI, DeepSpeed on "
        "PyTorch, MLX on CUDA), torchtune-trainer (PyTorch), the dataset and model initializers (they "
        "download from Hugging Face, which pods cannot reach) and the data cache (a Rust server)",
    ),
    ("example.com/*", "RFC 2606 example registries: placeholders in examples (the pipeline example's)"),
    ("*.example.com/*", "RFC 2606 example registries"),
)

DEFAULT_MAP: dict[str, Any] = {
    "images": [
        {
            "image": "python",
            "path": [PYTHON_SHIMS],
            "command": ["python3"],
            "env": {"PYTHONUNBUFFERED": "1"},
        },
        {
            "image": "python:*",
            "path": [PYTHON_SHIMS],
            "command": ["python3"],
            "env": {"PYTHONUNBUFFERED": "1"},
        },
        *(
            {
                "image": pattern,
                "path": [".venv-frameworks/bin"],
                "command": command,
                "env": {"PYTHONUNBUFFERED": "1"} if command else {},
                "requires": ".venv-frameworks/.installed",
            }
            for pattern, command, _why in FRAMEWORK_IMAGES
        ),
        {
            # our own image, as deploy/Dockerfile builds it: the repository at /app, its virtualenv first
            "image": "argoml/argoml:*",
            "path": [".venv/bin"],
            "command": ["/app/deploy/docker-entrypoint.sh", "web"],
            "env": {
                "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONPATH": "/app",
                "DJANGO_SETTINGS_MODULE": "argoml_site.settings",
                "ARGOML_APP_DIR": "/app",
                "ARGOML_DEV_DIR": "/tmp/argoml",  # noqa: S108 - the container's own /tmp, as in the image
                "HOME": "/tmp",  # noqa: S108
            },
            "mounts": [{"host": ".", "container": "/app"}],
            "requires": ".venv/bin/python",
        },
        *(
            {"image": pattern, "path": [], "command": ["sh"]}
            for pattern in ("busybox", "busybox:*", "alpine:*", "debian:*", "ubuntu:*", "bash:*")
        ),
        *({"image": pattern, "simulate": True} for pattern, _why in SIMULATED),
    ]
}
#: what the written map says above an entry
WHY = {pattern: why for pattern, _command, why in FRAMEWORK_IMAGES} | dict(SIMULATED)


def default_map_text() -> str:
    """The defaults as `make run` writes them: each framework and simulated entry under a comment saying
    why its code runs here or cannot."""
    lines = ["# The process kubelet's image map: see kubesim/kubelet/process/images.py and docs/kubesim.md.",
             "images:"]  # fmt: skip
    said = ""
    for entry in DEFAULT_MAP["images"]:
        why = WHY.get(entry["image"], "")
        if why and why != said:
            lines.append(f"# {why}")
        said = why
        lines.append(yaml.safe_dump([entry], sort_keys=False, width=1000).rstrip())
    return "\n".join(lines) + "\n"


FIELDS = ("image", "path", "command", "env", "requires", "simulate", "mounts")


class ImageMapError(ValueError):
    """An image map file that cannot be used; the message names the entry and the field."""


@dataclass(frozen=True)
class LocalImage:
    """What an image runs as on this machine."""

    reference: str
    path: tuple[str, ...]  # absolute directories, first on PATH
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    requires: str = ""  # an absolute file that must exist before the image "pulls"
    simulate: bool = False  # pods using it are scripted, not run
    mounts: tuple[tuple[str, str], ...] = ()  # (absolute host path, container path), bound read-only

    def environment(self) -> dict[str, str]:
        """The image's own variables (ENV), PATH first."""
        return {"PATH": ":".join((*self.path, *SYSTEM_PATH)), **self.env}

    def missing(self) -> str:
        """Why the image cannot be pulled now ('' when it can)."""
        if self.requires and not Path(self.requires).exists():
            return f"{self.requires} does not exist"
        return ""


def normalize(reference: str) -> str:
    """The short form of an image reference: no `docker.io/library/` or `docker.io/`, no digest."""
    name = reference.split("@", 1)[0]
    for prefix in ("docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ImageMapError(f"{where}: must be a list of strings")
    return tuple(value)


def _mounts(value: Any, where: str) -> None:
    """`[{host: PATH, container: /ABSOLUTE}]`: a host path (relative to the map's base) and where it goes."""
    if not isinstance(value, list):
        raise ImageMapError(f"{where}: must be a list of {{host, container}}")
    for index, mount in enumerate(value):
        at = f"{where}[{index}]"
        if not isinstance(mount, Mapping) or set(mount) != {"host", "container"}:
            raise ImageMapError(f"{at}: must be a mapping with exactly `host` and `container`")
        host, container = mount["host"], mount["container"]
        if not isinstance(host, str) or not host or "\0" in host:
            raise ImageMapError(f"{at}.host: must be a path (relative to kubesim's directory, or absolute)")
        if not isinstance(container, str) or not container.startswith("/") or ".." in container.split("/"):
            raise ImageMapError(f"{at}.container: must be an absolute path without '..'")
        if posixpath.normpath(container) == "/":
            raise ImageMapError(f"{at}.container: must not be / (the machine's own root is the image)")


@dataclass(frozen=True)
class ImageMap:
    """The parsed map; `base` is the directory relative paths are resolved against."""

    entries: tuple[Mapping[str, Any], ...]
    base: Path
    source: str  # the file the map came from (named in ErrImagePull messages)

    @classmethod
    def parse(cls, document: Any, base: Path, source: str) -> ImageMap:
        if not isinstance(document, Mapping) or not isinstance(document.get("images"), list):
            raise ImageMapError(f"{source}: must be a mapping with a list `images`")
        entries = []
        for index, entry in enumerate(document["images"]):
            where = f"{source}: images[{index}]"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("image"), str):
                raise ImageMapError(f"{where}.image: must be a string (an image glob)")
            unknown = sorted(set(entry) - set(FIELDS))
            if unknown:
                raise ImageMapError(f"{where}.{unknown[0]}: unknown field ({', '.join(FIELDS)})")
            if not isinstance(entry.get("simulate", False), bool):
                raise ImageMapError(f"{where}.simulate: must be true or false")
            _strings(entry.get("path", []), f"{where}.path")
            _strings(entry.get("command", []), f"{where}.command")
            env = entry.get("env", {})
            if not isinstance(env, Mapping) or not all(isinstance(v, str) for v in env.values()):
                raise ImageMapError(f"{where}.env: must map names to strings")
            if not isinstance(entry.get("requires", ""), str):
                raise ImageMapError(f"{where}.requires: must be a path")
            _mounts(entry.get("mounts", []), f"{where}.mounts")
            entries.append(entry)
        return cls(tuple(entries), base, source)

    @classmethod
    def load(cls, path: Path, base: Path) -> ImageMap:
        """The map in `path`, written with the defaults first if it does not exist."""
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(default_map_text())
        try:
            document = yaml.safe_load(path.read_text())
        except yaml.YAMLError as error:
            raise ImageMapError(f"{path}: not valid YAML: {error}") from None
        return cls.parse(document, base, str(path))

    def _absolute(self, text: str) -> str:
        return str(text if text.startswith("/") else self.base / text)

    def resolve(self, reference: str) -> LocalImage | None:
        """The local runtime of `reference`, or None when nothing maps it."""
        short = normalize(reference)
        for entry in self.entries:
            pattern = str(entry["image"])
            if fnmatch.fnmatchcase(short, pattern) or fnmatch.fnmatchcase(reference, pattern):
                return LocalImage(
                    reference=reference,
                    path=tuple(self._absolute(p) for p in entry.get("path", [])),
                    command=tuple(entry.get("command", [])),
                    env=dict(entry.get("env", {})),
                    requires=self._absolute(entry["requires"]) if entry.get("requires") else "",
                    simulate=bool(entry.get("simulate", False)),
                    mounts=tuple(
                        (self._absolute(str(m["host"])), posixpath.normpath(str(m["container"])))
                        for m in entry.get("mounts", [])
                    ),
                )
        return None

    def simulates(self, pod: Mapping[str, Any]) -> bool:
        """Whether a container of the pod uses an image the map simulates (then the whole pod is scripted)."""
        spec = pod.get("spec") or {}
        for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
            found = self.resolve(str(container.get("image", "")))
            if found is not None and found.simulate:
                return True
        return False

    def unmapped_message(self, reference: str) -> str:
        return (
            f'Failed to pull image "{reference}": the process kubelet runs local runtimes only and no entry '
            f"of {self.source} maps this image; add one (image glob, path, command) and delete the pod"
        )
