"""One trial of a hyperparameter sweep: fit a ridge regression by gradient descent and report its loss.

The hyperparameters come as arguments (a sweep's template fills them in), the data is generated from a
fixed seed (no downloads), and the metric, the validation mean squared error, is printed and written to
`--metric-file`, the file an Argo output parameter reads (`valueFrom.path`). The same arguments give the
same metric to the last digit. Only the standard library is needed, so any Python image runs it; only
`--logdir` (TensorBoard scalars: train_loss per step, validation_loss at the end) needs the frameworks
image's `tensorboard` package.

    python sweep_trial.py --learning-rate 0.1 --l2 0.01 --steps 50 --metric-file /tmp/loss

Progress lines: `step 10/50 train_loss 0.123456`. Last line: `RESULT {json}` with the hyperparameters,
train_loss and validation_loss (the metric). A learning rate too large diverges: the metric is then `inf`
or `nan`, which a sweep reports as no metric.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

FEATURES = 3
TRAIN_ROWS = 200
VALIDATION_ROWS = 100
TRUE_WEIGHTS = (1.5, -2.0, 0.5)
NOISE = 0.3

Rows = list[list[float]]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learning-rate", type=float, required=True)
    parser.add_argument("--l2", type=float, default=0.0, help="ridge penalty on the weights")
    parser.add_argument("--steps", type=int, default=50, help="full-batch gradient steps")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated data")
    parser.add_argument("--metric-file", default="", help="write the validation loss here")
    parser.add_argument("--logdir", default="", help="write TensorBoard scalars here")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    return args


def make_data(seed: int) -> tuple[Rows, list[float], Rows, list[float]]:
    """Training and validation rows and targets: y = x·TRUE_WEIGHTS + Gaussian noise."""
    rng = random.Random(seed)  # noqa: S311 (data, not secrets: the same seed must give the same rows)

    def rows(count: int) -> tuple[Rows, list[float]]:
        features = [[rng.gauss(0.0, 1.0) for _ in range(FEATURES)] for _ in range(count)]
        targets = [
            sum(w * v for w, v in zip(TRUE_WEIGHTS, row, strict=True)) + NOISE * rng.gauss(0.0, 1.0)
            for row in features
        ]
        return features, targets

    train_x, train_y = rows(TRAIN_ROWS)
    validation_x, validation_y = rows(VALIDATION_ROWS)
    return train_x, train_y, validation_x, validation_y


def mean_squared_error(features: Rows, targets: list[float], weights: list[float]) -> float:
    errors = [
        sum(w * v for w, v in zip(weights, row, strict=True)) - y
        for row, y in zip(features, targets, strict=True)
    ]
    return sum(e * e for e in errors) / len(errors)


def gradient_step(
    features: Rows, targets: list[float], weights: list[float], learning_rate: float, l2: float
) -> list[float]:
    """One step on mean((x·w - y)²) + l2·|w|², from the weights before it."""
    count = len(features)
    residuals = [
        sum(w * v for w, v in zip(weights, row, strict=True)) - y
        for row, y in zip(features, targets, strict=True)
    ]
    gradient = [
        2.0 / count * sum(r * row[j] for r, row in zip(residuals, features, strict=True))
        + 2.0 * l2 * weights[j]
        for j in range(FEATURES)
    ]
    return [w - learning_rate * g for w, g in zip(weights, gradient, strict=True)]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"trial: learning_rate={args.learning_rate} l2={args.l2} steps={args.steps}", flush=True)
    train_x, train_y, validation_x, validation_y = make_data(args.seed)
    writer = None
    if args.logdir:
        from tensorboard.summary import Writer  # the frameworks image's TensorBoard, no TensorFlow needed

        writer = Writer(args.logdir)

    weights = [0.0] * FEATURES
    train_loss = math.inf
    for step in range(1, args.steps + 1):
        weights = gradient_step(train_x, train_y, weights, args.learning_rate, args.l2)
        train_loss = mean_squared_error(train_x, train_y, weights)
        print(f"step {step}/{args.steps} train_loss {train_loss:.6f}", flush=True)
        if writer is not None and math.isfinite(train_loss):
            writer.add_scalar("train_loss", train_loss, step=step)
    validation_loss = mean_squared_error(validation_x, validation_y, weights)
    if writer is not None:
        if math.isfinite(validation_loss):
            writer.add_scalar("validation_loss", validation_loss, step=args.steps)
        writer.close()

    metric = repr(validation_loss)
    print(f"validation_loss {metric}", flush=True)
    if args.metric_file:
        path = Path(args.metric_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(metric)
    result = {
        "learning_rate": args.learning_rate,
        "l2": args.l2,
        "steps": args.steps,
        "train_loss": train_loss if math.isfinite(train_loss) else str(train_loss),
        "validation_loss": validation_loss if math.isfinite(validation_loss) else str(validation_loss),
    }
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
