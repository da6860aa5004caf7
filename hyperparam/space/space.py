"""A search space: its grid, indexed without expanding it, and reproducible random points.

Grid order is `itertools.product` order (the last hyperparameter varies fastest), so combination `i` is the
mixed-radix number `i` with one digit per hyperparameter: any slice of a 100,000-combination grid is computed
directly, and the count is a product of sizes, known without listing anything — and never multiplied out
past what a caller asks about (`grid_size_up_to`): twenty domains of a hundred values are 10^40
combinations, a hundred domains of a huge range a number of thousands of digits.

Random points come from a counter-based generator: the draw for (seed, trial, hyperparameter name) is a hash,
so trial `i` is computed without drawing trials 0..i-1, the same seed gives the same trials in every process
(no Python hash seed, no Mersenne Twister state), and adding a hyperparameter leaves the others' draws alone.
Draws are with replacement: a random search over a small finite space may repeat a combination.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

from hyperparam.space.domains import Domain, FiniteDomain

# A grid keeps up to this many value strings, over all its domains, in tuples (fast lookups, bounded
# memory); the domains past it (the first ones, which vary slowest) compute each value on demand.
_CACHE_LIMIT = 65_536

_UNIT = 2.0**-53


@dataclass(frozen=True)
class SearchSpace:
    """The ordered hyperparameters of a sweep."""

    domains: tuple[Domain, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(domain.name for domain in self.domains)

    @property
    def is_finite(self) -> bool:
        return all(domain.finite for domain in self.domains)

    def grid_size_up_to(self, cap: int) -> int:
        """The number of combinations, or the first partial product past `cap` (so: a number above `cap`)
        when there are more: the product is never multiplied out further than that."""
        size = 1
        for domain in self.domains:
            size *= self._finite(domain).size
            if size > cap:
                return size
        return size

    def grid_point(self, index: int) -> dict[str, str]:
        """Combination `index` of the grid, computed directly from its mixed-radix digits."""
        digits = self._digits(index)
        return {
            name: lookup[digit] for name, lookup, digit in zip(self.names, self._lookups, digits, strict=True)
        }

    def grid_points(self, start: int, stop: int) -> Iterator[dict[str, str]]:
        """Combinations start..stop-1 in order, stepping an odometer instead of re-dividing each index."""
        if not 0 <= start <= stop or self.grid_size_up_to(stop) < stop:
            raise IndexError(f"slice [{start}, {stop}) outside the grid")
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

    @cached_property
    def _lookups(self) -> tuple[Sequence[str], ...]:
        """Each domain's values by index: listed in a tuple while the grid's budget lasts, from the last
        domain (which varies fastest) backwards; computed on demand past it. Built on the first grid
        lookup, so a random or adaptive sweep never lists a value."""
        budget = _CACHE_LIMIT
        lookups: list[Sequence[str]] = []
        for domain in reversed(self.domains):
            finite = self._finite(domain)
            if finite.size <= budget:
                budget -= finite.size
                lookups.append(tuple(finite.values()))
            else:
                lookups.append(_Computed(finite))
        return tuple(reversed(lookups))

    def _digits(self, index: int) -> list[int]:
        """Combination `index` as one digit per domain; IndexError when the grid has no such combination."""
        if index < 0:
            raise IndexError(f"combination {index} outside the grid")
        digits = [0] * len(self.domains)
        remaining = index
        for position in range(len(self.domains) - 1, -1, -1):
            remaining, digits[position] = divmod(remaining, self._finite(self.domains[position]).size)
        if remaining:
            raise IndexError(f"combination {index} outside the grid")
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
