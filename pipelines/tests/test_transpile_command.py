"""``manage.py transpile``: writes the Workflow where asked, reports every problem, and submits on request."""

import re
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
from workflows.tests.pipeline_examples import (
    FULL_CONFIG_YAML,
    FULL_PIPELINE_YAML,
    MAGNUS_CONFIG_YAML,
    MAGNUS_PARAMETERS_YAML,
    MAGNUS_PIPELINE_YAML,
)


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
        call_command("transpile", "churn.yaml", "--config", "argo.yaml", "-p", "no pe=1", stderr=stderr)
    assert stderr.getvalue().splitlines() == [
        "config: cpu_limit: 'lots' is not a Kubernetes quantity (examples: 500m, 2, 1G, 512Mi)",
        "--parameter no pe: is not a valid name (letters, digits, '-' and '_')",
    ]
    assert not (files / "pipeline.yaml").exists()


def test_nested_maps_of_more_pods_than_the_bound_are_refused_and_nothing_is_written(files: Path) -> None:
    """Five nested maps of a hundred items: 10^10 pods from a 3 KB file (issue 27)."""
    task = {"type": "task", "command": "echo", "next": "ok"}
    graph: dict[str, Any] = {"start_at": "t", "steps": {"t": task, "ok": {"type": "success"}}}
    for level in reversed(range(5)):
        step = {"type": "map", "items": list(range(100)), "iterate_as": f"i{level}", "branch": graph}
        graph = {
            "start_at": f"m{level}",
            "steps": {f"m{level}": {**step, "next": "ok"}, "ok": {"type": "success"}},
        }
    (files / "churn.yaml").write_text(yaml.safe_dump({"dag": graph}, default_flow_style=True))
    stderr = StringIO()
    with pytest.raises(CommandError, match="1 problem found; nothing was written"):
        call_command("transpile", "churn.yaml", "--config", "argo.yaml", stderr=stderr)
    assert stderr.getvalue().startswith(
        "step m0.m1.m2: items: must be at most 10000 items (MAX_MAP_ITEMS), not 1000000: with the maps around"
    )
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


@pytest.fixture
def configured_cluster(settings: Any) -> None:
    """A kubeconfig is set; the tests replace the client, so it is never read."""
    settings.KUBECONFIG = "/nonexistent/kubeconfig"


@pytest.mark.django_db  # the namespace's pod security is read before submitting
def test_submit_creates_the_workflow_and_writes_no_file(
    files: Path, monkeypatch: pytest.MonkeyPatch, configured_cluster: None
) -> None:
    client = FakeClient()
    monkeypatch.setattr(actions, "get_client", lambda: client)
    _, stderr = transpile("churn.yaml", "--config", "argo.yaml", "--submit", "--namespace", "team-a")
    [(rtype, body, namespace)] = client.created
    assert (rtype, namespace) == (WORKFLOW, "team-a")
    assert body["metadata"]["generateName"] == "churn-model-"
    assert "submitted workflow churn-model-abcde in namespace team-a" in stderr
    assert sorted(path.name for path in files.iterdir()) == ["argo.yaml", "churn.yaml"]


@pytest.mark.django_db
def test_submit_writes_the_workflow_too_when_asked(
    files: Path, monkeypatch: pytest.MonkeyPatch, configured_cluster: None
) -> None:
    client = FakeClient()
    monkeypatch.setattr(actions, "get_client", lambda: client)
    transpile("churn.yaml", "--config", "argo.yaml", "--submit", "-n", "team-a", "--output", "churn-wf.yaml")
    [(_, body, _)] = client.created
    assert body == yaml.safe_load((files / "churn-wf.yaml").read_text())


def test_submit_without_a_cluster_is_a_configuration_error(files: Path, settings: Any) -> None:
    settings.KUBECONFIG, settings.KUBE_IN_CLUSTER = "", False
    with pytest.raises(CommandError, match="--submit needs a cluster: set KUBECONFIG") as caught:
        transpile("churn.yaml", "--config", "argo.yaml", "--submit", "-n", "team-a")
    assert caught.value.returncode == 2


@pytest.mark.django_db  # the namespace's pod security is read before submitting
def test_a_refused_submission_fails_the_command(
    files: Path, monkeypatch: pytest.MonkeyPatch, configured_cluster: None
) -> None:
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


def test_a_namespace_that_is_not_a_kubernetes_name_is_refused_before_anything_is_read(files: Path) -> None:
    expected = re.escape("argument --namespace/-n: 'team-a/../b': a lowercase RFC 1123 label")
    with pytest.raises(CommandError, match=expected):
        transpile("missing.yaml", "--config", "argo.yaml", "--submit", "--namespace", "team-a/../b")


def test_a_magnus_users_files_work_unchanged_with_a_parameters_file_and_magnus_variables(
    files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (files / "magnus.yaml").write_text(MAGNUS_PIPELINE_YAML)
    (files / "argo-config.yaml").write_text(MAGNUS_CONFIG_YAML)
    (files / "parameters.yaml").write_text(MAGNUS_PARAMETERS_YAML)
    monkeypatch.setenv("MAGNUS_VAR_docker_image", "registry.example.com/churn:magnus")
    stdout, stderr = transpile(
        "magnus.yaml", "--config", "argo-config.yaml", "--parameters-file", "parameters.yaml",
        "--parameter", "seeds=[4, 5]", "-o", "-",
    )  # fmt: skip
    workflow = yaml.safe_load(stdout)
    assert workflow["spec"]["arguments"]["parameters"] == [
        {"name": "lr", "value": "0.01"},
        {"name": "seeds", "value": "[4, 5]"},
    ]
    images = {t["container"]["image"] for t in workflow["spec"]["templates"] if "container" in t}
    assert images == {"registry.example.com/churn:magnus"}
    assert stderr.splitlines() == [
        "warning: step fit.fail: no step leads to this fail step; it is left out",
        "warning: step fail: no step leads to this fail step; it is left out",
        "warning: config: run_log_store: ignored (a Magnus service; Argo keeps its own logs and artifacts)",
    ]


def test_a_parameters_file_that_is_not_a_mapping_is_a_problem(files: Path) -> None:
    (files / "parameters.yaml").write_text("- lr\n")
    stderr = StringIO()
    with pytest.raises(CommandError, match="1 problem found"):
        call_command(
            "transpile", "churn.yaml", "--config", "argo.yaml", "--parameters-file", "parameters.yaml",
            stderr=stderr,
        )  # fmt: skip
    assert stderr.getvalue().splitlines() == ["--parameters-file: must be a mapping of parameter name: value"]
