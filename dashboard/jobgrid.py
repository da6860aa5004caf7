"""Pure: a job's wanted replicas and its Replica rows → the grid the job page draws (type by index).

Each cell shows the slot's current pod (the live one, else the latest attempt) and how many pods the slot
has had, so a recreated replica reads as "attempt 3" rather than as three replicas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


class ReplicaLike(Protocol):
    replica_type: str
    replica_index: int | None
    deleted_at: datetime | None


@dataclass(frozen=True)
class Cell:
    index: int
    replica: ReplicaLike | None  # None: no pod yet
    attempts: int


@dataclass(frozen=True)
class GridRow:
    replica_type: str
    cells: list[Cell]


def replica_grid(wanted: Mapping[str, int], replicas: Sequence[ReplicaLike]) -> list[GridRow]:
    """One row per replica type in `wanted`'s order (then any type only the pods know), one cell per index
    from 0 to the larger of wanted and observed. `replicas` come oldest first."""
    slots: dict[tuple[str, int], list[ReplicaLike]] = {}
    for replica in replicas:
        if replica.replica_index is not None:
            slots.setdefault((replica.replica_type.lower(), replica.replica_index), []).append(replica)
    names = {replica_type.lower(): replica_type for replica_type in wanted}
    for replica_type, _ in slots:
        names.setdefault(replica_type, replica_type.capitalize())
    rows = []
    for lower, shown in names.items():
        observed = [index for (kind, index) in slots if kind == lower]
        width = max([wanted.get(shown, 0), *(index + 1 for index in observed)])
        cells = [_cell(index, slots.get((lower, index), [])) for index in range(width)]
        rows.append(GridRow(shown, cells))
    return rows


def _cell(index: int, attempts: list[ReplicaLike]) -> Cell:
    live = [replica for replica in attempts if replica.deleted_at is None]
    current = (live or attempts)[-1] if attempts else None
    return Cell(index, current, len(attempts))
