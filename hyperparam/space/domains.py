"""The domain of one hyperparameter: the values it may take, and the exact strings a template receives.

One entry of `spec.hyperparams` is `name` plus exactly one of:

    values: [0.1, "adam", 3]              a finite list, each value passed as written
    range: {min: 0.1, max: 0.5, step: 0.1} inclusive; decimal arithmetic, so 0.1 + 0.2 is "0.3"
    uniform: {min: 0.0, max: 1.0}         a float, sampled (random or adaptive search only)
    loguniform: {min: 1e-5, max: 1e-1}    a float sampled on a log scale, min > 0
    int: {min: 1, max: 64, step: 1, log: false}   integers (finite, so grid search may enumerate them)
    categorical: {values: [...]}          the same as `values`, named for people coming from Optuna

Values reach Argo as strings. Strings are passed untouched; numbers are written the shortest way that reads
back to the same number (`repr` for floats); numeric strings in a `range` keep their written precision
("0.10" steps by "0.05" give "0.10", "0.15", ...).

Seam for adaptive search (Optuna, a later step): every domain keeps what an Optuna distribution needs:
- `Choice` → CategoricalDistribution(choices)
- `Range` → IntDistribution / FloatDistribution(low, high, step), or a CategoricalDistribution of
  `Range.values()` where exact decimal strings matter
- `Uniform` → FloatDistribution(low, high, log)
- `IntUniform` → IntDistribution(low, high, step, log)
Whatever Optuna suggests goes back through `Domain.render(value)`: the exact string the template receives.
"""

from __future__ import annotations

import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation

from hyperparam.space.errors import ErrorList

# Enough digits that min + i * step is exact for any range a person would write.
_DECIMAL = Context(prec=80)
# Enough digits for the exact number of values of any range whose bounds and step a 64-bit float holds
# (at most (2 x 1.8e308) / 5e-324, about 10^632), so counting them never fails.
_COUNTING = Context(prec=700)
# A uniform draw has 53 random bits (`space.unit_draw`); a domain larger than a float can multiply takes its
# index from those bits in integer arithmetic.
_DRAW_BITS = 53
_FLOAT_MAX = 2**1023
# JSON integers Kubernetes (and our client) carry: a larger one must be written as a string.
_INT64 = 2**63

# Argo accepts these characters in parameter names (its paramOrArtifactNameRegex).
PARAMETER_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")

# The longest `repr` of a float ("-2.2250738585072014e-308") plus its JSON quotes.
_FLOAT_JSON_WIDTH = 26

Scalar = str | int | float | bool


def render_scalar(value: Scalar) -> str:
    """The string a template receives for a value written in the spec (JSON booleans stay JSON-like)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def json_width(text: str) -> int:
    """Bytes `text` takes once serialized as a JSON string (quotes and escapes included)."""
    return len(json.dumps(text))


class Domain(ABC):
    """What every hyperparameter domain offers; finite domains also offer `FiniteDomain`'s indexing."""

    name: str

    @property
    def finite(self) -> bool:
        return False

    @abstractmethod
    def sample(self, u: float) -> str:
        """The value for a uniform draw `u` in [0, 1) — the one place randomness enters a domain."""

    @abstractmethod
    def render(self, value: object) -> str:
        """The template string for a native value (e.g. one suggested by Optuna); rejects values outside."""

    @abstractmethod
    def max_json_width(self) -> int:
        """An upper bound on the serialized size of any value this domain yields (sizes batches)."""


class FiniteDomain(Domain):
    """A domain with a known number of values, each reachable by index without listing the others."""

    @property
    def finite(self) -> bool:
        return True

    @property
    @abstractmethod
    def size(self) -> int: ...

    @abstractmethod
    def value_at(self, index: int) -> str: ...

    def values(self) -> Iterator[str]:
        return (self.value_at(index) for index in range(self.size))

    def sample(self, u: float) -> str:
        size = self.size
        if size < _FLOAT_MAX:
            return self.value_at(min(int(u * size), size - 1))
        # u * size would overflow a float: the same floor, from u's 53 bits, in integers.
        return self.value_at(min((int(u * 2**_DRAW_BITS) * size) >> _DRAW_BITS, size - 1))


@dataclass(frozen=True)
class Choice(FiniteDomain):
    """`values` or `categorical`: an explicit list, each entry already rendered to its template string."""

    name: str
    choices: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.choices)

    def value_at(self, index: int) -> str:
        return self.choices[index]

    def render(self, value: object) -> str:
        if not isinstance(value, str | int | float | bool):
            raise ValueError(f"{self.name}: {value!r} is not one of the choices")
        text = render_scalar(value)
        if text not in self.choices:
            raise ValueError(f"{self.name}: {text!r} is not one of the choices")
        return text

    def max_json_width(self) -> int:
        return max(json_width(choice) for choice in self.choices)


@dataclass(frozen=True)
class Range(FiniteDomain):
    """`range`: min, min + step, ... up to max inclusive, computed in decimal so no float drift appears."""

    name: str
    start: Decimal
    stop: Decimal
    step: Decimal

    @property
    def size(self) -> int:
        return int(_COUNTING.divide_int(_COUNTING.subtract(self.stop, self.start), self.step)) + 1

    @property
    def is_integer(self) -> bool:
        """True when every bound was written as an integer, so the values are integers too."""
        return all(_written_as_integer(number) for number in (self.start, self.stop, self.step))

    def value_at(self, index: int) -> str:
        if not 0 <= index < self.size:
            raise IndexError(f"{self.name}: index {index} outside the range's {self.size} values")
        return str(_DECIMAL.add(self.start, _DECIMAL.multiply(Decimal(index), self.step)))

    def render(self, value: object) -> str:
        """Snap a suggested number to the nearest point of the range and write it like the others."""
        number = _as_decimal(value)
        if number is None:
            raise ValueError(f"{self.name}: {value!r} is not a number")
        steps = _DECIMAL.divide(_DECIMAL.subtract(number, self.start), self.step)
        index = int(steps.to_integral_value())
        if not 0 <= index < self.size:
            raise ValueError(f"{self.name}: {value!r} is outside [{self.start}, {self.stop}]")
        return self.value_at(index)

    def max_json_width(self) -> int:
        # Every value shares the exponent min(start, step): bound digits + sign + point + quotes, with room
        # for the exponent notation Decimal uses for very small or very large numbers.
        exponent = min(_exponent(self.start), _exponent(self.step))
        largest = max(abs(self.start), abs(self.stop))
        integer_digits = len(str(int(largest)))
        return 1 + integer_digits + 1 + max(0, -exponent) + 8 + 2


@dataclass(frozen=True)
class Uniform(Domain):
    """`uniform` and `loguniform`: a float between low and high, for sampled search only."""

    name: str
    low: float
    high: float
    log: bool = False

    def sample(self, u: float) -> str:
        if self.log:
            value = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            value = self.low + u * (self.high - self.low)
        return repr(min(max(value, self.low), self.high))

    def render(self, value: object) -> str:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{self.name}: {value!r} is not a number")
        number = float(value)
        if not self.low <= number <= self.high:
            raise ValueError(f"{self.name}: {value!r} is outside [{self.low}, {self.high}]")
        return repr(number)

    def max_json_width(self) -> int:
        return _FLOAT_JSON_WIDTH


@dataclass(frozen=True)
class IntUniform(FiniteDomain):
    """`int`: integers low, low + step, ... high; sampled uniformly or on a log scale (step 1 only)."""

    name: str
    low: int
    high: int
    step: int = 1
    log: bool = False

    @property
    def size(self) -> int:
        return (self.high - self.low) // self.step + 1

    def value_at(self, index: int) -> str:
        if not 0 <= index < self.size:
            raise IndexError(f"{self.name}: index {index} outside the {self.size} integers")
        return str(self.low + index * self.step)

    def sample(self, u: float) -> str:
        if not self.log:
            return super().sample(u)
        # Uniform in log space over [low - 0.5, high + 0.5) and rounded, so every integer is reachable.
        low, high = math.log(self.low - 0.5), math.log(self.high + 0.5)
        value = round(math.exp(low + u * (high - low)))
        return str(min(max(value, self.low), self.high))

    def render(self, value: object) -> str:
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise ValueError(f"{self.name}: {value!r} is not an integer")
        number = int(value)
        if not self.low <= number <= self.high or (number - self.low) % self.step:
            raise ValueError(f"{self.name}: {value!r} is not in range({self.low}, {self.high}, {self.step})")
        return str(number)

    def max_json_width(self) -> int:
        return max(len(str(self.low)), len(str(self.high))) + 2


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
        if _written_as_integer(start) and _written_as_integer(stop):
            step = Decimal(1)
        else:
            errors.add(f"{path}.step", "required for a range of decimals (integer ranges default to 1)")
    if step is not None and step <= 0:
        errors.add(f"{path}.step", f"must be > 0 (got {step})")
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
            errors.add(f"{path}.min", f"must be > 0 for a log scale (got {low})")
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
        errors.add(f"{path}.step", f"must be > 0 (got {step})")
    if low is not None and high is not None and high < low:
        errors.add(f"{path}.max", f"must be >= min ({high} < {low})")
    if log is True:
        if step != 1:
            errors.add(f"{path}.step", "must be 1 when log is true")
        if low is not None and low < 1:
            errors.add(f"{path}.min", f"must be >= 1 when log is true (got {low})")
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
    number = _as_decimal(raw[key])
    if number is None:
        errors.add(f"{path}.{key}", f"must be a finite number (got {_shown(raw[key])})")
    elif not _float_holds(number):
        errors.add(
            f"{path}.{key}",
            "must be a number a 64-bit float holds: 0, or between about 5e-324 and 1.8e308 in size "
            f"(got {_shown(raw[key])})",
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
        errors.add(f"{path}.{key}", f"must be an integer (got {raw[key]!r})")
        return None
    return int(number)


def _as_decimal(value: object) -> Decimal | None:
    """A number as the user wrote it: floats through `repr` (0.1 stays 0.1), numeric strings verbatim."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            return None
        return number if number.is_finite() else None
    return None


def _exponent(number: Decimal) -> int:
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int), "finite decimals have integer exponents"
    return exponent


def _written_as_integer(number: Decimal) -> bool:
    return _exponent(number) >= 0
