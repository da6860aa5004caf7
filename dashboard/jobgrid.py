"""Pure: a job's wanted replicas and its Replica rows → the grid the job page draws (type by index).

Each cell shows the slot's current pod (the live one, else the latest attempt) and how many pods the slot
has had, so a recreated replica reads as "attempt 3" rather than as three replicas. A pod the operator
stopped because the job had succeeded is marked so: it did not fail, whatever its phase says.
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
    phase: str
    exit_code: int | None
    message: str


# How a stopped container exits: SIGTERM (128 + 15), or SIGKILL (128 + 9) once its grace period is over.
STOPPED_EXIT_CODES = frozenset({143, 137})


def stopped_after_success(replica: ReplicaLike, job_phase: str | None) -> bool:
    """Whether the pod ended because the operator stopped it once the job had succeeded, not by failing.

    Kubeflow's TFJob ends its parameter servers when the job succeeds (they serve until stopped), and
    `cleanPodPolicy: Running` stops whatever still runs; each such pod reports Failed with SIGTERM's 143 (or
    SIGKILL's 137). An OOM kill also exits 137, but says so.
    """
    return (
        job_phase == "Succeeded"
        and replica.phase == "Failed"
        and replica.exit_code in STOPPED_EXIT_CODES
        and "OOMKilled" not in (replica.message or "")
    )


@dataclass(frozen=True)
class Cell:
    index: int
    replica: ReplicaLike | None  # None: no pod yet
    attempts: int
    stopped: bool = False  # stopped by the operator after the job succeeded (see stopped_after_success)


@dataclass(frozen=True)
class GridRow:
    replica_type: str
    cells: list[Cell]


def replica_grid(
    wanted: Mapping[str, int], replicas: Sequence[ReplicaLike], job_phase: str | None = None
) -> list[GridRow]:
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
        cells = [_cell(index, slots.get((lower, index), []), job_phase) for index in range(width)]
        rows.append(GridRow(shown, cells))
    return rows


def _cell(index: int, attempts: list[ReplicaLike], job_phase: str | None) -> Cell:
    live = [replica for replica in attempts if replica.deleted_at is None]
    current = (live or attempts)[-1] if attempts else None
    stopped = current is not None and stopped_after_success(current, job_phase)
    return Cell(index, current, len(attempts), stopped)
