"""`manage.py render_hyperparam FILE.yaml [--batch N]`: print the Workflows the controller would create."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from fields import SpecError
from hyperparam import manifests
from hyperparam.batching import BatchPlan
from hyperparam.sweep import Sweep
from web import yamlio
from web.documents import read_yaml_documents
from workflows.lint import lint_document


class Command(BaseCommand):
    help = (
        "Dry run: print, as YAML, the Argo Workflows the controller would create for the HyperparamWorkflow "
        "in FILE (- for stdin), one per batch in batch order, each checked by our linter. Adaptive sweeps "
        "(tpe, cmaes, qmc) print their first round only: later rounds depend on its results. An unseeded "
        "random sweep takes its seed from its uid in the cluster, so set spec.algorithm.seed to compare. "
        "Nothing is sent to the cluster."
    )

    # Django's system checks import every URLconf, and with it every app's API and Optuna (over a second of
    # CPU): a dry run that reads a file and prints YAML needs none of it; `manage.py check` still runs them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="A HyperparamWorkflow manifest (YAML or JSON).")
        parser.add_argument("--batch", type=int, default=None, help="Print only this batch (from 0).")

    def handle(self, *args: Any, file: str, batch: int | None, **options: Any) -> None:
        # A large sweep allocates millions of short-lived containers; each full collection would also walk
        # the few hundred thousand objects of start-up, which live until exit. Frozen, they are skipped,
        # and a larger first generation collects less often (a fifth of the 100k grid's CPU went to gc).
        gc.freeze()
        gc.set_threshold(10_000)
        hpw = _read(file)
        try:
            sweep = manifests.sweep_of(hpw)
            plan = manifests.plan_batches(hpw, sweep)
        except SpecError as error:
            problems = "\n  ".join(map(str, error.errors))
            raise CommandError(f"{file} is not a valid HyperparamWorkflow:\n  {problems}") from None
        if batch is not None and not 0 <= batch < plan.batch_count:
            raise CommandError(f"--batch {batch}: the sweep has batches 0 to {plan.batch_count - 1}")
        self.stderr.write(
            f"{sweep.trial_count} trials in {plan.batch_count} workflow(s) of up to {plan.trials_per_batch} "
            f"trials, {plan.concurrent_batches} at a time"
        )
        for workflow in _workflows(hpw, sweep, plan, batch):
            result = lint_document(workflow)
            if not result.ok:
                name = workflow["metadata"]["name"]
                raise CommandError(f"workflow {name} fails the lint:\n  " + "\n  ".join(result.messages))
            self.stdout.write("---\n" + yamlio.dump(workflow), ending="")


def _workflows(
    hpw: dict[str, Any], sweep: Sweep, plan: BatchPlan, batch: int | None
) -> Iterator[dict[str, Any]]:
    """Each batch's Workflow, built one at a time (a 100,000-trial grid never sits in memory at once)."""
    if sweep.algorithm.adaptive:
        # Imported only here: hyperparam.adaptive loads Optuna and SciPy (half a second of CPU at start-up),
        # which a grid or random sweep never uses.
        from hyperparam import adaptive

        if batch not in (None, 0):
            raise CommandError(
                f"--batch {batch}: an adaptive sweep's round {batch} depends on earlier results"
            )
        first = adaptive.ask_round(sweep, 0, plan.batch_trials(0), [], {})
        yield manifests.build_workflow(hpw, 0, [s.planned for s in first.suggestions], sweep=sweep, plan=plan)
        return
    for index in range(plan.batch_count) if batch is None else [batch]:
        yield manifests.build_batch(hpw, index, sweep=sweep, plan=plan)


def _read(file: str) -> dict[str, Any]:
    documents = read_yaml_documents(file)
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise CommandError(f"{file}: expected one HyperparamWorkflow, found {len(documents)} documents")
    hpw = documents[0]
    metadata = hpw.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str) or not metadata["name"]:
        raise CommandError(f"{file}: metadata.name is required, a string (it names the Workflows)")
    return hpw
