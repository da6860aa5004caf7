"""The commands a user runs beside `make run` work with no environment set; a missing setting is one line
and exit status 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def run(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`python manage.py ARGV` from an empty folder with nothing in the environment but what is given."""
    return subprocess.run(
        [sys.executable, str(REPO / "manage.py"), *argv],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["argo_lint", str(EXAMPLES / "tensorboard-workflow.yaml")], "no linting errors found"),
        (["render_job", str(EXAMPLES / "tfjob.yaml")], "name: mnist-ps-chief-0"),
        (["render_hyperparam", str(EXAMPLES / "hyperparam-grid.yaml")], "kind: Workflow"),
        (
            [
                "transpile",
                str(EXAMPLES / "pipeline" / "pipeline.yaml"),
                "--config",
                str(EXAMPLES / "pipeline" / "config.yaml"),
                "--output",
                "-",
            ],
            "generateName: churn-model-",
        ),
        (["render_crds", "--check"], "up to date"),
        (["render_webhooks", "--check"], "up to date"),
    ],
    ids=lambda value: value[0] if isinstance(value, list) else "",
)
def test_an_offline_command_runs_with_no_environment_and_writes_nothing_here(tmp_path, argv, expected):
    result = run(tmp_path, *argv)
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_lint_still_says_invalid_with_exit_status_1(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: x}\nspec: {}\n")
    result = run(tmp_path, "argo_lint", str(broken))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr


def test_submitting_without_a_cluster_says_what_to_set_in_one_line_with_status_2(tmp_path):
    result = run(
        tmp_path,
        "transpile", str(EXAMPLES / "pipeline" / "pipeline.yaml"),
        "--config", str(EXAMPLES / "pipeline" / "config.yaml"), "--submit", "--namespace", "team-a",
        ARGOML_DEV_DIR=str(tmp_path),  # not the checkout's .dev/, whose kubeconfig may exist
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "CommandError: --submit needs a cluster: "
        "set KUBECONFIG (`make run` prints it) or KUBE_IN_CLUSTER=true"
    ]
    assert list(tmp_path.iterdir()) == []


def test_a_command_that_needs_the_secret_key_says_so_in_one_line_with_status_2(tmp_path):
    result = run(tmp_path, "check")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "configuration: SECRET_KEY (or SECRET_KEY_FILE) is required unless DEBUG=true."
    ]


def test_a_bad_value_is_a_configuration_problem_even_for_an_offline_command(tmp_path):
    result = run(tmp_path, "render_job", str(EXAMPLES / "tfjob.yaml"), DEBUG="maybe")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "configuration: DEBUG='maybe' is not a boolean; use one of true/false, 1/0, yes/no, on/off."
    ]
