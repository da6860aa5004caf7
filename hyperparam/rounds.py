"""The rounds of an adaptive sweep in the database: asked once, then reused by every later reconcile.

A round's suggestions are stored (SamplerRound) before its Workflow is created, so a reconcile that runs
again after a crash or a conflict builds the same Workflow. The next round's study is rebuilt from the
stored rounds (parameters and Optuna's bookkeeping) joined with the mirrored trials (phase and metric).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from hyperparam.adaptive import PastTrial, Round, Suggestion, ask_round
from hyperparam.batching import BatchPlan
from hyperparam.models import SamplerRound, Sweep, Trial
from hyperparam.sweep import Sweep as SweepSpec


def round_trials(row: Sweep, spec: SweepSpec, plan: BatchPlan, number: int) -> list[Suggestion]:
    """Round `number`: as stored, or asked now (told every earlier round) and stored."""
    stored = SamplerRound.objects.filter(sweep=row, number=number).first()
    if stored is None:
        asked = ask_round(
            spec, number, plan.batch_trials(number), history(row), last_study_attrs(row, number)
        )
        stored = _store(row, asked)
    return [
        Suggestion(int(item["index"]), dict(item["params"]), dict(item.get("system_attrs") or {}))
        for item in stored.suggestions
    ]


def history(row: Sweep) -> list[PastTrial]:
    """Every suggestion of every stored round, with what its trial became."""
    outcomes = {
        index: (phase, metric)
        for index, phase, metric in Trial.objects.filter(sweep=row)
        .order_by()
        .values_list("index", "phase", "metric")
    }
    past = []
    for stored in SamplerRound.objects.filter(sweep=row).order_by("number"):
        for item in stored.suggestions:
            index = int(item["index"])
            phase, metric = outcomes.get(index, ("Pending", None))
            past.append(PastTrial(index, item["params"], phase, metric, item.get("system_attrs") or {}))
    return past


def last_study_attrs(row: Sweep, number: int) -> dict:
    previous = SamplerRound.objects.filter(sweep=row, number__lt=number).order_by("-number").first()
    return dict(previous.study_system_attrs) if previous is not None else {}


def _store(row: Sweep, asked: Round) -> SamplerRound:
    suggestions = [
        {"index": item.index, "params": item.params, "system_attrs": item.system_attrs}
        for item in asked.suggestions
    ]
    try:
        with transaction.atomic():
            return SamplerRound.objects.create(
                sweep=row,
                number=asked.number,
                suggestions=suggestions,
                study_system_attrs=asked.study_system_attrs,
            )
    except IntegrityError:
        # Another run stored this round first (a lease handed on mid-run): its suggestions win.
        return SamplerRound.objects.get(sweep=row, number=asked.number)
