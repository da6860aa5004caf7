"""``manage.py transpile``: writes the Workflow where asked, reports every problem, and submits on request."""

import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.core.management import CommandError, call_command

from kube.errors import Forbidden
from kube.resources import WORKFLOW
from pipelines import actions
from workflows.tests.pipeline_examples import FULL_CONFIG_YAML, FULL_PIPELINE_YAML


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with the full example, and the image tag CI would inject."""
    (tmp_path / "churn.yaml").write_text(FULL_PIPELINE_YAML)
    (tmp_path / "argo.yaml").write_text(FULL_CONFIG_YAML)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARGOML_VAR_tag", "ci-42")
    return tmp_path


def transpile(*args: str) -> tuple[str, str]:
    stdout, stderr = StringIO(), StringIO()
    call_command("transpile", *args, stdout=stdout, stderr=stderr)
    return stdout.getvalue(), stderr.getvalue()


def test_the_workflow_is_written_to_the_configured_output_file(files: Path) -> None:
    _, stderr = transpile("churn.yaml", "--config", "argo.yaml")
    workflow = yaml.safe_load((files / "pipeline.yaml").read_text())
    assert workflow["kind"] == "Workflow"
    assert workflow["spec"]["templates"][1]["container"]["image"] == "registry.example.com/churn:ci-42"
    assert "wrote the workflow to pipeline.yaml" in stderr


def test_output_dash_writes_the_yaml_to_stdout_and_parameters_reach_the_arguments(files: Path) -> None:
    stdout, _ = transpile("churn.yaml", "--config", "argo.yaml", "--output", "-", "-p", 'regions=["eu"]')
    workflow = yaml.safe_load(stdout)
    assert {"name": "regions", "value": '["eu"]'} in workflow["spec"]["arguments"]["parameters"]
    assert not (files / "pipeline.yaml").exists()


def test_every_problem_is_printed_and_nothing_is_written(files: Path) -> None:
    (files / "argo.yaml").write_text("docker_image: churn:1\ncpu_limit: lots\n")
    stderr = StringIO()
    with pytest.raises(CommandError, match="2 problems found; nothing was written"):
        call_command("transpile", "churn.yaml", "--config", "argo.yaml", "-p", "nope=1", stderr=stderr)
    assert stderr.getvalue().splitlines() == [
        "config: cpu_limit: 'lots' is not a Kubernetes quantity (examples: 500m, 2, 1G, 512Mi)",
        "--parameter nope: is not a parameter of the pipeline (declared: learning_rate, regions)",
    ]
    assert not (files / "pipeline.yaml").exists()


def test_the_definition_is_never_overwritten_by_the_default_output_file(files: Path) -> None:
    (files / "churn.yaml").rename(files / "pipeline.yaml")
    with pytest.raises(CommandError, match=r"pipeline\.yaml is one of the input files"):
        transpile("pipeline.yaml", "--config", "argo.yaml")
    assert (files / "pipeline.yaml").read_text() == FULL_PIPELINE_YAML


def test_a_missing_file_is_a_problem_not_a_traceback(files: Path) -> None:
    stderr = StringIO()
    with pytest.raises(CommandError):
        call_command("transpile", "missing.yaml", "--config", "argo.yaml", stderr=stderr)
    assert stderr.getvalue() == "pipeline: missing.yaml: cannot be read: No such file or directory\n"


class FakeClient:
    def __init__(self, error: Exception | None = None) -> None:
        self.created: list[tuple[Any, dict[str, Any], str | None]] = []
        self.error = error

    def create(self, rtype: Any, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        if self.error:
            raise self.error
        self.created.append((rtype, body, namespace))
        return {**body, "metadata": {**body["metadata"], "name": "churn-model-abcde"}}


@pytest.mark.django_db  # the namespace's pod security is read before submitting
def test_submit_creates_the_workflow_in_the_namespace(files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeClient()
    monkeypatch.setattr(actions, "get_client", lambda: client)
    _, stderr = transpile("churn.yaml", "--config", "argo.yaml", "--submit", "--namespace", "team-a")
    [(rtype, body, namespace)] = client.created
    assert (rtype, namespace) == (WORKFLOW, "team-a")
    assert body == yaml.safe_load((files / "pipeline.yaml").read_text())
    assert "submitted workflow churn-model-abcde in namespace team-a" in stderr


@pytest.mark.django_db  # the namespace's pod security is read before submitting
def test_a_refused_submission_fails_the_command(files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(actions, "get_client", lambda: FakeClient(Forbidden("workflows is forbidden")))
    with pytest.raises(CommandError, match="submitting to namespace team-a failed: workflows is forbidden"):
        transpile("churn.yaml", "--config", "argo.yaml", "--submit", "-n", "team-a")


def test_submit_needs_a_namespace(files: Path) -> None:
    with pytest.raises(CommandError, match="--submit and --namespace go together"):
        transpile("churn.yaml", "--config", "argo.yaml", "--submit")


def test_problems_make_manage_py_exit_non_zero(files: Path) -> None:
    (files / "argo.yaml").write_text("docker_image: churn:1\nimage_pull_policy: always\n")
    finished = subprocess.run(
        [
            sys.executable,
            str(Path(settings.BASE_DIR) / "manage.py"),
            "transpile",
            "churn.yaml",
            "--config",
            "argo.yaml",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert finished.returncode != 0
    assert "config: image_pull_policy: 'always' must be one of IfNotPresent, Always, Never" in finished.stderr
