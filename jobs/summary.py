"""The replicas of a job at a glance ("Worker 3/4 running · PS 2/2"), for `kubectl get` and the admin.

Pure: read from the spec (how many replicas each type wants) and `status.replicaStatuses` (what the pods
are doing), so the summary of a finished job stays as it was when it finished, whatever its clean-up
policy removes afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fields import as_dict, as_int
from jobs.frameworks import Framework
from jobs.spec import replica_counts

SEPARATOR = " · "


def replica_summary(job: dict[str, Any], status: dict[str, Any], framework: Framework[Any]) -> str:
    """The summary of a job as written (a reconcile, holding the parsed job, calls `summarize`)."""
    return summarize(replica_counts(job, framework), status)


def summarize(wanted_replicas: Mapping[str, int], status: dict[str, Any]) -> str:
    """One part per replica type, in the framework's order: `<Type> <count>/<wanted>[ <state>]`.

    A type with failed pods shows how many failed; one whose pods all succeeded, that they did; one
    whose pods are all up shows just `n/n`; otherwise how many are running (active, as Kubeflow counts).
    """
    observed = as_dict(status.get("replicaStatuses"))
    parts = []
    for replica_type, wanted in wanted_replicas.items():
        counts = as_dict(observed.get(replica_type))
        parts.append(
            f"{replica_type} {_part(wanted, *(_count(counts, k) for k in ('active', 'succeeded', 'failed')))}"
        )
    return SEPARATOR.join(parts)


def _part(wanted: int, active: int, succeeded: int, failed: int) -> str:
    if failed:
        return f"{failed}/{wanted} failed"
    if wanted and succeeded >= wanted:
        return f"{succeeded}/{wanted} succeeded"
    if wanted and active >= wanted:
        return f"{active}/{wanted}"
    if active or not succeeded:
        return f"{active}/{wanted} running"
    return f"{succeeded}/{wanted} succeeded"


def _count(counts: dict[str, Any], key: str) -> int:
    return max(as_int(counts.get(key)) or 0, 0)
