"""examples/training/sweep_trial.py, the trial the training sweep runs: its metric is the one computed
directly, written where the output parameter reads it (the sweep itself runs on the dev stack in
argoml_site/tests/test_examples.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from examples.tests.closed_form import TRAINING, validation_loss


@pytest.mark.parametrize(("learning_rate", "l2", "steps"), [(0.1, 0.0, 50), (0.02, 0.1, 30), (0.02, 0.0, 50)])
def test_a_trial_reports_the_metric_computed_directly(tmp_path, learning_rate, l2, steps):
    metric_file = tmp_path / "outputs" / "loss"
    result = subprocess.run(
        [sys.executable, str(TRAINING / "sweep_trial.py"), f"--learning-rate={learning_rate}", f"--l2={l2}",
         f"--steps={steps}", f"--metric-file={metric_file}"],
        capture_output=True, text=True, timeout=60, check=True, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    reported = json.loads(result.stdout.splitlines()[-1].removeprefix("RESULT "))
    written = float(metric_file.read_text())
    assert written == reported["validation_loss"]
    assert written == pytest.approx(validation_loss(learning_rate, l2, steps), rel=1e-9)


def test_the_settings_of_the_example_sweep_have_one_best():
    losses = {(lr, l2): validation_loss(lr, l2, 50) for lr in (0.02, 0.1) for l2 in (0.0, 0.1)}
    assert min(losses, key=losses.__getitem__) == (0.1, 0.0)
    assert len(set(losses.values())) == 4
