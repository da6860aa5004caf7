"""Kubernetes quantities (``250m``, ``1G``, ``2Gi``), so bad values fail before Kubernetes sees them."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<suffix>[a-zA-Z]*|[eE][-+]?[0-9]+)$")

_MULTIPLIERS: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


class QuantityError(ValueError):
    """The text is not a non-negative Kubernetes quantity."""


def parse_quantity(text: str) -> Decimal:
    """The value in base units (cores, bytes); raises QuantityError with examples of good ones."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(f"'{text}' is not a Kubernetes quantity (examples: 500m, 2, 1G, 512Mi)")
    number, suffix = match["number"], match["suffix"]
    try:
        value = Decimal(number)
    except InvalidOperation as error:  # pragma: no cover - the regex only admits decimal numbers
        raise QuantityError(f"'{text}' is not a Kubernetes quantity") from error
    if suffix[:1] in ("e", "E") and suffix[1:]:
        return value * Decimal(10) ** int(suffix[1:])
    if suffix not in _MULTIPLIERS:
        known = ", ".join(key for key in _MULTIPLIERS if key)
        raise QuantityError(f"'{text}' has an unknown suffix '{suffix}' (known: {known})")
    return value * _MULTIPLIERS[suffix]
