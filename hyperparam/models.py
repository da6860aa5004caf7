"""The database side of sweeps: the mirror of each HyperparamWorkflow, its history, its trials, and the
rounds an adaptive sampler asked for.

Who writes what (nobody else does, views never):
- `Sweep` and `SweepHistory`: the mirror (`kube.controller.mirror.apply_event`) from HyperparamWorkflow
  watch events; `mirrored_batches` only: the reconcile (which Workflow versions its trials were read from).
- `Trial`: the reconcile, from the generated Workflows' `status.nodes` (hyperparam/trialsync.py).
- `SamplerRound`: the reconcile of an adaptive sweep, once per round, before creating the round's Workflow.
"""

from __future__ import annotations

from typing import Any

from django.db import models

import fields
from hyperparam import batching
from hyperparam import trials as trial_phases
from kube.models import PHASE_MAX_LENGTH, MirroredResource, MirrorHistory

TRIAL_PHASE_CHOICES = [(phase, phase) for phase in trial_phases.PHASES]


class Sweep(MirroredResource):
    """One HyperparamWorkflow as the cluster last described it, with its status flattened into columns the
    admin and the API sort and filter by."""

    history_model = "hyperparam.SweepHistory"

    algorithm = models.CharField(max_length=16, blank=True, db_index=True)
    goal = models.CharField(max_length=8, blank=True)
    metric_name = models.CharField(max_length=253, blank=True)
    trial_counts = models.JSONField(default=dict, blank=True, help_text="status.trials: counts by phase.")
    trials_total = models.BigIntegerField(default=0, help_text="Trials created so far.")
    trials_finished = models.BigIntegerField(default=0)
    trials_planned = models.BigIntegerField(
        default=0, help_text="Trials the sweep runs unless it stops early."
    )
    best_metric = models.FloatField(null=True, blank=True)
    best_trial_index = models.BigIntegerField(null=True, blank=True)
    best_parameters = models.JSONField(default=dict, blank=True)
    workflows = models.JSONField(default=list, blank=True, help_text="status.workflows, in batch order.")
    mirrored_batches = models.JSONField(
        default=dict,
        blank=True,
        help_text="Batch index → resourceVersion of the Workflow its trials were last read from.",
    )

    class Meta(MirroredResource.Meta):
        indexes = [
            models.Index(fields=["phase"], name="hyperparam_sweep_phase"),
            models.Index(fields=["-created_at"], name="hyperparam_sweep_created"),
        ]

    @classmethod
    def observed_fields(cls, obj: dict[str, Any]) -> dict[str, Any]:
        spec = fields.as_dict(obj.get("spec"))
        status = fields.as_dict(obj.get("status"))
        objective = fields.as_dict(spec.get("objective"))
        # `algorithm: random` is shorthand for `algorithm: {name: random}`.
        raw_algorithm = spec.get("algorithm")
        algorithm = (
            {"name": raw_algorithm} if isinstance(raw_algorithm, str) else fields.as_dict(raw_algorithm)
        )
        counts = fields.as_dict(status.get("trials"))
        best = fields.as_dict(status.get("bestTrial"))
        finished, _, planned = str(status.get("progress") or "").partition("/")
        return {
            **super().observed_fields(obj),
            "algorithm": str(algorithm.get("name") or "grid")[:16],
            "goal": str(objective.get("goal") or "")[:8],
            "metric_name": str(objective.get("metric") or "")[:253],
            "trial_counts": counts,
            "trials_total": sum(batching.as_int(value) or 0 for value in counts.values()),
            "trials_finished": batching.as_int(finished) or 0,
            "trials_planned": batching.as_int(planned) or 0,
            "best_metric": _as_float(best.get("metric")),
            "best_trial_index": batching.as_int(best.get("index")),
            "best_parameters": best.get("parameters") if isinstance(best.get("parameters"), dict) else {},
            "workflows": status.get("workflows") if isinstance(status.get("workflows"), list) else [],
        }

    @property
    def parameter_names(self) -> list[str]:
        """The hyperparameters in spec order: the trial table's columns."""
        hyperparams = self.spec.get("hyperparams") if isinstance(self.spec, dict) else None
        return [
            entry["name"]
            for entry in hyperparams or []
            if isinstance(entry, dict) and isinstance(entry.get("name"), str)
        ]


class SweepHistory(MirrorHistory):
    resource = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="history")


class Trial(models.Model):
    """One combination of one sweep: the exact strings it received, how it went, and its metric.

    Scales to 100k rows per sweep: every list reads through one of the indexes below, and pages never
    count the whole table (the sweep's counts come from its status).
    """

    # No index of its own: the unique (sweep, index) one leads with it (one index less to write per trial).
    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="trials", db_index=False)
    index = models.BigIntegerField(help_text="The trial's number in the sweep.")
    params = models.JSONField(help_text="Hyperparameter name → the exact string the template received.")
    phase = models.CharField(max_length=PHASE_MAX_LENGTH, choices=TRIAL_PHASE_CHOICES)
    metric = models.FloatField(null=True, blank=True, help_text="The objective, when the trial reported it.")
    message = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    workflow = models.CharField(max_length=253, help_text="The Workflow that runs the trial.")
    node_id = models.CharField(max_length=253, blank=True, help_text="Its node in the Workflow's status.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["sweep", "index"]
        constraints = [
            models.UniqueConstraint(fields=["sweep", "index"], name="hyperparam_trial_one_per_index"),
        ]
        indexes = [
            # Best first when minimizing (an ascending btree keeps NULLs last on PostgreSQL). Maximizing
            # reads `metric DESC NULLS LAST`, indexed on PostgreSQL by migration 0003: SQLite, the dev
            # default, cannot declare NULLS LAST in an index.
            models.Index(fields=["sweep", "metric", "index"], name="hyperparam_trial_metric_asc"),
            models.Index(fields=["sweep", "phase", "index"], name="hyperparam_trial_phase"),
        ]

    def __str__(self) -> str:
        return f"{self.sweep_id}#{self.index}"

    @property
    def finished(self) -> bool:
        return self.phase in trial_phases.FINISHED_PHASES


class SamplerRound(models.Model):
    """The trials an adaptive sampler suggested for one round, asked once and kept, so a reconcile that runs
    again (after a crash, a conflict, a resync) builds the same Workflow instead of asking anew; with the
    sampler's own bookkeeping (Optuna system attributes) the next round's study is rebuilt from."""

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="sampler_rounds", db_index=False)
    number = models.IntegerField(help_text="The round, which is also the batch index of its Workflow.")
    suggestions = models.JSONField(
        help_text="[{index, params (template strings), system_attrs}] in trial order."
    )
    study_system_attrs = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["sweep", "number"]
        constraints = [
            models.UniqueConstraint(fields=["sweep", "number"], name="hyperparam_round_one_per_number"),
        ]

    def __str__(self) -> str:
        return f"{self.sweep_id} round {self.number}"


def _as_float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
