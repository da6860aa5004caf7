"""Join a JAXJob's processes with `jax.distributed.initialize()`, sum across them, and train data-parallel.

The coordinator comes from the variables the operator writes into every worker, as Kubeflow's JAXJob does
(and its cpu-demo example reads them): COORDINATOR_ADDRESS (worker 0's Service) and COORDINATOR_PORT,
NUM_PROCESSES, PROCESS_ID. Cross-process collectives on CPU go through Gloo.

Process p contributes p + 1 to a `psum` over every device of every process, which must be
n(n + 1)/2 for n processes; then a linear model is fitted by gradient descent, each process computing the
gradient of its own shard of one generated problem (no downloads, fixed seeds) and `psum` adding them up,
so every process ends with the same weights.

    python jax_distributed.py --steps 20

Progress lines: `step 5/20 loss 0.123456`. Last line: `RESULT {json}` with process, processes, psum,
expected_psum, loss_first, loss_last and weights_sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

FEATURES = 4
SAMPLES_PER_PROCESS = 256


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args(argv)


def required(name: str) -> str:
    """A variable the operator must have written; its absence is the operator's bug, said plainly."""
    value = os.environ.get(name, "")
    if not value:
        raise SystemExit(f"error: {name} is not set (a JAXJob's operator writes it into every worker)")
    return value


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    coordinator = f"{required('COORDINATOR_ADDRESS')}:{int(required('COORDINATOR_PORT'))}"
    processes = int(required("NUM_PROCESSES"))
    process_id = int(required("PROCESS_ID"))
    print(f"process {process_id} of {processes}, coordinator {coordinator}", flush=True)

    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=coordinator, num_processes=processes, process_id=process_id
    )
    print(
        f"joined: process {jax.process_index()}/{jax.process_count()}, "
        f"{jax.local_device_count()} local of {jax.device_count()} devices",
        flush=True,
    )

    def across_processes(x: jax.Array) -> jax.Array:
        return jax.lax.psum(x, "devices")

    psum = jax.pmap(across_processes, axis_name="devices")
    local = jnp.full((jax.local_device_count(),), float(process_id + 1))
    total = float(psum(local)[0])
    expected = float(processes * (processes + 1) // 2 * jax.local_device_count())
    print(f"psum of (process id + 1) over every device: {total} (expected {expected})", flush=True)

    # One problem for all, drawn from one seed; each process keeps its own rows.
    rng = np.random.default_rng(args.seed)
    true_weights = rng.normal(size=(FEATURES,))
    features = rng.normal(size=(processes * SAMPLES_PER_PROCESS, FEATURES))
    targets = features @ true_weights + 0.1 * rng.normal(size=(processes * SAMPLES_PER_PROCESS,))
    rows = slice(process_id * SAMPLES_PER_PROCESS, (process_id + 1) * SAMPLES_PER_PROCESS)
    shard_x = jnp.asarray(features[rows], dtype=jnp.float32)[None]
    shard_y = jnp.asarray(targets[rows], dtype=jnp.float32)[None]
    count = float(processes * SAMPLES_PER_PROCESS)

    def step(weights: jax.Array, x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
        def shard_loss(w: jax.Array) -> jax.Array:
            return jnp.sum((x @ w - y) ** 2) / count

        loss, gradient = jax.value_and_grad(shard_loss)(weights)
        loss, gradient = jax.lax.psum((loss, gradient), "devices")
        return weights - args.learning_rate * gradient, loss

    train_step = jax.pmap(step, axis_name="devices")
    weights = jnp.zeros((1, FEATURES), dtype=jnp.float32)
    losses: list[float] = []
    for index in range(1, args.steps + 1):
        weights, loss = train_step(weights, shard_x, shard_y)
        losses.append(float(loss[0]))
        print(f"step {index}/{args.steps} loss {losses[-1]:.6f}", flush=True)

    final = np.asarray(weights[0], dtype="<f4")
    result = {
        "process": process_id,
        "processes": jax.process_count(),
        "psum": total,
        "expected_psum": expected,
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "weights_sha256": hashlib.sha256(final.tobytes()).hexdigest(),
    }
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)
    jax.distributed.shutdown()
    return 0 if total == expected else 1


if __name__ == "__main__":
    sys.exit(main())
