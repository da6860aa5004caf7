"""A Katib algorithm and early stopping rule, read as Katib's services read their settings, mapped to our
engine's names.

Why the services' rules: Katib's webhook accepts any `algorithmSettings`; the suggestion service that
katib-config names for the algorithm (hyperopt for random and tpe, Optuna for grid and multivariate-tpe,
Goptuna for cmaes and sobol) then checks them in `ValidateAlgorithmSettings` and the Experiment fails with
its message. We check the same settings with the same messages, before any trial runs. `random_state`
becomes our seed (a 32-bit one: Optuna's samplers seed numpy); the other settings are kept by name with
the value the service would use, for the engine to honour.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fields import FieldError
from hyperparam import sweep

#: Katib's algorithm name → our engine's. Katib's `sobol` is Goptuna's Sobol sequence: our `qmc` is
#: Optuna's QMC sampler over a (scrambled) Sobol sequence.
ENGINE_NAMES = {
    "random": "random",
    "grid": "grid",
    "tpe": "tpe",
    "multivariate-tpe": "multivariate-tpe",
    "cmaes": "cmaes",
    "sobol": "qmc",
}
SETTINGS_PATH = "spec.algorithm.algorithmSettings"
_GO_INTEGER = re.compile(r"[+-]?[0-9]+")
_GO_FLOAT = re.compile(r"[+-]?(inf|infinity|nan|([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?)", re.IGNORECASE)


@dataclass(frozen=True)
class SearchAlgorithm:
    """The algorithm a plan runs: Katib's name, ours, the seed, and the other settings by Katib's names
    with the values Katib's service would use (`gamma` 0.25, `restart_strategy` "ipop", ...)."""

    katib_name: str
    engine: str
    seed: int
    seeded: bool
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def runnable(self) -> bool:
        """Whether `hyperparam` plans this algorithm today (grid and random by index, the rest in rounds)."""
        return self.engine in sweep.ALGORITHMS

    def option(self, name: str) -> Any:
        return dict(self.options).get(name)


@dataclass(frozen=True)
class MedianStop:
    """Katib's median stopping rule with its service's defaults: a trial stops once at least
    `min_trials_required` trials succeeded and its running average of the objective after `start_step`
    reports is worse than their median."""

    min_trials_required: int = 3
    start_step: int = 4


def read_algorithm(
    raw: Mapping[str, Any], fallback_seed: int, errors: list[FieldError]
) -> SearchAlgorithm | None:
    """The algorithm of a validated spec.algorithm, or None after adding the service's refusal."""
    name = str(raw.get("algorithmName"))
    settings = _settings(raw.get("algorithmSettings"), SETTINGS_PATH, errors)
    if settings is None:
        return None
    count = len(errors)
    options: dict[str, Any] = {}
    seed: int | None = None
    check = _CHECKS[name]
    for index, (setting, value) in enumerate(settings):
        path = f"{SETTINGS_PATH}[{index}]"
        problem = check(setting, value, options)
        if problem is not None:
            errors.append(FieldError(path, problem))
        elif "random_state" in options:  # Goptuna's Sobol sampler reads no seed
            seed = options.pop("random_state")
            if not 0 <= seed < sweep.SEED_LIMIT:
                errors.append(
                    FieldError(
                        f"{path}.value",
                        f"random_state must be between 0 and {sweep.SEED_LIMIT - 1} (our samplers seed "
                        f"numpy, which takes 32-bit seeds), not {seed}",
                    )
                )
    if len(errors) > count:
        return None
    return SearchAlgorithm(
        katib_name=name,
        engine=ENGINE_NAMES[name],
        seed=fallback_seed if seed is None else seed,
        seeded=seed is not None,
        options=tuple(options.items()),
    )


def read_early_stopping(raw: object, errors: list[FieldError]) -> MedianStop | None:
    """Katib's medianstop service's ValidateEarlyStoppingSettings, and the rule it would apply."""
    if not isinstance(raw, Mapping):
        return None
    path = "spec.earlyStopping.algorithmSettings"
    settings = _settings(raw.get("algorithmSettings"), path, errors)
    if settings is None:
        return None
    values: dict[str, int] = {}
    count = len(errors)
    for index, (name, value) in enumerate(settings):
        problem = _python_check(
            name,
            value,
            {
                "min_trials_required": (
                    int,
                    lambda n: n > 0,
                    "min_trials_required must be greater than zero (>0)",
                ),
                "start_step": (int, lambda n: n >= 1, "start_step must be greater or equal than one (>=1)"),
            },
            values,
            "medianstop",
        )
        if problem is not None:
            errors.append(FieldError(f"{path}[{index}]", problem))
    if len(errors) > count:
        return None
    return MedianStop(**values)


def _settings(raw: object, path: str, errors: list[FieldError]) -> list[tuple[str, str]] | None:
    """The (name, value) pairs of a settings list; the CRD says both are strings."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        errors.append(FieldError(path, f"must be a list, not {type(raw).__name__}"))
        return None
    pairs = []
    for index, entry in enumerate(raw):
        entry = entry if isinstance(entry, Mapping) else {}
        name, value = entry.get("name") or "", entry.get("value") or ""
        if not isinstance(name, str) or not isinstance(value, str):
            errors.append(FieldError(f"{path}[{index}]", "name and value must be strings"))
            return None
        pairs.append((name, value))
    return pairs


# One setting's rule: (how the service parses the value, what it must satisfy, what it says otherwise).
_Rule = tuple[Callable[[str], Any], Callable[[Any], bool], str]


def _python_check(
    name: str,
    value: str,
    rules: Mapping[str, _Rule],
    options: dict[str, Any],
    algorithm: str,
) -> str | None:
    """A Python service's check of one setting (hyperopt's, Optuna's, medianstop's): an unknown name, a
    value its parser refuses (in Python's own words, as the service reports them) or one out of range."""
    if name not in rules:
        return f"unknown setting {name} for algorithm {algorithm}"
    parse, holds, message = rules[name]
    try:
        parsed = parse(value)
    except ValueError as error:
        return f"failed to validate {name}({value}): {error}"
    if not holds(parsed):
        return message
    options[name] = parsed
    return None


def _at_least_zero(name: str, wording: str) -> _Rule:
    return (int, lambda n: n >= 0, wording.format(name))


_HYPEROPT_RANDOM: dict[str, _Rule] = {
    "random_state": _at_least_zero("random_state", "{} should be great or equal than zero")
}
_HYPEROPT_TPE: dict[str, _Rule] = {
    "gamma": (float, lambda x: 1 > x > 0, "gamma should be in the range of (0, 1)"),
    "prior_weight": (float, lambda x: x > 0, "prior_weight should be great than zero"),
    "n_EI_candidates": (int, lambda n: n > 0, "n_EI_candidates should be great than zero"),
    **_HYPEROPT_RANDOM,
}
# Optuna's service returns an empty message for a negative seed of grid; we say what is wrong.
_OPTUNA_GRID = _HYPEROPT_RANDOM
_OPTUNA_TPE = {
    name: _at_least_zero(name, "{} should be greate or equal than zero")
    for name in ("n_startup_trials", "n_ei_candidates", "random_state")
}


def _goptuna_cmaes(name: str, value: str, options: dict[str, Any]) -> str | None:
    """Goptuna's sampler options (converter.go): unknown names are ignored; a value Go cannot parse fails
    the study's creation, in Go's words."""
    prefix = "Failed to create goptuna study and search space: "
    if name == "random_state":
        if not _GO_INTEGER.fullmatch(value):
            return f'{prefix}strconv.Atoi: parsing "{value}": invalid syntax'
        options[name] = int(value)
    elif name == "sigma":
        if not _GO_FLOAT.fullmatch(value) or not math.isfinite(float(value)):
            return f'{prefix}strconv.ParseFloat: parsing "{value}": invalid syntax'
        options[name] = float(value)
    elif name == "restart_strategy":
        if value not in ("ipop", "bipop", "none"):
            return f"{prefix}invalid restart_strategy: '{value}'"
        options[name] = value
    return None


def _goptuna_sobol(name: str, value: str, options: dict[str, Any]) -> str | None:
    """Goptuna's Sobol sampler takes no settings; the service ignores any it is given."""
    return None


def _python(rules: Mapping[str, _Rule], algorithm: str) -> Callable[[str, str, dict[str, Any]], str | None]:
    return lambda name, value, options: _python_check(name, value, rules, options, algorithm)


#: Each served algorithm's settings check: the service katib-config names for it in Katib 0.19.
_CHECKS: dict[str, Callable[[str, str, dict[str, Any]], str | None]] = {
    "random": _python(_HYPEROPT_RANDOM, "random"),
    "tpe": _python(_HYPEROPT_TPE, "tpe"),
    "grid": _python(_OPTUNA_GRID, "grid"),
    "multivariate-tpe": _python(_OPTUNA_TPE, "multivariate-tpe"),
    "cmaes": _goptuna_cmaes,
    "sobol": _goptuna_sobol,
}
