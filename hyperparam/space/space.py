"""A search space: its grid, indexed without expanding it, and reproducible random points.

Grid order is `itertools.product` order (the last hyperparameter varies fastest), so combination `i` is the
mixed-radix number `i` with one digit per hyperparameter: any slice of a 100,000-combination grid is computed
directly, and the count is a product of sizes, known without listing anything.

Random points come from a counter-based generator: the draw for (seed, trial, hyperparameter name) is a hash,
so trial `i` is computed without drawing trials 0..i-1, the same seed gives the same trials in every process
(no Python hash seed, no Mersenne Twister state), and adding a hyperparameter leaves the others' draws alone.
Draws are with replacement: a random search over a small finite space may repeat a combination.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from hyperparam.space.domains import Domain, FiniteDomain

# Finite domains up to this many values keep their strings in a tuple (fast lookups, bounded memory); larger
# ones compute each value on demand.
_CACHE_LIMIT = 65_536

_UNIT = 2.0**-53


@dataclass(frozen=True)
class SearchSpace:
    """The ordered hyperparameters of a sweep."""

    domains: tuple[Domain, ...]
    _lookups: tuple[Sequence[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_lookups", tuple(_lookup(domain) for domain in self.domains))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(domain.name for domain in self.domains)

    @property
    def is_finite(self) -> bool:
        return all(domain.finite for domain in self.domains)

    @property
    def grid_size(self) -> int:
        """The number of combinations, from the domains' sizes alone."""
        return math.prod(self._finite(domain).size for domain in self.domains)

    def grid_point(self, index: int) -> dict[str, str]:
        """Combination `index` of the grid, computed directly from its mixed-radix digits."""
        if not 0 <= index < self.grid_size:
            raise IndexError(f"combination {index} outside a grid of {self.grid_size}")
        digits = self._digits(index)
        return {
            name: lookup[digit] for name, lookup, digit in zip(self.names, self._lookups, digits, strict=True)
        }

    def grid_points(self, start: int, stop: int) -> Iterator[dict[str, str]]:
        """Combinations start..stop-1 in order, stepping an odometer instead of re-dividing each index."""
        size = self.grid_size
        if not 0 <= start <= stop <= size:
            raise IndexError(f"slice [{start}, {stop}) outside a grid of {size}")
        if start == stop:
            return
        names = self.names
        lookups = self._lookups
        radices = [self._finite(domain).size for domain in self.domains]
        digits = self._digits(start)
        current = [lookup[digit] for lookup, digit in zip(lookups, digits, strict=True)]
        last = len(digits) - 1
        for _ in range(stop - start):
            yield dict(zip(names, current, strict=True))
            position = last
            while position >= 0:
                digits[position] += 1
                if digits[position] < radices[position]:
                    current[position] = lookups[position][digits[position]]
                    break
                digits[position] = 0
                current[position] = lookups[position][0]
                position -= 1

    def random_point(self, seed: int, index: int) -> dict[str, str]:
        """Trial `index` of a random search: the same for the same seed, in any process, at any time."""
        return {domain.name: domain.sample(unit_draw(seed, index, domain.name)) for domain in self.domains}

    def _digits(self, index: int) -> list[int]:
        digits = [0] * len(self.domains)
        for position in range(len(self.domains) - 1, -1, -1):
            index, digits[position] = divmod(index, self._finite(self.domains[position]).size)
        return digits

    @staticmethod
    def _finite(domain: Domain) -> FiniteDomain:
        if not isinstance(domain, FiniteDomain):
            raise ValueError(
                f"{domain.name}: a {type(domain).__name__} domain has no grid; sample it instead"
            )
        return domain


def unit_draw(seed: int, index: int, name: str) -> float:
    """A uniform number in [0, 1) determined by (seed, trial index, hyperparameter name) alone."""
    digest = hashlib.blake2b(f"{seed}\x00{index}\x00{name}".encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "big") >> 11) * _UNIT


class _Computed(Sequence[str]):
    """Index access to a large finite domain without materialising its values."""

    def __init__(self, domain: FiniteDomain) -> None:
        self._domain = domain

    def __len__(self) -> int:
        return self._domain.size

    def __getitem__(self, index: int) -> str:  # type: ignore[override]
        return self._domain.value_at(index)


def _lookup(domain: Domain) -> Sequence[str]:
    if not isinstance(domain, FiniteDomain):
        return ()
    if domain.size <= _CACHE_LIMIT:
        return tuple(domain.values())
    return _Computed(domain)
