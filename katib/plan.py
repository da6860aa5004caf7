"""An Experiment as the plan our sweep engine runs: its search space as `hyperparam.space` domains, the
algorithm by our engine's name with Katib's settings, the budgets, the objective (with additional metrics
and how each is read), early stopping and the resume policy.

Why a frozen value (parse once, at the door): the controller, the trial builder and the dashboard read
the same plan and never the raw Experiment again, and whatever cannot run on our engine is refused here,
by field, before a single trial is created. The plan starts from Katib's defaults and Katib's admission
rules (`katib.defaults`, `katib.validation`); what Katib's suggestion services would refuse after
admission (a grid over a continuous parameter, CMA-ES over one dimension, a setting out of range), this
refuses too, in the services' words.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import fields
import limits
from fields import FieldError, RawDict
from hyperparam import sweep
from hyperparam.space import SearchSpace
from hyperparam.space.counts import HUGE, too_many
from katib import constants as k
from katib.algorithms import MedianStop, SearchAlgorithm, read_algorithm, read_early_stopping
from katib.defaults import with_defaults
from katib.space import continuous_count, grid_problems, search_space
from katib.validation import validate

_STRATEGIES = (k.EXTRACT_BY_MIN, k.EXTRACT_BY_MAX, k.EXTRACT_BY_LATEST)


@dataclass(frozen=True)
class Budget:
    """How many trials run in all (None: until the goal or the grid's end, as Katib allows), at once, and
    how many may fail before the Experiment does (None: no bound)."""

    max_trials: int | None
    parallel_trials: int
    max_failed_trials: int | None


@dataclass(frozen=True)
class Objective:
    """The objective as our engine reads it (`sweep.Objective`: metric, goal, target), the additional
    metrics each trial reports, and how each metric's observations become its value (min, max, latest)."""

    sweep: sweep.Objective
    additional_metrics: tuple[str, ...]
    strategies: tuple[tuple[str, str], ...]

    def strategy(self, metric: str) -> str:
        """How `metric`'s observations are reduced to one value; Katib's defaults name every metric."""
        return dict(self.strategies).get(metric, k.EXTRACT_BY_LATEST)


@dataclass(frozen=True)
class ExperimentPlan:
    """What our engine needs to run an Experiment: one value, read once."""

    space: SearchSpace
    algorithm: SearchAlgorithm
    budget: Budget
    objective: Objective
    early_stopping: MedianStop | None
    resume_policy: str


def experiment_plan(experiment: RawDict) -> ExperimentPlan:
    """The plan of `experiment` (defaulted here, so a stored or a raw Experiment give the same plan);
    SpecError naming the fields at fault (the first `fields.MAX_LISTED`, and a count of the rest) when it
    cannot run on our engine."""
    defaulted = with_defaults(experiment)
    errors = validate(defaulted)
    if errors:
        _refuse(errors)
    spec: Mapping[str, Any] = defaulted["spec"]
    metadata = fields.as_dict(defaulted.get("metadata"))
    uid = metadata.get("uid")
    fallback_seed = sweep.seed_from_uid(uid) if isinstance(uid, str) and uid else 0
    problems: list[FieldError] = []
    budget = _budget(spec, problems)
    space = search_space(spec.get("parameters"), problems)
    algorithm = read_algorithm(fields.as_dict(spec.get("algorithm")), fallback_seed, problems)
    if algorithm is not None:
        problems += _algorithm_fits(algorithm, space, spec, budget)
    objective = _objective(fields.as_dict(spec.get("objective")), problems)
    early_stopping = read_early_stopping(spec.get("earlyStopping"), problems)
    if problems:
        _refuse(problems)
    assert space is not None, "problems were raised"
    assert algorithm is not None, "problems were raised"
    assert objective is not None, "problems were raised"
    return ExperimentPlan(
        space=space,
        algorithm=algorithm,
        budget=budget,
        objective=objective,
        early_stopping=early_stopping,
        resume_policy=str(spec.get("resumePolicy")),
    )


def _refuse(errors: list[FieldError]) -> None:
    """SpecError listing the first problems and counting the rest, as every parser's refusal does."""
    found = fields.ErrorList()
    found.extend(errors)
    found.raise_if_any()


def _budget(spec: Mapping[str, Any], problems: list[FieldError]) -> Budget:
    """The three counts, validated by Katib's rules, and each within the deployment's bounds."""
    max_trials = fields.as_int(spec.get("maxTrialCount"))
    parallel = fields.as_int(spec.get("parallelTrialCount"))
    assert parallel is not None, "the defaults set parallelTrialCount and validation checked it"
    for key, value, bound in (
        ("maxTrialCount", max_trials, ("trials", "trials_per_sweep")),
        ("parallelTrialCount", parallel, ("trials at once", "parallel_trials")),
    ):
        if value is not None and value > getattr(limits.current(), bound[1]):
            problems.append(FieldError(f"spec.{key}", too_many(bound[0], value, bound[1])))
    return Budget(max_trials, parallel, fields.as_int(spec.get("maxFailedTrialCount")))


def _algorithm_fits(
    algorithm: SearchAlgorithm, space: SearchSpace | None, spec: Mapping[str, Any], budget: Budget
) -> list[FieldError]:
    """What the algorithm's Katib service checks of the space (grid, CMA-ES), and what our engine needs to
    know when to stop: a trial budget, or a grid whose size is within the deployment's bound."""
    problems: list[FieldError] = []
    if algorithm.katib_name == "cmaes" and continuous_count(spec.get("parameters")) < 2:
        problems.append(
            FieldError(
                "spec.parameters", "CMA-ES only supports two or more dimensional continuous search space."
            )
        )
    if space is None:
        return problems
    if algorithm.katib_name == "grid":
        problems += grid_problems(space, budget.max_trials)
        if not problems and budget.max_trials is None:
            # Multiplied no further than it must be to say: 10^100 says "too many" as well as 10^7900.
            size = space.grid_size_up_to(HUGE)
            if size > limits.current().trials_per_sweep:
                problems.append(
                    FieldError(
                        "spec.parameters",
                        f"{too_many('combinations', size, 'trials_per_sweep')}: narrow the space or set "
                        "spec.maxTrialCount",
                    )
                )
    elif budget.max_trials is None:
        problems.append(
            FieldError(
                "spec.maxTrialCount",
                f"required for {algorithm.katib_name} search on Argo-ML: our engine stops a search at its "
                "trial budget (Katib's SDK requires it too)",
            )
        )
    return problems


def _objective(raw: Mapping[str, Any], problems: list[FieldError]) -> Objective | None:
    """The validated objective: its goal as our `target`, each metric's strategy."""
    count = len(problems)
    goal = raw.get("goal")
    if goal is not None and (
        isinstance(goal, bool) or not isinstance(goal, int | float) or not math.isfinite(goal)
    ):
        problems.append(FieldError("spec.objective.goal", f"must be a finite number, not {goal!r}"))
    additional = raw.get("additionalMetricNames")
    names = additional if isinstance(additional, list) else []
    if (additional is not None and not isinstance(additional, list)) or not all(
        isinstance(name, str) and name for name in names
    ):
        problems.append(FieldError("spec.objective.additionalMetricNames", "must list metric names"))
    strategies: list[tuple[str, str]] = []
    listed = raw.get("metricStrategies")
    for index, entry in enumerate(listed if isinstance(listed, list) else []):
        entry = entry if isinstance(entry, Mapping) else {}
        value = entry.get("value")
        if value not in _STRATEGIES:
            problems.append(
                FieldError(
                    f"spec.objective.metricStrategies[{index}].value",
                    f"must be one of {', '.join(_STRATEGIES)}, not {value!r}",
                )
            )
            continue
        strategies.append((str(entry.get("name") or ""), str(value)))
    if len(problems) > count:
        return None
    objective_type = raw.get("type")
    assert objective_type in (k.OBJECTIVE_MINIMIZE, k.OBJECTIVE_MAXIMIZE), "validation checked the type"
    return Objective(
        sweep=sweep.Objective(
            metric=str(raw.get("objectiveMetricName")),
            goal=objective_type,
            target=None if goal is None else float(goal),
        ),
        additional_metrics=tuple(str(name) for name in names),
        strategies=tuple(strategies),
    )
