"""Numbers as a user wrote them in a search space: read exactly (decimal, never through a float's rounding),
so a range's bounds, its step and the values it yields keep the precision they were written with."""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation


def as_decimal(value: object) -> Decimal | None:
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


def exponent(number: Decimal) -> int:
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int), "finite decimals have integer exponents"
    return exponent


def written_as_integer(number: Decimal) -> bool:
    return exponent(number) >= 0
