"""examples/training/sweep_trial.py's metric without its loop, for the tests that check a trial's metric."""

from __future__ import annotations

from importlib import util as importlib_util
from pathlib import Path
from typing import Any

import numpy as np

TRAINING = Path(__file__).resolve().parents[1] / "training"


def load_sweep_trial() -> Any:
    """The trial script as a module (standard library only), for its generated data."""
    spec = importlib_util.spec_from_file_location("sweep_trial", TRAINING / "sweep_trial.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib_util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def validation_loss(learning_rate: float, l2: float, steps: int, seed: int = 7) -> float:
    """Gradient descent from w = 0 on a quadratic reaches w_t = (I - (I - lr·H)^t) w*, with
    H = 2/n XᵀX + 2·l2·I and w* = H⁻¹ 2/n Xᵀy; the metric is the validation mean squared error of w_t."""
    train_x, train_y, validation_x, validation_y = (
        np.array(part) for part in load_sweep_trial().make_data(seed)
    )
    count, features = train_x.shape
    hessian = 2.0 / count * train_x.T @ train_x + 2.0 * l2 * np.eye(features)
    optimum = np.linalg.solve(hessian, 2.0 / count * train_x.T @ train_y)
    contraction = np.linalg.matrix_power(np.eye(features) - learning_rate * hessian, steps)
    weights = optimum - contraction @ optimum
    return float(np.mean((validation_x @ weights - validation_y) ** 2))
