"""`manage.py argo_lint`, run as users run it (a subprocess), so this module stays free of Django."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO.parent / "shared" / "conformance" / "argo-examples"

INVALID = """\
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: hello-
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: a
        template: whalesay
  - name: whalesay
    inputs:
      parameters:
      - name: message
    container:
      image: docker/whalesay
      args: ["{{inputs.parameters.message}}"]
"""


def argo_lint(*args: str | Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "SECRET_KEY": os.environ.get("SECRET_KEY", "cli-test-only")}
    return subprocess.run(
        [sys.executable, "manage.py", "argo_lint", *map(str, args)],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def invalid_file(tmp_path: Path) -> Path:
    path = tmp_path / "invalid.yaml"
    path.write_text(INVALID)
    return path


def test_valid_files_exit_zero():
    completed = argo_lint(EXAMPLES / "hello-world.yaml", EXAMPLES / "steps.yaml")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "no linting errors found (2 documents in 2 files)" in completed.stdout


def test_an_invalid_file_exits_one_with_a_line_per_problem(invalid_file: Path):
    completed = argo_lint(invalid_file)
    assert completed.returncode == 1
    problem = "templates.main.steps[0].a templates.whalesay inputs.parameters.message was not supplied"
    assert completed.stdout.splitlines() == [f"{invalid_file}: {problem}"]


def test_json_output_lists_every_document(invalid_file: Path):
    completed = argo_lint("--output", "json", invalid_file, EXAMPLES / "hello-world.yaml")
    report = json.loads(completed.stdout)
    assert completed.returncode == 1
    assert report["valid"] is False
    assert [document["valid"] for entry in report["files"] for document in entry["documents"]] == [
        False,
        True,
    ]


def test_template_refs_resolve_through_a_templates_folder():
    workflow = EXAMPLES / "workflow-template" / "hello-world.yaml"
    assert argo_lint(workflow).returncode == 1  # its WorkflowTemplate is nowhere to be found
    assert argo_lint("--templates", EXAMPLES / "workflow-template", workflow).returncode == 0


def test_unreadable_input_exits_two(tmp_path: Path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [Workflow")
    assert argo_lint(tmp_path / "missing.yaml").returncode == 2
    completed = argo_lint(broken)
    assert completed.returncode == 2
    assert "not valid YAML" in completed.stderr
