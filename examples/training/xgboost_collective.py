"""Train one XGBoost model across the replicas of an XGBoostJob with XGBoost's collective (Rabit) tracker.

Reads what the operator writes into every pod, as Kubeflow's XGBoostJob does and its xgboost-dist example
reads it: MASTER_ADDR and MASTER_PORT (the master's Service and port), WORLD_SIZE (every pod) and RANK
(the master 0, worker i rank i + 1). Rank 0 runs `xgboost.tracker.RabitTracker` on MASTER_PORT; every rank,
the master included, joins through `xgboost.collective.CommunicatorContext`, loads its own rows of one
generated classification problem (no downloads, fixed seeds), and `xgboost.train` builds each tree from the
histograms of all ranks, so every rank ends with the same model: the RESULT line's `model_sha256`.

    python xgboost_collective.py --rounds 10

Progress lines: `round 3/10 logloss 0.412345` (the metric over every rank's rows). Last line:
`RESULT {json}` with rank, world_size, logloss_first, logloss_last and model_sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import sys
from typing import Any

FEATURES = 6
SAMPLES = 1200
# A rank started before the master's tracker listens retries, waiting 2 s longer each time: 10 tries wait
# about 110 s in all (XGBoost's default, 3, gives up after 6 s, and pods of one job may start that far
# apart). The tracker gives up on a rank that never joins after TRACKER_TIMEOUT_SECONDS rather than wait
# forever.
CONNECT_RETRIES = 10
TRACKER_TIMEOUT_SECONDS = 300


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--max-depth", type=int, default=3)
    parser.add_argument("--eta", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args(argv)


def required(name: str) -> str:
    """A variable the operator must have written; its absence is the operator's bug, said plainly."""
    value = os.environ.get(name, "")
    if not value:
        raise SystemExit(f"error: {name} is not set (an XGBoostJob's operator writes it into every pod)")
    return value


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    master_addr, master_port = required("MASTER_ADDR"), int(required("MASTER_PORT"))
    world_size, rank = int(required("WORLD_SIZE")), int(required("RANK"))
    print(f"rank {rank} of {world_size}, tracker {master_addr}:{master_port}", flush=True)

    import numpy as np
    import xgboost
    from xgboost import collective
    from xgboost.tracker import RabitTracker

    tracker = None
    if rank == 0:
        # The master's own Service name resolves to its own address: the tracker listens there only.
        tracker = RabitTracker(
            n_workers=world_size,
            host_ip=socket.gethostbyname(master_addr),
            port=master_port,
            sortby="task",
            timeout=TRACKER_TIMEOUT_SECONDS,
        )
        tracker.start()
        print(f"tracker listening on {socket.gethostbyname(master_addr)}:{master_port}", flush=True)

    rng = np.random.default_rng(args.seed)
    features = rng.normal(size=(SAMPLES, FEATURES))
    labels = (features @ rng.normal(size=(FEATURES,)) + 0.5 * rng.normal(size=(SAMPLES,)) > 0).astype(float)
    own = np.arange(SAMPLES) % world_size == rank
    train = xgboost.DMatrix(features[own], label=labels[own])
    params: dict[str, Any] = {
        "objective": "binary:logistic",
        "eval_metric": "logloss",
        "tree_method": "hist",
        "max_depth": args.max_depth,
        "eta": args.eta,
        "seed": args.seed,
        "nthread": 1,
    }

    class Progress(xgboost.callback.TrainingCallback):
        def after_iteration(self, model: Any, epoch: int, evals_log: dict[str, Any]) -> bool:
            print(
                f"round {epoch + 1}/{args.rounds} logloss {evals_log['train']['logloss'][-1]:.6f}", flush=True
            )
            return False

    history: dict[str, Any] = {}
    communicator = {
        "dmlc_communicator": "rabit",
        "dmlc_tracker_uri": master_addr,
        "dmlc_tracker_port": master_port,
        "dmlc_task_id": str(rank),
        "dmlc_retry": CONNECT_RETRIES,
    }
    with collective.CommunicatorContext(**communicator):
        print(f"joined: collective rank {collective.get_rank()} of {collective.get_world_size()}", flush=True)
        booster = xgboost.train(
            params,
            train,
            num_boost_round=args.rounds,
            evals=[(train, "train")],
            evals_result=history,
            verbose_eval=False,
            callbacks=[Progress()],
        )
    if tracker is not None:
        tracker.wait_for()

    logloss = history["train"]["logloss"]
    result = {
        "rank": rank,
        "world_size": world_size,
        "logloss_first": logloss[0],
        "logloss_last": logloss[-1],
        "model_sha256": hashlib.sha256(bytes(booster.save_raw("json"))).hexdigest(),
    }
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
