"""The domain of one hyperparameter: the values it may take, and the exact strings a template receives.
`hyperparam.space.parse` reads `spec.hyperparams` into these domains.

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
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Context, Decimal

from hyperparam.space import numbers

# Enough digits that min + i * step is exact for any range a person would write.
_DECIMAL = Context(prec=80)
# Enough digits for the exact number of values of any range whose bounds and step a 64-bit float holds
# (at most (2 x 1.8e308) / 5e-324, about 10^632), so counting them never fails.
_COUNTING = Context(prec=700)
# A uniform draw has 53 random bits (`space.unit_draw`); a domain larger than a float can multiply takes its
# index from those bits in integer arithmetic.
_DRAW_BITS = 53
_FLOAT_MAX = 2**1023
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
        return all(numbers.written_as_integer(number) for number in (self.start, self.stop, self.step))

    def value_at(self, index: int) -> str:
        if not 0 <= index < self.size:
            raise IndexError(f"{self.name}: index {index} outside the range's {self.size} values")
        return str(_DECIMAL.add(self.start, _DECIMAL.multiply(Decimal(index), self.step)))

    def render(self, value: object) -> str:
        """Snap a suggested number to the nearest point of the range and write it like the others."""
        number = numbers.as_decimal(value)
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
        exponent = min(numbers.exponent(self.start), numbers.exponent(self.step))
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
