"""The build fails on a PyYAML loader called anywhere but the bounded reader (ruff's banned-api, TID251, in
pyproject.toml): a new `yaml.safe_load` of tenant text cannot land unnoticed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CALLS = [
    "yaml.load(text, Loader=yaml.SafeLoader)",
    "yaml.load_all(text, Loader=yaml.SafeLoader)",
    "yaml.safe_load(text)",
    "yaml.safe_load_all(text)",
    "yaml.full_load(text)",
    "yaml.unsafe_load(text)",
]


def ruff(path: Path, *, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml")]
    command += ["--select", "TID251"]
    command += ["--stdin-filename", str(path), "-"] if stdin is not None else [str(path)]
    return subprocess.run(command, cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("call", CALLS)
def test_a_new_pyyaml_load_in_production_code_fails_the_lint(tmp_path: Path, call: str) -> None:
    module = tmp_path / "reader.py"
    module.write_text(f"import yaml\n\n\ndef read(text: str) -> object:\n    return {call}\n")
    result = ruff(module)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "TID251" in result.stdout
    assert "read YAML with workflows.safeyaml" in result.stdout


def test_importing_the_loader_by_name_fails_too(tmp_path: Path) -> None:
    module = tmp_path / "reader.py"
    module.write_text("from yaml import safe_load\n\nREAD = safe_load\n")
    assert ruff(module).returncode == 1


def test_the_bounded_reader_and_tests_are_exempt_and_so_is_the_tree_today() -> None:
    source = "import yaml\n\nDOCUMENT = yaml.safe_load('a: 1')\n"
    assert ruff(ROOT / "workflows" / "tests" / "test_new.py", stdin=source).returncode == 0
    assert ruff(ROOT / "tensorboard" / "new.py", stdin=source).returncode == 1
    assert ruff(ROOT).returncode == 0
