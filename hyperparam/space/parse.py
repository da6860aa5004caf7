"""`spec.hyperparams` read into domains, every problem reported with its field path.

One entry of `spec.hyperparams` is `name` plus exactly one of:

    values: [0.1, "adam", 3]              a finite list, each value passed as written
    range: {min: 0.1, max: 0.5, step: 0.1} inclusive; decimal arithmetic, so 0.1 + 0.2 is "0.3"
    uniform: {min: 0.0, max: 1.0}         a float, sampled (random or adaptive search only)
    loguniform: {min: 1e-5, max: 1e-1}    a float sampled on a log scale, min > 0
    int: {min: 1, max: 64, step: 1, log: false}   integers (finite, so grid search may enumerate them)
    categorical: {values: [...]}          the same as `values`, named for people coming from Optuna
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal

from fields import ErrorList
from hyperparam.space import numbers
from hyperparam.space.domains import Choice, Domain, IntUniform, Range, Uniform, render_scalar

# JSON integers Kubernetes (and our client) carry: a larger one must be written as a string.
_INT64 = 2**63

# Argo accepts these characters in parameter names (its paramOrArtifactNameRegex).
PARAMETER_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")

DOMAIN_KEYS = ("values", "range", "uniform", "loguniform", "int", "categorical")


def parse_hyperparams(raw: object, path: str, errors: ErrorList, reserved: frozenset[str]) -> list[Domain]:
    """Parse `spec.hyperparams`, reporting every problem to `errors`; returns the domains that parsed."""
    if not isinstance(raw, list) or not raw:
        errors.add(path, "must be a non-empty list of hyperparameters")
        return []
    domains: list[Domain] = []
    first_seen: dict[str, int] = {}
    for position, entry in enumerate(raw):
        entry_path = f"{path}[{position}]"
        if not isinstance(entry, Mapping):
            errors.add(entry_path, "must be an object with a name and one of " + ", ".join(DOMAIN_KEYS))
            continue
        name = _parse_name(entry.get("name"), f"{entry_path}.name", errors, reserved)
        if name is not None:
            if name in first_seen:
                errors.add(f"{entry_path}.name", f"duplicate of {path}[{first_seen[name]}].name ({name!r})")
            else:
                first_seen[name] = position
        domain = _parse_domain(entry, entry_path, errors, name or f"#{position}")
        if name is not None and domain is not None:
            domains.append(domain)
    return domains


def _parse_name(raw: object, path: str, errors: ErrorList, reserved: frozenset[str]) -> str | None:
    if not isinstance(raw, str) or not raw:
        errors.add(path, "required: the name of an input parameter of the entrypoint template")
        return None
    if not PARAMETER_NAME.match(raw):
        errors.add(path, f"{raw!r} is not a valid Argo parameter name (letters, digits, '-' and '_')")
        return None
    if raw in reserved:
        errors.add(path, f"{raw!r} is reserved for the sweep's own bookkeeping")
        return None
    return raw


def _parse_domain(entry: Mapping[str, object], path: str, errors: ErrorList, name: str) -> Domain | None:
    unknown = sorted(str(key) for key in entry if key != "name" and key not in DOMAIN_KEYS)
    for key in unknown:
        errors.add(f"{path}.{key}", "unknown field; expected one of " + ", ".join(DOMAIN_KEYS))
    present = [key for key in DOMAIN_KEYS if key in entry]
    if len(present) != 1:
        found = ", ".join(present) if present else "none"
        errors.add(path, f"must have exactly one of {', '.join(DOMAIN_KEYS)} (found: {found})")
        return None
    key = present[0]
    raw = entry[key]
    field = f"{path}.{key}"
    if key == "values":
        return _parse_choice(name, raw, field, errors)
    if key == "categorical":
        return _parse_categorical(name, raw, field, errors)
    if key == "range":
        return _parse_range(name, raw, field, errors)
    if key in ("uniform", "loguniform"):
        return _parse_uniform(name, raw, field, errors, log=key == "loguniform")
    return _parse_int(name, raw, field, errors)


def _parse_choice(name: str, raw: object, path: str, errors: ErrorList) -> Choice | None:
    if not isinstance(raw, list) or not raw:
        errors.add(path, "must be a non-empty list")
        return None
    count = errors.count
    rendered: list[str] = []
    first_seen: dict[str, int] = {}
    for index, value in enumerate(raw):
        value_path = f"{path}[{index}]"
        if not isinstance(value, str | int | float | bool):
            errors.add(value_path, "must be a string, number or boolean")
            continue
        if not _int64_holds(value):
            errors.add(value_path, _INT64_MESSAGE)
            continue
        if isinstance(value, float) and not math.isfinite(value):
            errors.add(value_path, "must be a finite number")
            continue
        text = render_scalar(value)
        if "{{" in text:
            errors.add(value_path, "must not contain '{{' (Argo would read it as a template expression)")
        elif text in first_seen:
            errors.add(value_path, f"duplicate of {path}[{first_seen[text]}] ({text!r})")
        else:
            first_seen[text] = index
            rendered.append(text)
    if errors.count > count:
        return None
    return Choice(name, tuple(rendered))


def _parse_categorical(name: str, raw: object, path: str, errors: ErrorList) -> Choice | None:
    if not isinstance(raw, Mapping):
        errors.add(path, "must be an object with `values` (a non-empty list)")
        return None
    _reject_unknown(raw, {"values"}, path, errors)
    return _parse_choice(name, raw.get("values"), f"{path}.values", errors)


def _parse_range(name: str, raw: object, path: str, errors: ErrorList) -> Range | None:
    if not isinstance(raw, Mapping):
        errors.add(path, "must be an object with min, max and step")
        return None
    _reject_unknown(raw, {"min", "max", "step"}, path, errors)
    count = errors.count
    start = _required_number(raw, "min", path, errors)
    stop = _required_number(raw, "max", path, errors)
    step: Decimal | None = None
    if "step" in raw:
        step = _required_number(raw, "step", path, errors)
    elif start is not None and stop is not None:
        if numbers.written_as_integer(start) and numbers.written_as_integer(stop):
            step = Decimal(1)
        else:
            errors.add(f"{path}.step", "required for a range of decimals (integer ranges default to 1)")
    if step is not None and step <= 0:
        errors.add(f"{path}.step", f"must be > 0, not {step}")
    if start is not None and stop is not None and stop < start:
        errors.add(f"{path}.max", f"must be >= min ({stop} < {start})")
    if errors.count > count or start is None or stop is None or step is None:
        return None
    return Range(name, start, stop, step)


def _parse_uniform(name: str, raw: object, path: str, errors: ErrorList, *, log: bool) -> Uniform | None:
    if not isinstance(raw, Mapping):
        errors.add(path, "must be an object with min and max")
        return None
    _reject_unknown(raw, {"min", "max"}, path, errors)
    count = errors.count
    low = _required_number(raw, "min", path, errors)
    high = _required_number(raw, "max", path, errors)
    if low is not None and high is not None:
        if high < low:
            errors.add(f"{path}.max", f"must be >= min ({high} < {low})")
        if log and low <= 0:
            errors.add(f"{path}.min", f"must be > 0 for a log scale, not {low}")
    if errors.count > count or low is None or high is None:
        return None
    return Uniform(name, float(low), float(high), log=log)


def _parse_int(name: str, raw: object, path: str, errors: ErrorList) -> IntUniform | None:
    if not isinstance(raw, Mapping):
        errors.add(path, "must be an object with min and max (and optional step, log)")
        return None
    _reject_unknown(raw, {"min", "max", "step", "log"}, path, errors)
    count = errors.count
    low = _required_integer(raw, "min", path, errors)
    high = _required_integer(raw, "max", path, errors)
    step = _required_integer(raw, "step", path, errors) if "step" in raw else 1
    log = raw.get("log", False)
    if not isinstance(log, bool):
        errors.add(f"{path}.log", "must be true or false")
    if step is not None and step <= 0:
        errors.add(f"{path}.step", f"must be > 0, not {step}")
    if low is not None and high is not None and high < low:
        errors.add(f"{path}.max", f"must be >= min ({high} < {low})")
    if log is True:
        if step != 1:
            errors.add(f"{path}.step", "must be 1 when log is true")
        if low is not None and low < 1:
            errors.add(f"{path}.min", f"must be >= 1 when log is true, not {low}")
    if errors.count > count or low is None or high is None or step is None:
        return None
    return IntUniform(name, low, high, step, log=bool(log))


def _reject_unknown(raw: Mapping[str, object], allowed: set[str], path: str, errors: ErrorList) -> None:
    for key in sorted(str(key) for key in raw if key not in allowed):
        errors.add(f"{path}.{key}", "unknown field; expected " + ", ".join(sorted(allowed)))


def _required_number(raw: Mapping[str, object], key: str, path: str, errors: ErrorList) -> Decimal | None:
    """The number at `key`, which a 64-bit float must hold: samplers and templates read it as one, and a
    number of a million digits (or an exponent of a million) would make every count and index of the
    domain a number of that size."""
    if key not in raw:
        errors.add(f"{path}.{key}", "required")
        return None
    if not _int64_holds(raw[key]):
        errors.add(f"{path}.{key}", _INT64_MESSAGE)
        return None
    number = numbers.as_decimal(raw[key])
    if number is None:
        errors.add(f"{path}.{key}", f"must be a finite number, not {_shown(raw[key])}")
    elif not _float_holds(number):
        errors.add(
            f"{path}.{key}",
            "must be a number a 64-bit float holds: 0, or between about 5e-324 and 1.8e308 in size, "
            f"not {_shown(raw[key])}",
        )
        return None
    return number


_INT64_MESSAGE = "must be an integer of at most 64 bits (write a larger number as a string)"


def _int64_holds(value: object) -> bool:
    return not isinstance(value, int) or isinstance(value, bool) or -_INT64 <= value < _INT64


def _float_holds(number: Decimal) -> bool:
    as_float = float(number)
    return math.isfinite(as_float) and (as_float != 0 or number == 0)


def _shown(value: object) -> str:
    """A value as an error message quotes it, cut short: the message must not grow with the input."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _required_integer(raw: Mapping[str, object], key: str, path: str, errors: ErrorList) -> int | None:
    number = _required_number(raw, key, path, errors)
    if number is None:
        return None
    if number != number.to_integral_value():
        errors.add(f"{path}.{key}", f"must be an integer, not {raw[key]!r}")
        return None
    return int(number)
