"""Hyperparameter sweeps: expand and render a 100,000-combination grid into its batch Workflows.

    .venv/bin/python bench/hyperparam_expand.py [--repeat 3] [--skip-command]

Prints, for the grid expansion alone (trial numbers + parameter strings), for expansion plus rendering every
Workflow as JSON, and for `itertools.product` over the same pre-rendered values (the floor: nothing can
expand faster): best-of-N seconds, peak traced memory (tracemalloc, in a separate run so it does not skew
the time) and the ratio to the floor. Then the largest Workflow's size, as created and after Argo would have
written a status node for every trial (simulated with the tests' fake Argo), against the 1 MiB limit.
Last, `manage.py render_hyperparam` on the same grid end to end, in a fresh process with no environment set
(imports, expansion, the lint of every Workflow, YAML written to /dev/null): wall and CPU (user + sys)
seconds, with the machine's load average; on a loaded machine the CPU figure is the one to compare
(docs/hyperparam.md keeps the history: 16 s at first, 6.6 s with yamlio, 2.0-2.5 s now).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hyperparam.batching import OBJECT_LIMIT_BYTES
from hyperparam.manifests import build_batch, iter_workflows, plan_batches, sweep_of
from hyperparam.space import FiniteDomain
from hyperparam.tests import fake_argo
from hyperparam.tests.conftest import make_hpw, make_spec

REPO = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024


def grid_100k() -> dict:
    """100 learning rates x 100 batch sizes x 10 optimizers = 100,000 combinations."""
    spec = make_spec(
        hyperparams=[
            {"name": "lr", "range": {"min": 0.0001, "max": 0.01, "step": 0.0001}},
            {"name": "batch-size", "range": {"min": 8, "max": 800, "step": 8}},
            {"name": "optimizer", "values": [f"optimizer-{i}" for i in range(10)]},
        ],
        parallelism=50,
    )
    spec["workflow"]["templates"][0]["inputs"]["parameters"].append({"name": "optimizer"})
    return make_hpw(spec)


def expand_only(hpw: dict) -> int:
    sweep = sweep_of(hpw)
    count = 0
    for _trial in sweep.planned_trials(0, sweep.trial_count):
        count += 1
    return count


def expand_and_render(hpw: dict) -> int:
    largest = 0
    for workflow in iter_workflows(hpw):
        largest = max(largest, len(json.dumps(workflow, separators=(",", ":")).encode()))
    return largest


def product_floor(hpw: dict) -> int:
    sweep = sweep_of(hpw)
    values = [list(domain.values()) for domain in sweep.space.domains if isinstance(domain, FiniteDomain)]
    count = 0
    for _combination in itertools.product(*values):
        count += 1
    return count


def best_seconds(run: Callable[[], object], repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return min(timings)


def peak_bytes(run: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def render_command_seconds(hpw: dict) -> tuple[float, float]:
    """Wall and CPU seconds of `manage.py render_hyperparam` on the sweep, as a user runs it."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as manifest, open(os.devnull, "w") as sink:
        json.dump(hpw, manifest)
        manifest.flush()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "manage.py", "render_hyperparam", manifest.name],
            cwd=REPO, env=env, stdout=sink, stderr=subprocess.DEVNULL, check=True,
        )  # fmt: skip
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-command", action="store_true", help="skip the render_hyperparam run")
    args = parser.parse_args()

    hpw = grid_100k()
    plan = plan_batches(hpw)
    assert expand_only(hpw) == product_floor(hpw) == 100_000

    cases = {
        "itertools.product (floor)": lambda: product_floor(hpw),
        "expand (planned trials)": lambda: expand_only(hpw),
        "expand + render workflows": lambda: expand_and_render(hpw),
    }
    seconds = {name: best_seconds(run, args.repeat) for name, run in cases.items()}
    peaks = {name: peak_bytes(run) for name, run in cases.items()}
    floor = seconds["itertools.product (floor)"]

    print(f"grid: 100,000 combinations -> {plan.batch_count} workflows of <= {plan.trials_per_batch} trials")
    print(f"{'case':<28} {'seconds':>9} {'x floor':>9} {'peak MiB':>9}")
    for name in cases:
        print(f"{name:<28} {seconds[name]:>9.3f} {seconds[name] / floor:>9.1f} {peaks[name] / MIB:>9.2f}")

    largest_index, largest_size = 0, 0
    for index in range(plan.batch_count):
        size = len(json.dumps(build_batch(hpw, index, plan=plan), separators=(",", ":")).encode())
        if size > largest_size:
            largest_index, largest_size = index, size
    workflow = build_batch(hpw, largest_index, plan=plan)
    failed = fake_argo.Outcome(phase="Failed", metric=None, message="OOMKilled " * 20)
    finished = fake_argo.run(workflow, lambda position, arguments: failed)
    with_status = len(json.dumps(finished, separators=(",", ":")).encode())
    verdict = "OK" if with_status < OBJECT_LIMIT_BYTES else "TOO LARGE"
    print(f"largest workflow as created:       {largest_size / 1024:8.1f} KiB (batch {largest_index})")
    print(
        f"same, every node's status written: {with_status / 1024:8.1f} KiB "
        f"(limit {OBJECT_LIMIT_BYTES / 1024:.0f} KiB) {verdict}"
    )
    if args.skip_command:
        return
    load = os.getloadavg()[0]
    wall, cpu = render_command_seconds(hpw)
    print(
        f"manage.py render_hyperparam, end to end: {wall:.1f} s wall, {cpu:.1f} s CPU (target: 3 s CPU)"
        f" — env -i PATH=... python manage.py render_hyperparam GRID.json > /dev/null, {os.cpu_count()} CPUs,"
        f" load average {load:.1f} before the run"
    )


if __name__ == "__main__":
    main()
