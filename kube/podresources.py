"""A container's `resources` as the API server judges them (ValidateResourceRequirements), first problem only.

Controllers that copy a user's requests and limits into a pod check them here first: a wrong name or amount
is then a condition naming the field, not a pod the API server refuses with one cause per key (a map of
20,000 bad keys is an answer of 20,000 causes, over 100 MiB to read back).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal

from workflows.pipeline.quantity import QuantityError, parse_quantity

STANDARD_NAMES = frozenset({"cpu", "memory", "ephemeral-storage"})
_SEGMENT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED = re.compile(rf"^{_SEGMENT}(\.{_SEGMENT})*/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_NAME_PROBLEM = (
    "must be a standard resource (cpu, memory, ephemeral-storage, hugepages-<size>) or a name qualified by "
    "a domain, such as nvidia.com/gpu"
)


def amount(value: object) -> Decimal | None:
    """A non-negative quantity (`4`, `"1500m"`, `"2Gi"`) in base units; None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    if isinstance(value, int):
        return Decimal(value) if value >= 0 else None
    try:
        return parse_quantity(str(value))
    except (QuantityError, ArithmeticError):
        return None


def _valid_name(name: object) -> bool:
    return isinstance(name, str) and (
        name in STANDARD_NAMES or name.startswith("hugepages-") or _QUALIFIED.match(name) is not None
    )


def first_problem(resources: object, path: str) -> tuple[str, str] | None:
    """(field, message) of the first thing the API server would refuse in `resources`, or None."""
    if resources is None:
        return None
    if not isinstance(resources, Mapping):
        return path, "must be an object with limits and/or requests"
    parsed: dict[str, dict[str, Decimal]] = {}
    for part in ("limits", "requests"):
        amounts = resources.get(part)
        if amounts is None:
            continue
        if not isinstance(amounts, Mapping):
            return f"{path}.{part}", "must be a map of resource names to quantities"
        parsed[part] = {}
        for name, value in amounts.items():
            if not _valid_name(name):
                return f"{path}.{part}.{name}", _NAME_PROBLEM
            found = amount(value)
            if found is None:
                return f"{path}.{part}.{name}", "must be a quantity of at least 0 (such as 500m, 2 or 1Gi)"
            parsed[part][name] = found
    limits = parsed.get("limits", {})
    for name, request in parsed.get("requests", {}).items():
        if name in limits and request > limits[name]:
            return f"{path}.requests.{name}", f"must be less than or equal to the {name} limit"
    return None
