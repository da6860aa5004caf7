"""Trainer's own readers, over the shared ones in `fields`: counts bounded by `limits` (a `TooMany` fails the
TrainJob), names that become DNS labels, env lists, resource quantities, and the CRDs' list bounds."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

import fields
import limits
from kube import names
from workflows.pipeline import quantity

#: Trainer's CRDs' `maxItems`, which the API server enforces on what it stores: the lists read here
#: honour them too, so a TrainJob that never went through the API server (the webhook's review, the REST
#: API's body) is refused as a cluster would refuse it, before each item is read.
MAX_ENV = 128
MAX_ARGUMENTS = 128
MAX_RUNTIME_PATCHES = 16
MAX_REPLICATED_JOBS = 100


def dns_label(found: fields.ErrorList, path: str, value: object, *, required: bool = False) -> str | None:
    """A name that becomes part of a Service's or a Job's name (a replicated job, the network subdomain):
    a DNS-1035 label, as JobSet validates it, so a runtime's name cannot fail the controller's own writes."""
    name = fields.text(found, path, value, required=required)
    if name is None:
        return None
    problems = names.NameFormat.DNS1035_LABEL.problems(name)
    for problem in problems:
        found.add(path, f"{name[:40]!r}{'…' if len(name) > 40 else ''}: {problem}")
    return None if problems else name


class TooMany(fields.FieldError):
    """A count past its bound in `limits`: no later reconcile can plan it, so the controller fails the
    TrainJob on it instead of retrying (other field errors may heal: a runtime created later)."""


def count(found: fields.ErrorList, path: str, value: object, *, what: str, bound: str) -> int | None:
    """A count of at least 1 and at most `limits.current().<bound>`, read when the check runs; `what` names
    its unit in the error (`must be at most 1000 nodes (MAX_REPLICAS_PER_JOB), not 100000`)."""
    number = fields.integer(found, path, value, minimum=1)
    if number is not None and number > getattr(limits.current(), bound):
        past_bound(found, path, limits.too_many(what, number, bound))
        return None
    return number


def processes(found: fields.ErrorList, path: str, value: object) -> int | None:
    """A count of processes in one node (`numProcPerNode`), bounded by `processes_per_node`."""
    return count(found, path, value, what="processes", bound="processes_per_node")


def past_bound(found: fields.ErrorList, path: str, message: str) -> None:
    """Record `message` (`limits.too_many`'s wording) as the field's `TooMany` error."""
    found.extend([TooMany(path, message)])


#: Kubernetes caps a quantity at 2^63-1 (resource.Quantity); so do we, before any arithmetic: rounding up
#: `1e999999` would build a million-digit integer (32 s of CPU) that no string conversion accepts.
MAX_QUANTITY = 2**63 - 1


def quantity_value(amount: object) -> Decimal | None:
    """A resource amount (`4`, `"1500m"`, `"2Gi"`) in base units, at most MAX_QUANTITY; None when it is not
    a quantity (the API server refuses such a pod)."""
    if amount is None or isinstance(amount, bool):
        return None
    if isinstance(amount, int):
        value = Decimal(amount)
    else:
        try:
            value = quantity.parse_quantity(str(amount))
        except (ValueError, ArithmeticError):  # not a quantity, or an exponent past what Decimal holds
            return None
    return min(value, Decimal(MAX_QUANTITY))


def whole_quantity(amount: object) -> int:
    """A resource amount rounded up to a whole number (a Quantity's Value()), at most MAX_QUANTITY; 0 when
    it is not a quantity."""
    value = quantity_value(amount)
    return 0 if value is None or value <= 0 else math.ceil(value)


def env(found: fields.ErrorList, path: str, value: object) -> tuple[fields.RawDict, ...]:
    entries = []
    for index, item in enumerate(fields.items(found, path, value, max_items=MAX_ENV)):
        entry = fields.obj(found, f"{path}[{index}]", item)
        if fields.text(found, f"{path}[{index}].name", entry.get("name"), required=True) is not None:
            entries.append(copy.deepcopy(entry))
    return tuple(entries)


def upsert_by_name(items: list[dict[str, Any]], extra: Iterable[dict[str, Any]]) -> None:
    """Set each named entry (env variable, volume, volume mount) in `items`, replacing a same-named one in
    place (Trainer's apply.Upsert*: the order of first appearance is kept, so pod specs do not churn)."""
    for item in extra:
        same = next((i for i, old in enumerate(items) if old.get("name") == item["name"]), None)
        if same is None:
            items.append(copy.deepcopy(item))
        else:
            items[same] = copy.deepcopy(item)


def gpus_per_node(resources: Mapping[str, Any]) -> int:
    """GPUs a node asks for: the first resource whose name says gpu, in requests, else in limits
    (Trainer's runtime.GetNumGPUPerNode), rounded up as a Quantity's Value() is."""
    for part in ("requests", "limits"):
        for name, amount in (resources.get(part) or {}).items():
            if "gpu" in name.lower():
                count = whole_quantity(amount)
                if count:
                    return count
                break
    return 0


def cpus_per_node(resources: Mapping[str, Any]) -> int:
    """CPUs a node asks for: its request, else its limit, rounded up (Trainer's getNumCPUPerNode)."""
    request = whole_quantity((resources.get("requests") or {}).get("cpu"))
    if request:
        return request
    return whole_quantity((resources.get("limits") or {}).get("cpu"))
