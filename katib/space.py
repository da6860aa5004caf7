"""Katib's `spec.parameters` as our search space: each parameter becomes the `hyperparam.space` domain that
holds exactly the values Katib's services draw from, or is refused by field.

The mapping, and why it is exact:
- `int`, `uniform` → `IntUniform(min, max, step or 1)`: min, min + step, ... up to max, as Optuna's
  IntDistribution and Katib's grid (`range(min, max + 1, step)`) enumerate them.
- `int`, `logUniform`, no step (or 1) → `IntUniform(min, max, log=True)`, min at least 1.
- `double`, `uniform`, no step → `Uniform(min, max)`; with a step → `Range(min, max, step)`, computed in
  decimal, so `0.01` by `0.005` gives `0.015`, not `0.015000000000000001`.
- `double`, `logUniform`, no step → `Uniform(min, max, log=True)`, min above 0.
- `categorical` and `discrete` → `Choice(list)`, the values as written.
Refused, each naming its field: `normal` and `logNormal` (hyperopt's Gaussians, which no domain of ours
draws from), a step on a `logUniform` parameter (hyperopt's quantised log scale), `unknown` types and
distributions, numbers Katib's services could not read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from fields import FieldError
from hyperparam.space import Choice, Domain, IntUniform, Range, SearchSpace, Uniform
from hyperparam.space.domains import render_scalar
from hyperparam.space.numbers import as_decimal, written_as_integer
from katib import constants as k
from katib.wording import cut

_INT64 = 2**63


def search_space(parameters: object, errors: list[FieldError]) -> SearchSpace | None:
    """The domains of `spec.parameters`, in order; None after adding every refusal to `errors`."""
    count = len(errors)
    domains: list[Domain] = []
    first: dict[str, int] = {}
    for index, raw in enumerate(parameters if isinstance(parameters, list) else []):
        path = f"spec.parameters[{index}]"
        parameter = raw if isinstance(raw, Mapping) else {}
        name = parameter.get("name")
        if not isinstance(name, str) or not name:
            errors.append(FieldError(f"{path}.name", "must be specified"))
            continue
        if name in first:
            errors.append(
                FieldError(f"{path}.name", f"duplicate of spec.parameters[{first[name]}].name ({name!r})")
            )
            continue
        first[name] = index
        domain = _domain(name, parameter, path, errors)
        if domain is not None:
            domains.append(domain)
    if len(errors) > count:
        return None
    return SearchSpace(tuple(domains))


def _domain(name: str, parameter: Mapping[str, Any], path: str, errors: list[FieldError]) -> Domain | None:
    kind = parameter.get("parameterType")
    raw_space = parameter.get("feasibleSpace")
    space = raw_space if isinstance(raw_space, Mapping) else {}
    space_path = f"{path}.feasibleSpace"
    if kind in (k.PARAMETER_CATEGORICAL, k.PARAMETER_DISCRETE):
        return _choice(name, space.get("list"), f"{space_path}.list", errors)
    if kind not in (k.PARAMETER_INT, k.PARAMETER_DOUBLE):
        errors.append(
            FieldError(
                f"{path}.parameterType",
                f"parameterType {kind!r} has no domain in Argo-ML's engine: use int, double, categorical or "
                "discrete",
            )
        )
        return None
    distribution = space.get("distribution") or k.DISTRIBUTION_UNIFORM
    if distribution not in (k.DISTRIBUTION_UNIFORM, k.DISTRIBUTION_LOG_UNIFORM):
        errors.append(
            FieldError(
                f"{space_path}.distribution",
                f"distribution {distribution} has no domain in Argo-ML's engine: use uniform or logUniform",
            )
        )
        return None
    integer = kind == k.PARAMETER_INT
    count = len(errors)
    low = _number(space, "min", space_path, integer, errors)
    high = _number(space, "max", space_path, integer, errors)
    step = _number(space, "step", space_path, integer, errors) if space.get("step") else None
    if low is not None and high is not None and high < low:
        errors.append(
            FieldError(f"{space_path}.max", f"must be at least feasibleSpace.min ({low}), not {high}")
        )
    if step is not None and step <= 0:
        errors.append(FieldError(f"{space_path}.step", f"must be greater than 0, not {step}"))
    log = distribution == k.DISTRIBUTION_LOG_UNIFORM
    if log:
        _check_log(low, step, integer, space_path, errors)
    if len(errors) > count or low is None or high is None:
        return None
    if integer:
        return IntUniform(name, int(low), int(high), int(step) if step is not None else 1, log=log)
    if step is not None:
        return Range(name, low, high, step)
    return Uniform(name, float(low), float(high), log=log)


def _check_log(
    low: Decimal | None, step: Decimal | None, integer: bool, path: str, errors: list[FieldError]
) -> None:
    """A log scale needs positive bounds, and no step but 1 for integers: the quantised log scale of
    hyperopt has no domain of ours."""
    if step is not None and not (integer and step == 1):
        errors.append(
            FieldError(
                f"{path}.step",
                "a step on a logUniform parameter has no domain in Argo-ML's engine: remove the step, or use "
                "distribution uniform",
            )
        )
    if low is not None and integer and low < 1:
        errors.append(FieldError(f"{path}.min", f"must be at least 1 for a logUniform int, not {low}"))
    if low is not None and not integer and low <= 0:
        errors.append(FieldError(f"{path}.min", f"must be greater than 0 for a logUniform double, not {low}"))


def _number(
    space: Mapping[str, Any], key: str, path: str, integer: bool, errors: list[FieldError]
) -> Decimal | None:
    """`feasibleSpace.<key>`: a string Katib's services read as an int (int parameters) or a 64-bit float."""
    raw = space.get(key)
    field = f"{path}.{key}"
    if raw is None or raw == "":
        errors.append(FieldError(field, "must be specified"))
        return None
    number = as_decimal(raw) if isinstance(raw, str) else None
    if number is None:
        errors.append(FieldError(field, f"must be a number written as a string, not {cut(repr(raw))}"))
        return None
    if integer:
        if not written_as_integer(number) or number != number.to_integral_value():
            errors.append(
                FieldError(field, f"must be an integer for parameterType int, not {cut(repr(raw))}")
            )
            return None
        if not -_INT64 <= number < _INT64:
            errors.append(FieldError(field, f"must be a 64-bit integer, not {cut(repr(raw))}"))
            return None
    elif not math.isfinite(float(number)) or (float(number) == 0 and number != 0):
        errors.append(FieldError(field, f"must be a number a 64-bit float holds, not {cut(repr(raw))}"))
        return None
    return number


def _choice(name: str, values: object, path: str, errors: list[FieldError]) -> Choice | None:
    if not isinstance(values, list) or not values:
        errors.append(FieldError(path, "must list at least one value"))
        return None
    if not all(isinstance(value, str | int | float | bool) for value in values):
        errors.append(FieldError(path, "must list strings"))
        return None
    return Choice(name, tuple(render_scalar(value) for value in values))


def grid_problems(space: SearchSpace, max_trials: int | None) -> list[FieldError]:
    """Katib's grid service (Optuna's): every parameter must have finitely many values (a double needs a
    step), and maxTrialCount may not exceed the number of combinations."""
    errors: list[FieldError] = []
    # The space holds one domain per parameter, in the spec's order (`search_space`).
    for index, domain in enumerate(space.domains):
        if not domain.finite:
            errors.append(
                FieldError(
                    f"spec.parameters[{index}].feasibleSpace.step",
                    f"Param {domain.name} step is nil; For discrete search space, all parameters must "
                    "include step",
                )
            )
    if errors or max_trials is None:
        return errors
    combinations = space.grid_size_up_to(max_trials)
    if max_trials > combinations:
        errors.append(
            FieldError(
                "spec.maxTrialCount",
                f"Max Trial Count: {max_trials} > all possible search combinations: {combinations}",
            )
        )
    return errors


def continuous_count(parameters: object) -> int:
    """How many parameters are int or double: CMA-ES needs two."""
    entries = parameters if isinstance(parameters, list) else []
    return sum(
        1
        for entry in entries
        if isinstance(entry, Mapping) and entry.get("parameterType") in (k.PARAMETER_INT, k.PARAMETER_DOUBLE)
    )
