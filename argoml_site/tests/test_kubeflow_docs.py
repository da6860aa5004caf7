"""docs/kubeflow.md's "First steps on `make run`" works as written, so the page cannot rot: its kubectl
session and both Kubeflow SDK snippets run, copied out of the page, against the real dev stack (`manage.py
devstack`, as `make run` starts it), with Kubeflow's SDKs from their own virtualenv; Ctrl-C then stops the
stack without a traceback."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from argoml_site.tests.test_devstack import (
    STACK_VARIABLES,
    StackOutput,
    free_port,
    interrupt,
    processes_started_with,
    start_stack,
    without_traceback,
)
from kubesim.testing import KUBECTL

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "kubeflow.md"
SDK_PYTHON = REPO / ".venv-kubeflow-sdk" / "bin" / "python"
FENCED = re.compile(r"^```(\w+)\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def blocks(language: str) -> list[str]:
    """The page's fenced blocks of one language, in order."""
    return [body for lang, body in FENCED.findall(DOC.read_text()) if lang == language]


def snippets() -> dict[str, str]:
    """The Python snippets by the file name their first line gives (`# hello_training_client.py: ...`)."""
    found = {}
    for body in blocks("python"):
        first = body.splitlines()[0]
        if match := re.fullmatch(r"# (\w+\.py)\b.*", first):
            found[match.group(1)] = body
    return found


def session(containing: str) -> list[list[str]]:
    """The commands of the first shell block holding `containing`, comments dropped, words split."""
    body = next(body for body in blocks("sh") if containing in body)
    return [shlex.split(line, comments=True) for line in body.splitlines() if line.strip()]


@dataclass
class Stack:
    process: subprocess.Popen[str]
    output: StackOutput
    dev_dir: Path
    kubeconfig: str

    def env(self) -> dict[str, str]:
        """A user's shell beside `make run`, after the page's `export KUBECONFIG=...`."""
        env = {key: value for key, value in os.environ.items() if key not in STACK_VARIABLES}
        return {**env, "KUBECONFIG": self.kubeconfig}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if not SDK_PYTHON.exists():
        pytest.fail(f"{SDK_PYTHON} is missing: `make` builds it (requirements-kubeflow-sdk.txt)")
    dev_dir = tmp_path_factory.mktemp("dev")
    process, output = start_stack(dev_dir, free_port())
    try:
        kubeconfig = output.wait_for(r"export KUBECONFIG=(\S+)").group(1)
        output.wait_for(r"Argo-ML is up", timeout=180)
        yield Stack(process, output, dev_dir, kubeconfig)
    finally:
        if process.poll() is None:
            interrupt(process)
        for pid in processes_started_with(f"ARGOML_DEV_DIR={dev_dir}"):
            os.kill(pid, signal.SIGKILL)


def test_the_install_command_pins_what_the_sdk_tests_run():
    (install,) = [words for words in session("pip install") if "install" in words]
    pinned = {word for word in install if "==" in word}
    assert pinned == {"kubeflow-training==1.9.4", "kubeflow==0.5.0"}
    requirements = (REPO / "requirements-kubeflow-sdk.txt").read_text().splitlines()
    assert pinned <= set(requirements)


def test_the_kubectl_session_applies_kubeflows_manifest_in_the_kubeflow_namespace(stack):
    commands = session("kubectl get kfpytorchjob")
    assert commands[0] == ["export", "KUBECONFIG=$PWD/.dev/kubeconfig"]  # the stack's own, here
    said = {}
    for words in commands[1:]:
        assert words[0] == "kubectl", words
        done = subprocess.run(
            [str(KUBECTL), *words[1:]], cwd=REPO, env=stack.env(), capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, (words, done.stderr)
        said[" ".join(words[1:3])] = done.stdout
    assert "pytorchjob.kubeflow.org/mnist-kubeflow created" in said["apply -f"]
    assert said["get kfpytorchjob"].splitlines()[1].split()[0] == "mnist-kubeflow"
    assert "pytorchjob.kubeflow.org/mnist-kubeflow" in said["get training"]


def run_snippet(stack: Stack, name: str, tmp_path: Path) -> str:
    script = tmp_path / name
    script.write_text(snippets()[name])
    done = subprocess.run(
        [str(SDK_PYTHON), str(script)],
        cwd=tmp_path,
        env=stack.env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_training_client_snippet_runs_a_pytorchjob_from_a_function(stack, tmp_path):
    printed = run_snippet(stack, "hello_training_client.py", tmp_path)
    assert printed.strip().splitlines()[-1] == "hello from rank 0 of 1", printed


def test_the_trainer_client_snippet_runs_a_trainjob_on_a_ready_made_runtime(stack, tmp_path):
    runtimes, finished = run_snippet(stack, "hello_trainer_client.py", tmp_path).splitlines()[-2:]
    assert "torch-distributed" in runtimes
    _name, status, steps = finished.split(" ", 2)
    assert (status, steps) == ("Complete", "['node-0', 'node-1']")


def test_ctrl_c_after_the_sessions_stops_the_stack_without_a_traceback(stack):
    assert interrupt(stack.process) == 0
    without_traceback(stack.output)
    assert processes_started_with(f"ARGOML_DEV_DIR={stack.dev_dir}") == []


def test_every_snippet_of_the_page_is_run_here():
    assert set(snippets()) == {"hello_training_client.py", "hello_trainer_client.py"}
