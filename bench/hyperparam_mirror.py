"""Hyperparameter sweeps: mirroring 10,000 trial updates from Workflow statuses into the database.

    .venv/bin/python bench/hyperparam_mirror.py [--trials 10000] [--repeat 3]

Completes bench/hyperparam_expand.py (expansion and rendering) with the other hot path of the controller:
`trialsync.sync_workflow` over the batch Workflows of a grid, as a reconcile runs it when Argo rewrites
their status. Four passes over the same trials: created (every trial inserted as Pending), running (every
row updated), finished (every row updated with its metric) and an unchanged resync (read and compared,
nothing written); then the status summary (counts by phase and the best trial). Statuses come from the
tests' fake Argo, with every field a real Argo pod node has. Prints seconds and rows/s per pass (best of
--repeat, each on fresh rows), with the share spent reading `status.nodes` (pure Python) apart.

Runs on a fresh PostgreSQL database (HYPERPARAM_BENCH_DATABASE, default argoml_hyperparam_bench on
127.0.0.1:5432; dropped, created and migrated).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")


def fresh_database(name: str) -> str:
    """Drop and create the bench database; its URL."""
    import psycopg
    from psycopg import sql

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return f"postgres://postgres@127.0.0.1:5432/{name}"


def grid_hpw(trials: int) -> dict[str, Any]:
    from hyperparam.tests.conftest import make_hpw, make_spec

    spec = make_spec(
        hyperparams=[
            {"name": "lr", "range": {"min": 1, "max": trials // 10}},
            {"name": "batch-size", "range": {"min": 8, "max": 80, "step": 8}},
        ],
        parallelism=1000,
    )
    return make_hpw(spec, name="bench-sweep", uid="bench-uid")


def statuses(hpw: dict[str, Any], outcome: Any) -> list[dict[str, Any]]:
    """Every batch Workflow of the sweep with the status Argo writes when each trial is at `outcome`."""
    from hyperparam.manifests import iter_workflows
    from hyperparam.tests import fake_argo

    return [fake_argo.run(workflow, lambda position, arguments: outcome(position), workflow_phase="Running")
            for workflow in iter_workflows(hpw)]  # fmt: skip


def sync_all(sweep: Any, workflows: list[dict[str, Any]]) -> int:
    """As a reconcile does it: every changed Workflow of the sweep in one transaction (one commit)."""
    from django.db import transaction

    from hyperparam.trialsync import sync_workflow

    with transaction.atomic():
        return sum(sync_workflow(sweep, workflow, "loss") for workflow in workflows)


def parse_all(workflows: list[dict[str, Any]]) -> int:
    """Only the pure part: reading every trial from `status.nodes`."""
    from hyperparam.trials import read_trials

    return sum(len(read_trials(workflow, "loss")) for workflow in workflows)


def timed(run: Callable[[], int]) -> tuple[float, int]:
    started = time.perf_counter()
    written = run()
    return time.perf_counter() - started, written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    os.environ["DATABASE_URL"] = fresh_database(
        os.environ.get("HYPERPARAM_BENCH_DATABASE", "argoml_hyperparam_bench")
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from hyperparam.models import Sweep, Trial
    from hyperparam.sweep import Objective
    from hyperparam.tests import fake_argo
    from hyperparam.trialsync import summarize_stored
    from kube.controller.mirror import apply_event

    hpw = grid_hpw(args.trials)
    apply_event(Sweep, "ADDED", {**hpw, "metadata": {**hpw["metadata"], "resourceVersion": "1"}})
    sweep = Sweep.objects.get(uid="bench-uid")
    passes = {
        "created (insert)": statuses(hpw, lambda position: None),
        "running (update)": statuses(hpw, lambda position: fake_argo.Outcome(phase="Running", metric=None)),
        "finished (update)": statuses(hpw, lambda position: fake_argo.Outcome(metric=str(position / 1000))),
        "unchanged resync": statuses(hpw, lambda position: fake_argo.Outcome(metric=str(position / 1000))),
    }
    workflows = len(passes["created (insert)"])
    parse_seconds = {
        name: min(timed(functools.partial(parse_all, wfs))[0] for _ in range(args.repeat))
        for name, wfs in passes.items()
    }

    best: dict[str, tuple[float, int]] = {}
    summary_seconds = []
    for _ in range(args.repeat):
        Trial.objects.filter(sweep=sweep).delete()
        for name, wfs in passes.items():
            seconds, written = timed(functools.partial(sync_all, sweep, wfs))
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, written)
        summary_seconds.append(timed(lambda: summarize_stored(sweep, Objective("loss", "minimize")).total)[0])

    print(f"{args.trials:,} trials in {workflows} workflows; best of {args.repeat}; PostgreSQL on 127.0.0.1")
    print(f"{'pass':<20} {'rows written':>12} {'seconds':>9} {'trials/s':>10} {'parse s':>8} {'db s':>8}")
    for name, (seconds, written) in best.items():
        parse = parse_seconds[name]
        print(
            f"{name:<20} {written:>12,} {seconds:>9.3f} {args.trials / seconds:>10,.0f} "
            f"{parse:>8.3f} {max(seconds - parse, 0):>8.3f}"
        )
    print(f"status summary (counts by phase + best trial): {min(summary_seconds) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
