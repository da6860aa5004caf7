"""Train a small Keras model across the replicas of a TFJob with `tf.distribute.MultiWorkerMirroredStrategy`.

The strategy reads TF_CONFIG exactly as the operator writes it (`cluster` with `chief` and `worker`, the
pod's own `task`, `"environment": "cloud"`); a pod without TF_CONFIG (a job of one replica) trains alone.
Every replica feeds its shard of one generated regression problem (no downloads, fixed seeds), gradients are
all-reduced each step, so every replica ends with the same weights: the RESULT line's `weights_sha256`.

    python tf_multiworker.py --epochs 5 --logdir /logs

Progress lines: `epoch 3/5 loss 0.123456`. Last line: `RESULT {json}` with loss_first, loss_last,
weights_sha256, task, replicas (as TF_CONFIG lists them) and replicas_in_sync (as the strategy found them).
With `--logdir`, the chief writes the loss per epoch as TensorBoard scalars to `<logdir>/train` (only the
chief: the workers hold the same numbers).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from typing import Any

FEATURES = 8
SAMPLES = 960


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=96, help="global batch, split over the replicas")
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--logdir", default="", help="write TensorBoard scalars here (the chief only)")
    return parser.parse_args(argv)


def task_of(tf_config: dict[str, Any]) -> tuple[str, int]:
    """This pod's task in TF_CONFIG; a pod without one is the only replica, a chief of itself."""
    task = tf_config.get("task") or {}
    return str(task.get("type", "chief")), int(task.get("index", 0))


def replica_count(tf_config: dict[str, Any]) -> int:
    """Replicas that train: chief and workers (a `ps` or `evaluator` takes no part in all-reduce)."""
    cluster = tf_config.get("cluster") or {}
    return max(1, len(cluster.get("chief", [])) + len(cluster.get("worker", [])))


def is_chief(tf_config: dict[str, Any]) -> bool:
    """The chief, or worker 0 in a cluster without one (TensorFlow's own rule)."""
    task_type, index = task_of(tf_config)
    has_chief = bool((tf_config.get("cluster") or {}).get("chief"))
    return task_type == "chief" or (not has_chief and task_type == "worker" and index == 0)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task_type, task_index = task_of(tf_config)
    replicas = replica_count(tf_config)
    print(
        f"task {task_type}:{task_index}, {replicas} replica(s), TF_CONFIG cluster {tf_config.get('cluster')}"
    )
    sys.stdout.flush()

    import numpy as np
    import tensorflow as tf

    tf.keras.utils.set_random_seed(args.seed)
    # Built first: the strategy must exist before any other TensorFlow op runs.
    strategy = tf.distribute.MultiWorkerMirroredStrategy()

    rng = np.random.default_rng(args.seed)
    features = rng.normal(size=(SAMPLES, FEATURES)).astype("float32")
    true_weights = rng.normal(size=(FEATURES, 1)).astype("float32")
    targets = (features @ true_weights + 0.1 * rng.normal(size=(SAMPLES, 1))).astype("float32")
    options = tf.data.Options()
    # Shard by element: the data is in memory, not in files (the default policy would warn and fall back).
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    dataset = (
        tf.data.Dataset.from_tensor_slices((features, targets)).batch(args.batch_size).with_options(options)
    )

    with strategy.scope():
        model = tf.keras.Sequential(
            [
                tf.keras.Input(shape=(FEATURES,)),
                tf.keras.layers.Dense(16, activation="tanh"),
                tf.keras.layers.Dense(1),
            ]
        )
        optimizer = tf.keras.optimizers.SGD(args.learning_rate)
    # A custom loop rather than `model.fit`: Keras 3's fit cannot take this strategy's per-replica batches.
    batches = strategy.experimental_distribute_dataset(dataset)

    def replica_step(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            squared_errors = tf.square(model(x, training=True) - y)[:, 0]
            # The mean over the global batch: the all-reduced gradient is then the whole batch's gradient.
            loss = tf.nn.compute_average_loss(squared_errors, global_batch_size=args.batch_size)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    @tf.function
    def train_step(batch: Any) -> Any:
        per_replica = strategy.run(replica_step, args=batch)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    writer = None
    if args.logdir and is_chief(tf_config):
        writer = tf.summary.create_file_writer(os.path.join(args.logdir, "train"))
    losses: list[float] = []
    for epoch in range(1, args.epochs + 1):
        total, steps = 0.0, 0
        for batch in batches:
            total += float(train_step(batch))
            steps += 1
        losses.append(total / steps)
        print(f"epoch {epoch}/{args.epochs} loss {losses[-1]:.6f}", flush=True)
        if writer is not None:
            with writer.as_default():
                tf.summary.scalar("loss", losses[-1], step=epoch)
            writer.flush()
    if writer is not None:
        writer.close()

    digest = hashlib.sha256()
    for weight in model.get_weights():
        digest.update(np.ascontiguousarray(weight, dtype="<f4").tobytes())
    result = {
        "task": f"{task_type}:{task_index}",
        "replicas": replicas,
        "replicas_in_sync": int(strategy.num_replicas_in_sync),
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "weights_sha256": digest.hexdigest(),
    }
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
