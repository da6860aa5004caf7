"""Names of their own for the cases a door accepts, so that one accepted case never collides with the next
(a 409 would hide what the door does with the rest)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from typing import Any

from .corpus import Case

_serial = itertools.count()


def renamed(case: Case) -> Mapping[str, Any] | None:
    """The case's base with `metadata.name` made unique, unless the case attacks the name itself."""
    base = case.base
    if base is None or not isinstance(base.get("metadata"), dict) or case.path[:2] == ("metadata", "name"):
        return base
    name = base["metadata"].get("name")
    if not isinstance(name, str):
        return base
    changed = copy.deepcopy(dict(base))
    changed["metadata"]["name"] = f"{name[:40]}-{next(_serial)}"
    return changed
