"""The process kubelet with the dev stack's artifact repository: the image map's read-only mounts (and the
masks that stay in force inside them), our own image running the repository at /app, and the S3 server
(kubesim/s3/) reached by pods through a Service, as `make run` wires them."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kubesim.kubelet.process.images import DEFAULT_MAP, PYTHON_SHIMS
from kubesim.kubelet.process.runtime import HostService
from kubesim.processes import ProcessOptions
from kubesim.s3.server import S3Server, running
from kubesim.s3.stores import DirectoryStore
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from kubesim.tests.test_process_kubelet import NAMESPACE, finished, pod, status, wait_for

REPO = Path(__file__).resolve().parents[2]
BUCKET = "argoml-artifacts"
#: A folder inside the repository the kubelet is told to hide, as `make run` hides `.dev` (tokens, keys, the
#: database); not `.dev` itself, which holds this test's own sandbox when make test runs it
MASKED_IN_REPO = REPO / ".dev" / f"mask-probe-{os.getpid()}"


class Stack:
    def __init__(self, sim: Simulator, s3: S3Server, root: Path, tree: Path) -> None:
        self.sim, self.s3, self.root, self.tree = sim, s3, root, tree

    def run(self, name: str, image: str, command: list[str]) -> tuple[str, str]:
        self.sim.store.create(pod(name, command, container={"image": image}), NAMESPACE)
        phase = finished(self.sim, name)["phase"]
        return phase, self.sim.kubelet.logs.text(NAMESPACE, name, "main")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("artifacts")
    tree = root / "tree"
    (tree / "hidden").mkdir(parents=True)
    (tree / "shown.txt").write_text("visible")
    (tree / "hidden" / "key").write_text("private")
    image_map = root / "image-map.yaml"
    mounted = {"image": "mounted:*", "path": [PYTHON_SHIMS], "command": ["python3"],
               "mounts": [{"host": str(tree), "container": "/opt/tree"}]}  # fmt: skip
    image_map.write_text(yaml.safe_dump({"images": [mounted, *DEFAULT_MAP["images"]]}))
    pods = root / "pods"
    with running(DirectoryStore(pods / "artifacts", BUCKET), "dev-access", "dev-secret") as s3:
        port = int(s3.endpoint.rsplit(":", 1)[1])
        MASKED_IN_REPO.mkdir(parents=True, exist_ok=True)
        (MASKED_IN_REPO / "admin-credentials").write_text("secret")
        masked = (str(tree / "hidden"), str(MASKED_IN_REPO))
        options = ProcessOptions(
            root=pods, image_map=image_map, base=REPO, masked_paths=masked,
            exposed=(HostService("argoml", "argoml-artifacts", 9000, "127.0.0.1", port),),
        )  # fmt: skip
        with running_simulator(kubelet=True, argo=True, namespaces=[NAMESPACE], processes=options) as sim:
            assert sim.kubelet.processes is not None
            try:
                yield Stack(sim, s3, pods, tree)
            finally:
                shutil.rmtree(MASKED_IN_REPO, ignore_errors=True)


def test_an_image_mount_is_read_only_and_keeps_the_masked_paths_hidden(stack: Stack) -> None:
    script = (
        "import os\n"
        "print(open('/opt/tree/shown.txt').read())\n"
        "print(sorted(os.listdir('/opt/tree/hidden')))\n"
        "try:\n    open('/opt/tree/new', 'w')\n"
        "except OSError as error:\n    print('write refused', error.errno)\n"
    )
    phase, log = stack.run("mounted", "mounted:1", ["python3", "-c", script])
    assert phase == "Succeeded", log
    assert log.splitlines() == ["visible", "[]", "write refused 30"]  # EROFS
    assert not (stack.tree / "new").exists()


def test_our_image_runs_the_repository_at_app_and_reads_the_repository_through_its_service(
    stack: Stack,
) -> None:
    (stack.root / "artifacts" / "wf" / "pod").mkdir(parents=True)
    (stack.root / "artifacts" / "wf" / "pod" / "out.txt").write_text("written by a step")
    script = (
        "import os, django\n"
        "from minio import Minio\n"
        "client = Minio('argoml-artifacts.argoml.svc:9000', 'dev-access', 'dev-secret', secure=False)\n"
        f"print(client.get_object('{BUCKET}', 'wf/pod/out.txt').read().decode())\n"
        "print(os.path.exists('/app/manage.py'), os.environ['DJANGO_SETTINGS_MODULE'])\n"
        f"print(sorted(os.listdir('/app/.dev/{MASKED_IN_REPO.name}')))\n"
    )
    phase, log = stack.run("ours", "argoml/argoml:latest", ["python", "-c", script])
    assert phase == "Succeeded", log
    lines = log.splitlines()
    assert lines[:2] == ["written by a step", "True argoml_site.settings"]
    assert lines[2] == "[]", "a masked folder of the repository stays hidden inside /app"


def test_an_image_whose_runtime_lies_under_tmp_runs_it(tmp_path: Path) -> None:
    """A repository cloned under /tmp: its virtualenvs are where each container gets a /tmp of its own, so
    the kubelet binds them back (found by a newcomer's walk: every training pod exited 127)."""
    home = Path(tempfile.mkdtemp(prefix="venv-", dir="/tmp"))
    try:
        (home / "bin").mkdir()
        (home / "lib").mkdir()
        (home / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (home / "lib" / "marker").write_text("beside bin")
        tool = home / "bin" / "tool"
        tool.write_text(f"#!/bin/sh\necho runs; cat {home}/lib/marker\n")
        tool.chmod(0o755)
        image_map = tmp_path / "image-map.yaml"
        entry = {"image": "cloned-under-tmp:*", "path": [str(home / "bin")], "command": ["tool"]}
        image_map.write_text(yaml.safe_dump({"images": [entry]}))
        options = ProcessOptions(root=tmp_path / "pods", image_map=image_map, base=REPO)
        with running_simulator(kubelet=True, namespaces=[NAMESPACE], processes=options) as sim:
            sim.store.create(pod("tmp-runtime", [], container={"image": "cloned-under-tmp:1"}), NAMESPACE)
            phase = finished(sim, "tmp-runtime")["phase"]
            log = sim.kubelet.logs.text(NAMESPACE, "tmp-runtime", "main")
        assert (phase, log.splitlines()) == ("Succeeded", ["runs", "beside bin"])
    finally:
        shutil.rmtree(home, ignore_errors=True)


def refused(pod_status: dict) -> dict | None:
    state = ((pod_status.get("containerStatuses") or [{}])[0].get("state") or {}).get("waiting") or {}
    return state if state.get("reason") == "CreateContainerConfigError" else None


def test_an_image_mount_of_what_the_kubelet_hides_is_refused_with_the_reason(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    image_map = tmp_path / "image-map.yaml"
    entry = {"image": "leaky:*", "path": [PYTHON_SHIMS], "command": ["python3"],
             "mounts": [{"host": str(hidden), "container": "/opt/hidden"}]}  # fmt: skip
    image_map.write_text(yaml.safe_dump({"images": [entry]}))
    options = ProcessOptions(
        root=tmp_path / "pods", image_map=image_map, base=REPO, masked_paths=(str(hidden),)
    )
    with running_simulator(kubelet=True, namespaces=[NAMESPACE], processes=options) as sim:
        sim.store.create(pod("leaky", ["python3", "-c", "pass"], container={"image": "leaky:1"}), NAMESPACE)
        waiting = wait_for(lambda: refused(status(sim, "leaky")), "the container to be refused")
    assert waiting["reason"] == "CreateContainerConfigError"
    assert "which the kubelet hides from pods" in waiting["message"]
    assert os.path.isdir(hidden)


GEN = {
    "name": "gen",
    "container": {"image": "python:3.11", "command": ["python3", "-c",
                  "import os; os.makedirs('/tmp/out/d'); open('/tmp/out/d/x.txt', 'w').write('42')"]},
    "outputs": {"artifacts": [{"name": "data", "path": "/tmp/out/d"}]},
}  # fmt: skip
USE = {
    "name": "use",
    "inputs": {"artifacts": [{"name": "data", "path": "/tmp/in"}]},
    "container": {
        "image": "python:3.11",
        "command": ["python3", "-c", "print(open('/tmp/in/x.txt').read())"],
    },
}


def workflow(stack: Stack, name: str, templates: list[dict]) -> dict:
    body = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"entrypoint": "main", "templates": templates},
    }
    stack.sim.store.create(body, NAMESPACE)

    def done() -> dict | None:
        found = stack.sim.store.get("workflows.argoproj.io", name, NAMESPACE)
        return found if (found.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Error") else None

    return wait_for(done, f"workflow {name} to finish", within=120)


def node_named(found: dict, display: str) -> dict:
    return next(n for n in found["status"]["nodes"].values() if n["displayName"] == display)


@pytest.mark.parametrize(
    ("kind", "main"),
    [
        ("steps", {"name": "main", "steps": [
            [{"name": "gen", "template": "gen"}],
            [{"name": "use", "template": "use", "arguments": {"artifacts": [
                {"name": "data", "from": "{{steps.gen.outputs.artifacts.data}}"}]}}],
        ]}),
        ("dag", {"name": "main", "dag": {"tasks": [
            {"name": "gen", "template": "gen"},
            {"name": "use", "template": "use", "dependencies": ["gen"], "arguments": {"artifacts": [
                {"name": "data", "from": "{{tasks.gen.outputs.artifacts.data}}"}]}},
        ]}}),
    ],
)  # fmt: skip
def test_a_steps_output_artifact_is_the_next_steps_input_through_the_repository(stack, kind, main):
    found = workflow(stack, f"pass-{kind}", [main, GEN, USE])
    assert found["status"]["phase"] == "Succeeded", json.dumps(found["status"], indent=1)
    use = node_named(found, "use")
    [data] = use["inputs"]["artifacts"]
    assert data["path"] == "/tmp/in"
    assert data["s3"]["key"].endswith("/data.tgz")
    assert (stack.root / "artifacts" / data["s3"]["key"]).is_file()
    assert stack.sim.kubelet.logs.text(NAMESPACE, use["podName"], "main") == "42\n"


def test_an_input_artifact_missing_from_the_repository_errors_the_node_as_argo_does(stack):
    missing = {
        **USE,
        "inputs": {"artifacts": [{"name": "data", "path": "/tmp/in", "s3": {"key": "nope/x.tgz"}}]},
    }
    main = {"name": "main", "steps": [[{"name": "use", "template": "use"}]]}
    found = workflow(stack, "missing-input", [main, missing])
    assert found["status"]["phase"] == "Failed"
    use = node_named(found, "use")
    assert use["phase"] == "Error"
    assert use["message"] == (
        "init: Error (exit code 1): artifact data failed to load: The specified key does not exist."
    )


def test_outputs_at_the_top_level_are_saved_and_a_steps_symlinks_are_never_followed(stack, tmp_path):
    secret = tmp_path / "host-secret"
    secret.write_text("host only")
    script = (
        "import os\n"
        "os.makedirs('/logs/run'); open('/logs/run/events', 'w').write('scalars')\n"
        "os.makedirs('/tmp/out', exist_ok=True); open('/tmp/out/loss', 'w').write('0.5')\n"
        f"os.symlink('{secret}', '/tmp/out/leak'); os.symlink('{tmp_path}', '/tmp/out/dir')\n"
    )
    step = {
        "name": "main",
        "container": {"image": "python:3.11", "command": ["python3", "-c", script]},
        "outputs": {
            "parameters": [
                {"name": "loss", "valueFrom": {"path": "/tmp/out/loss"}},
                {"name": "leaked", "valueFrom": {"path": "/tmp/out/leak", "default": "none"}},
            ],
            "artifacts": [
                {"name": "logs", "path": "/logs", "archive": {"none": {}}},
                {"name": "leak", "path": "/tmp/out/leak", "archive": {"none": {}}},
                {"name": "through", "path": "/tmp/out/dir/host-secret", "archive": {"none": {}}},
            ],
        },
    }
    found = workflow(stack, "top-level", [step])
    assert found["status"]["phase"] == "Succeeded", json.dumps(found["status"], indent=1)
    outputs = node_named(found, "top-level")["outputs"]
    assert {p["name"]: p["value"] for p in outputs["parameters"]} == {"loss": "0.5", "leaked": "none"}
    pod_dir = stack.root / "artifacts" / "top-level" / "top-level"
    assert (pod_dir / "logs" / "run" / "events").read_text() == "scalars"
    assert not (pod_dir / "leak").exists()
    assert not (pod_dir / "through").exists()
    assert "host only" not in "".join(p.read_text() for p in pod_dir.rglob("*") if p.is_file())
