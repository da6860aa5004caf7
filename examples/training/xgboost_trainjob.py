"""Train one XGBoost model across the nodes of a TrainJob on Kubeflow Trainer's `xgboost-distributed`
runtime, reporting progress and metrics to the TrainJob's status as it goes.

Reads what Trainer's XGBoost plugin writes into every node, as Kubeflow's xgboost-distributed example does:
DMLC_TRACKER_URI (the first node, `<trainjob>-node-0-0.<trainjob>`), DMLC_TRACKER_PORT, DMLC_TASK_ID (the
node's rank) and DMLC_NUM_WORKER. Rank 0 runs `xgboost.tracker.RabitTracker`; every rank joins through
`xgboost.collective.CommunicatorContext`, holds its own rows of one generated classification problem (no
downloads, fixed seeds) and `xgboost.train` builds each tree from every rank's histograms, so all ranks end
with the same model and the same metrics (each evaluation is reduced over every rank's rows).

Rank 0 reports after every round with `update_trainjob_status` (kubeflow_progress.py, the SDK's function;
the SDK drops reports less than 5 s apart) and once more at the end, waiting out the throttle so the last
report is not dropped: progress in percent of the rounds, the estimated seconds left, and the metrics
`loss` and `val_loss` (logloss on the training and held-out rows) and `val_accuracy`, as text.

    python xgboost_trainjob.py --rounds 120

Progress lines: `round 3/120 loss 0.412345 val_loss 0.423456 val_accuracy 0.8700`. Last line:
`RESULT {json}` with rank, world_size, rounds, metrics (the last round's, as reported), reports (how many
the server accepted), reported (the last status it stored, rank 0 only) and model_sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import sys
import time
from typing import Any

from kubeflow_progress import accepted, update_trainjob_status

FEATURES = 20
SAMPLES = 100_000
HELD_OUT = 5  # every 5th row is a validation row
# A rank started before the tracker listens retries for about 110 s (XGBoost's default gives up after 6 s,
# and pods of one job may start that far apart); the tracker gives up on a rank that never joins.
CONNECT_RETRIES = 10
TRACKER_TIMEOUT_SECONDS = 300
#: how long a rank waits for the tracker's name to resolve (cluster DNS may name a pod late)
RESOLVE_SECONDS = 300


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=120)
    parser.add_argument("--max-depth", type=int, default=6)
    parser.add_argument("--eta", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=11)
    return parser.parse_args(argv)


def required(name: str) -> str:
    """A variable Trainer's XGBoost plugin writes; its absence is the operator's bug, said plainly."""
    value = os.environ.get(name, "")
    if not value:
        raise SystemExit(
            f"error: {name} is not set (Kubeflow Trainer's XGBoost plugin writes it into every node)"
        )
    return value


def progress_percent(done: int, total: int) -> int:
    """Whole percent of the rounds done (100 only when all are)."""
    return done * 100 // total


def estimated_remaining_seconds(elapsed: float, done: int, total: int) -> int:
    """The rounds left at the mean pace of the rounds done, in whole seconds (rounded up)."""
    if done <= 0:
        return 0
    return int(-(-elapsed * (total - done) // done))


def round_metrics(evals_log: dict[str, Any]) -> dict[str, float]:
    """The last round's metrics from XGBoost's evaluation log (train and valid, logloss and error)."""
    return {
        "loss": evals_log["train"]["logloss"][-1],
        "val_loss": evals_log["valid"]["logloss"][-1],
        "val_accuracy": 1.0 - evals_log["valid"]["error"][-1],
    }


def wait_for_name(name: str, within: float = RESOLVE_SECONDS) -> str:
    deadline = time.monotonic() + within
    while True:
        try:
            return socket.gethostbyname(name)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tracker_uri, tracker_port = required("DMLC_TRACKER_URI"), int(required("DMLC_TRACKER_PORT"))
    world_size, rank = int(required("DMLC_NUM_WORKER")), int(required("DMLC_TASK_ID"))
    print(f"rank {rank} of {world_size}, tracker {tracker_uri}:{tracker_port}", flush=True)

    import numpy as np
    import xgboost
    from xgboost import collective
    from xgboost.tracker import RabitTracker

    reporting = rank == 0  # one reporter per TrainJob, as Transformers' callback reports from rank 0 only
    if reporting:
        update_trainjob_status(progress_percent=0)

    tracker = None
    if rank == 0:
        # The tracker listens on the address its own name resolves to, as every rank will dial it.
        address = wait_for_name(tracker_uri)
        tracker = RabitTracker(
            n_workers=world_size,
            host_ip=address,
            port=tracker_port,
            sortby="task",
            timeout=TRACKER_TIMEOUT_SECONDS,
        )
        tracker.start()
        print(f"tracker listening on {address}:{tracker_port}", flush=True)
    else:
        wait_for_name(tracker_uri)

    rng = np.random.default_rng(args.seed)
    features = rng.normal(size=(SAMPLES, FEATURES))
    weights = rng.normal(size=(FEATURES,))
    labels = (features @ weights + np.sin(3 * features[:, 0]) + rng.normal(size=(SAMPLES,)) > 0).astype(float)
    rows = np.arange(SAMPLES)
    own = rows % world_size == rank
    valid = rows % HELD_OUT == 0
    params: dict[str, Any] = {
        "objective": "binary:logistic",
        "eval_metric": ["logloss", "error"],
        "tree_method": "hist",
        "max_depth": args.max_depth,
        "eta": args.eta,
        "seed": args.seed,
        "nthread": 1,
    }
    started = time.monotonic()
    last: dict[str, float] = {}

    class Progress(xgboost.callback.TrainingCallback):
        def after_iteration(self, model: Any, epoch: int, evals_log: dict[str, Any]) -> bool:
            done = epoch + 1
            last.update(round_metrics(evals_log))
            print(
                f"round {done}/{args.rounds} loss {last['loss']:.6f} val_loss {last['val_loss']:.6f} "
                f"val_accuracy {last['val_accuracy']:.4f}",
                flush=True,
            )
            if reporting and done < args.rounds:
                update_trainjob_status(
                    progress_percent=progress_percent(done, args.rounds),
                    estimated_remaining_seconds=estimated_remaining_seconds(
                        time.monotonic() - started, done, args.rounds
                    ),
                    metrics=last,
                )
            return False

    communicator = {
        "dmlc_communicator": "rabit",
        "dmlc_tracker_uri": tracker_uri,
        "dmlc_tracker_port": tracker_port,
        "dmlc_task_id": str(rank),
        "dmlc_retry": CONNECT_RETRIES,
    }
    with collective.CommunicatorContext(**communicator):
        print(f"joined: collective rank {collective.get_rank()} of {collective.get_world_size()}", flush=True)
        train = xgboost.DMatrix(features[own & ~valid], label=labels[own & ~valid])
        held_out = xgboost.DMatrix(features[own & valid], label=labels[own & valid])
        booster = xgboost.train(
            params,
            train,
            num_boost_round=args.rounds,
            evals=[(train, "train"), (held_out, "valid")],
            verbose_eval=False,
            callbacks=[Progress()],
        )
    if tracker is not None:
        tracker.wait_for()
    if reporting:
        update_trainjob_status(progress_percent=100, estimated_remaining_seconds=0, metrics=last, wait=True)

    stored = accepted()
    result = {
        "rank": rank,
        "world_size": world_size,
        "rounds": args.rounds,
        "metrics": {name: str(value) for name, value in last.items()},
        "reports": len(stored),
        "reported": stored[-1] if stored else None,
        "progress_reported": [status.get("progressPercentage") for status in stored],
        "model_sha256": hashlib.sha256(bytes(booster.save_raw("json"))).hexdigest(),
    }
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
