"""A HyperparamWorkflow's spec, validated into a `Sweep`, and the trials a grid or random sweep plans.

`parse_sweep` reports every problem at once with field paths (for the admission webhook) and returns a value
that the manifest builder and the controller share. A sweep without an objective (a plain grid or random
search: "run every combination") only needs its trials to succeed; adaptive algorithms learn from the
objective's metric and require one. Trials are numbered 0..trial_count-1; for grid and random search,
trial `i`'s parameters are a pure function of the spec (and the seed), so any batch can be computed
without the others. Adaptive algorithms (tpe, cmaes, qmc) get their trials from Optuna in rounds instead.

Every count the spec carries is checked against `limits.current()` before anything grows with it: trials (a
grid's size, found by multiplying the domains' sizes only as far as the bound; `samples`; `maxTrials`),
trials at once (`parallelism`), an adaptive search's rounds, and the loops and parallelism of the embedded
workflow (`hyperparam.workflow_counts`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import fields
import limits
from fields import ErrorList
from hyperparam import workflow_counts
from hyperparam.space import Domain, FiniteDomain, SearchSpace, parse_hyperparams
from hyperparam.space.counts import HUGE, too_many
from workflows import safeyaml

GRID = "grid"
RANDOM = "random"
ADAPTIVE_ALGORITHMS = ("tpe", "cmaes", "qmc")
ALGORITHMS = (GRID, RANDOM, *ADAPTIVE_ALGORITHMS)

# Katib's default for parallelTrialCount: people arriving from Katib find the same behaviour.
DEFAULT_PARALLELISM = 3
# Optuna's samplers seed numpy, which takes 32-bit seeds.
SEED_LIMIT = 2**32

# The key that carries the trial index next to the parameters in each fan-out item (and so in the Argo UI's
# node names); reserved, so no hyperparameter can take it.
TRIAL_KEY = "argoml-trial"

_SPEC_FIELDS = {
    "workflow",
    "hyperparams",
    "algorithm",
    "parallelism",
    "maxTrials",
    "maxFailedTrials",
    "objective",
}
_ALGORITHM_FIELDS = {"name", "samples", "seed"}
_OBJECTIVE_FIELDS = {"metric", "goal", "target"}
Goal = Literal["minimize", "maximize"]


@dataclass(frozen=True)
class Algorithm:
    name: str
    seed: int
    samples: int | None = None

    @property
    def adaptive(self) -> bool:
        return self.name in ADAPTIVE_ALGORITHMS


@dataclass(frozen=True)
class Objective:
    """The metric is an output parameter of the entrypoint template; `target` ends the sweep early."""

    metric: str
    goal: Goal
    target: float | None = None

    def better(self, candidate: float, incumbent: float) -> bool:
        return candidate < incumbent if self.goal == "minimize" else candidate > incumbent

    def reached(self, value: float) -> bool:
        if self.target is None:
            return False
        return value <= self.target if self.goal == "minimize" else value >= self.target


@dataclass(frozen=True, slots=True)
class PlannedTrial:
    """A trial to run: its number in the sweep and the exact strings each hyperparameter receives."""

    index: int
    params: dict[str, str]


@dataclass(frozen=True)
class Sweep:
    """A valid spec. `workflow` is the user's Argo WorkflowSpec, untouched."""

    workflow: Mapping[str, Any]
    space: SearchSpace
    algorithm: Algorithm
    parallelism: int
    max_trials: int | None
    max_failed_trials: int | None
    objective: Objective | None
    # Entrypoint inputs that are not hyperparameters but come from the workflow's arguments: the fan-out
    # passes them on, as Argo does when the entrypoint is the workflow's root.
    passthrough_parameters: tuple[str, ...] = ()

    @property
    def metric(self) -> str | None:
        """The output parameter each trial reports, or None for a sweep that only runs its trials."""
        return self.objective.metric if self.objective is not None else None

    @property
    def entrypoint(self) -> str:
        return str(self.workflow["entrypoint"])

    @property
    def trial_count(self) -> int:
        """How many trials the sweep runs if nothing stops it early."""
        if self.algorithm.name == GRID:
            cap = self.max_trials if self.max_trials is not None else limits.current().trials_per_sweep
            return min(self.space.grid_size_up_to(cap), cap)
        if self.algorithm.name == RANDOM:
            budgets = [n for n in (self.algorithm.samples, self.max_trials) if n is not None]
            return min(budgets)
        assert self.max_trials is not None, "validation requires maxTrials for adaptive search"
        return self.max_trials

    def planned_trials(self, start: int, stop: int) -> Iterator[PlannedTrial]:
        """Trials start..stop-1 of a grid or random sweep, computed without the ones before."""
        if not 0 <= start <= stop <= self.trial_count:
            raise IndexError(f"trials [{start}, {stop}) outside the sweep's {self.trial_count}")
        if self.algorithm.name == GRID:
            for index, params in enumerate(self.space.grid_points(start, stop), start):
                yield PlannedTrial(index, params)
        elif self.algorithm.name == RANDOM:
            for index in range(start, stop):
                yield PlannedTrial(index, self.space.random_point(self.algorithm.seed, index))
        else:
            raise ValueError(f"{self.algorithm.name} trials come from the sampler, round by round")


def seed_from_uid(uid: str) -> int:
    """A stable seed for a sweep that did not choose one, so its random trials survive controller restarts."""
    return int.from_bytes(hashlib.sha256(uid.encode()).digest()[:4], "big")


def parse_sweep(spec: object, *, fallback_seed: int = 0, path: str = "spec") -> Sweep:
    """Validate a HyperparamWorkflow spec; raises SpecError listing every problem with its field path."""
    errors = ErrorList()
    if not isinstance(spec, Mapping):
        errors.add(path, "must be an object")
        errors.raise_if_any()
    assert isinstance(spec, Mapping)
    # The CRD keeps unknown fields for the webhook's "did you mean", so a stored spec may nest as deep as
    # its writer liked: the bound comes before any field is read.
    too_deep = safeyaml.nesting_problem(dict(spec))
    if too_deep:
        errors.add(path, too_deep)
        errors.raise_if_any()
    for key in sorted(str(key) for key in spec if key not in _SPEC_FIELDS):
        errors.add(f"{path}.{key}", "unknown field; expected " + ", ".join(sorted(_SPEC_FIELDS)))

    entry = _entrypoint_template(spec.get("workflow"), f"{path}.workflow", errors)
    domains = parse_hyperparams(
        spec.get("hyperparams"), f"{path}.hyperparams", errors, frozenset({TRIAL_KEY})
    )
    algorithm = _parse_algorithm(spec.get("algorithm"), f"{path}.algorithm", errors, fallback_seed)
    parallelism = _integer(
        spec, "parallelism", path, errors, minimum=1, default=DEFAULT_PARALLELISM, bound=PARALLEL_BOUND
    )
    max_trials = _integer(spec, "maxTrials", path, errors, minimum=1, bound=TRIALS_BOUND)
    max_failed = _integer(spec, "maxFailedTrials", path, errors, minimum=0, bound=TRIALS_BOUND)
    objective = None
    if spec.get("objective") is not None:
        objective = _parse_objective(spec["objective"], f"{path}.objective", errors)
    elif algorithm is not None and algorithm.adaptive:
        errors.add(
            f"{path}.objective",
            f"required for {algorithm.name} search: it chooses each round's trials from the metric the "
            "earlier ones reported ({metric: <output parameter of the entrypoint>, "
            "goal: minimize | maximize})",
        )

    passthrough: tuple[str, ...] = ()
    if isinstance(spec.get("workflow"), Mapping):
        errors.extend(workflow_counts.problems(spec["workflow"], f"{path}.workflow"))
    if entry is not None:
        template_path, template = entry
        _check_declared(
            spec.get("hyperparams"), domains, template, template_path, f"{path}.hyperparams", errors
        )
        swept = set(_positions_by_name(spec.get("hyperparams")))
        passthrough = _passthrough(spec["workflow"], template, template_path, swept, errors)
        if objective is not None:
            _check_metric(objective, template, template_path, f"{path}.objective.metric", errors)
    if algorithm is not None:
        # A maxTrials written but refused still counts as set: its own error says what to change.
        has_max_trials = spec.get("maxTrials") is not None
        _check_algorithm_fits(spec.get("hyperparams"), domains, algorithm, has_max_trials, path, errors)
    # `_integer` answers the default for a value it refused.
    parallelism_refused = spec.get("parallelism") not in (None, parallelism)
    if algorithm is not None and algorithm.adaptive and max_trials is not None and not parallelism_refused:
        assert parallelism is not None, "parallelism has a default"
        _check_rounds(max_trials, parallelism, path, errors)
    errors.raise_if_any()
    assert algorithm is not None, "errors were raised above"
    assert parallelism is not None, "parallelism has a default"
    return Sweep(
        workflow=spec["workflow"],
        space=SearchSpace(tuple(domains)),
        algorithm=algorithm,
        parallelism=parallelism,
        max_trials=max_trials,
        max_failed_trials=max_failed,
        objective=objective,
        passthrough_parameters=passthrough,
    )


def _entrypoint_template(
    workflow: object, path: str, errors: ErrorList
) -> tuple[str, Mapping[str, Any]] | None:
    """The entrypoint template and its path, or None after reporting why it cannot be found."""
    if not isinstance(workflow, Mapping):
        errors.add(path, "required: an Argo Workflow spec (entrypoint, templates, arguments, ...)")
        return None
    entrypoint = workflow.get("entrypoint")
    templates = workflow.get("templates")
    if not isinstance(entrypoint, str) or not entrypoint:
        errors.add(f"{path}.entrypoint", "required: the name of the template each trial runs")
    if not isinstance(templates, list) or not templates:
        errors.add(f"{path}.templates", "required: a non-empty list (workflowTemplateRef is not supported)")
        return None
    if not isinstance(entrypoint, str) or not entrypoint:
        return None
    for position, template in enumerate(templates):
        if isinstance(template, Mapping) and template.get("name") == entrypoint:
            return f"{path}.templates[{position}]", template
    errors.add(f"{path}.entrypoint", f"no template named {entrypoint!r} in {path}.templates")
    return None


def _parameter_names(template: Mapping[str, Any], side: str) -> list[str]:
    block = template.get(side)
    parameters = block.get("parameters") if isinstance(block, Mapping) else None
    if not isinstance(parameters, list):
        return []
    return [p["name"] for p in parameters if isinstance(p, Mapping) and isinstance(p.get("name"), str)]


def _check_declared(
    raw: object,
    domains: list[Domain],
    template: Mapping[str, Any],
    template_path: str,
    path: str,
    errors: ErrorList,
) -> None:
    declared = _parameter_names(template, "inputs")
    positions = _positions_by_name(raw)
    for domain in domains:
        if domain.name not in declared:
            listed = ", ".join(declared) if declared else "none"
            errors.add(
                f"{path}[{positions[domain.name]}].name",
                f"{domain.name!r} is not an input parameter of the entrypoint template {template['name']!r} "
                f"({template_path}.inputs.parameters declares: {listed})",
            )


def _passthrough(
    workflow: Mapping[str, Any],
    template: Mapping[str, Any],
    template_path: str,
    swept: set[str],
    errors: ErrorList,
) -> tuple[str, ...]:
    """Entrypoint inputs that the workflow's arguments fill; an input nothing fills is an error."""
    arguments = workflow.get("arguments")
    argument_names = set(_parameter_names({"arguments": arguments}, "arguments"))
    inputs = template.get("inputs")
    parameters = inputs.get("parameters") if isinstance(inputs, Mapping) else None
    passthrough: list[str] = []
    for position, parameter in enumerate(parameters if isinstance(parameters, list) else []):
        if not isinstance(parameter, Mapping) or not isinstance(parameter.get("name"), str):
            continue
        name = parameter["name"]
        if name in swept:
            continue
        if name in argument_names:
            passthrough.append(name)
        elif "default" not in parameter and "value" not in parameter:
            errors.add(
                f"{template_path}.inputs.parameters[{position}]",
                f"{name!r} has no value: sweep it in spec.hyperparams, set it in "
                "spec.workflow.arguments.parameters, or give it a default",
            )
    return tuple(passthrough)


def _check_metric(
    objective: Objective, template: Mapping[str, Any], template_path: str, path: str, errors: ErrorList
) -> None:
    declared = _parameter_names(template, "outputs")
    if objective.metric not in declared:
        listed = ", ".join(declared) if declared else "none"
        errors.add(
            path,
            f"{objective.metric!r} is not an output parameter of the entrypoint template "
            f"{template['name']!r} ({template_path}.outputs.parameters declares: {listed})",
        )


def _check_algorithm_fits(
    raw: object,
    domains: list[Domain],
    algorithm: Algorithm,
    has_max_trials: bool,
    path: str,
    errors: ErrorList,
) -> None:
    if algorithm.name == GRID:
        positions = _positions_by_name(raw)
        infinite = [domain for domain in domains if not isinstance(domain, FiniteDomain)]
        for domain in infinite:
            errors.add(
                f"{path}.hyperparams[{positions[domain.name]}]",
                f"grid search needs a finite domain (values, range, int or categorical), not "
                f"{'loguniform' if getattr(domain, 'log', False) else 'uniform'}",
            )
        if not infinite and domains and not has_max_trials:
            # Multiplied no further than it must be to tell: 10^100 says "too many" as well as 10^7900.
            size = SearchSpace(tuple(domains)).grid_size_up_to(HUGE)
            if size > limits.current().trials_per_sweep:
                message = too_many("combinations", size, "trials_per_sweep")
                errors.add(f"{path}.hyperparams", f"{message}: narrow the space or set spec.maxTrials")
    elif algorithm.name == RANDOM:
        if algorithm.samples is None and not has_max_trials:
            errors.add(f"{path}.algorithm.samples", "required for random search (or set spec.maxTrials)")
    elif not has_max_trials:
        errors.add(f"{path}.maxTrials", f"required for {algorithm.name} search: it decides when to stop")


def _parse_algorithm(raw: object, path: str, errors: ErrorList, fallback_seed: int) -> Algorithm | None:
    if raw is None:
        return Algorithm(GRID, seed=fallback_seed)
    if isinstance(raw, str):
        # The shorthand `algorithm: grid`, as people write it, for an algorithm with no settings.
        if raw not in ALGORITHMS:
            errors.add(path, f"must be one of {', '.join(ALGORITHMS)}, not {raw!r}")
            return None
        raw = {"name": raw}
    if not isinstance(raw, Mapping):
        errors.add(
            path,
            "must be an algorithm name (grid | random | tpe | cmaes | qmc) "
            "or an object {name, samples, seed}",
        )
        return None
    count = errors.count
    for key in sorted(str(key) for key in raw if key not in _ALGORITHM_FIELDS):
        errors.add(f"{path}.{key}", "unknown field; expected " + ", ".join(sorted(_ALGORITHM_FIELDS)))
    name = raw.get("name", GRID)
    if name not in ALGORITHMS:
        errors.add(f"{path}.name", f"must be one of {', '.join(ALGORITHMS)}, not {name!r}")
    samples = _integer(raw, "samples", path, errors, minimum=1, bound=TRIALS_BOUND)
    if samples is not None and name != RANDOM:
        errors.add(f"{path}.samples", "only random search takes samples")
    seed = _integer(raw, "seed", path, errors, minimum=0, maximum=SEED_LIMIT - 1)
    if errors.count > count:
        return None
    return Algorithm(str(name), seed=fallback_seed if seed is None else seed, samples=samples)


def _parse_objective(raw: object, path: str, errors: ErrorList) -> Objective | None:
    if not isinstance(raw, Mapping):
        errors.add(
            path,
            "must be an object {metric: <output parameter of the entrypoint>, goal: minimize | maximize}",
        )
        return None
    count = errors.count
    for key in sorted(str(key) for key in raw if key not in _OBJECTIVE_FIELDS):
        errors.add(f"{path}.{key}", "unknown field; expected " + ", ".join(sorted(_OBJECTIVE_FIELDS)))
    metric = raw.get("metric")
    if not isinstance(metric, str) or not metric:
        errors.add(f"{path}.metric", "required: the name of an output parameter of the entrypoint template")
    goal = raw.get("goal")
    if goal not in ("minimize", "maximize"):
        errors.add(f"{path}.goal", f"must be minimize or maximize, not {goal!r}")
    target = raw.get("target")
    if target is not None and (
        isinstance(target, bool) or not isinstance(target, int | float) or not math.isfinite(target)
    ):
        errors.add(f"{path}.target", f"must be a finite number, not {target!r}")
    if errors.count > count:
        return None
    assert isinstance(metric, str), "checked above"
    assert goal in ("minimize", "maximize"), "checked above"
    return Objective(metric, goal, None if target is None else float(target))


def _check_rounds(max_trials: int, parallelism: int, path: str, errors: ErrorList) -> None:
    """An adaptive search runs at most `parallelism` trials a round, one Workflow each: at least this many
    rounds, whatever the batch plan later makes of them (`manifests.plan_batches` counts them exactly)."""
    rounds = math.ceil(max_trials / parallelism)
    if rounds > limits.current().workflows_per_sweep:
        errors.add(
            f"{path}.maxTrials",
            f"{too_many('workflows', rounds, 'workflows_per_sweep')}: an adaptive search runs "
            f"spec.parallelism ({parallelism}) trials a round, one Workflow each; raise spec.parallelism "
            "or lower spec.maxTrials",
        )


# (what is counted, the `limits` field that bounds it) for `_integer`.
TRIALS_BOUND = ("trials", "trials_per_sweep")
PARALLEL_BOUND = ("trials at once", "parallel_trials")


def _integer(
    raw: Mapping[str, Any],
    key: str,
    path: str,
    errors: ErrorList,
    *,
    minimum: int,
    maximum: int | None = None,
    default: int | None = None,
    bound: tuple[str, str] | None = None,
) -> int | None:
    """The integer at `key`: at least `minimum`, at most `maximum`, and within `bound` (what it counts and
    the `limits` field that bounds it, read now and refused in that table's words)."""
    value = fields.integer(errors, f"{path}.{key}", raw.get(key), minimum=minimum, maximum=maximum)
    if value is None:
        return default
    if bound is not None and value > getattr(limits.current(), bound[1]):
        errors.add(f"{path}.{key}", too_many(bound[0], value, bound[1]))
        return default
    return value


def _positions_by_name(raw: object) -> dict[str, int]:
    """Where each named hyperparameter sits in the spec's list, to point errors at it."""
    positions: dict[str, int] = {}
    for position, entry in enumerate(raw if isinstance(raw, list) else []):
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            positions.setdefault(entry["name"], position)
    return positions
