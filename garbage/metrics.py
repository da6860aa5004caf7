"""Prometheus metrics of the garbage collector, served with all the others (argoml_site/metrics.py)."""

from __future__ import annotations

from prometheus_client import Counter

from .policy import DELETE_REASONS

DELETIONS = Counter(
    "argoml_gc_deletions",
    "Objects the garbage collector deleted (dry runs excluded), by reason.",
    ["reason"],
)
RUNS = Counter("argoml_gc_runs", "Garbage collection runs, by how they ended.", ["status"])

# Every reason appears at 0 from the start, so a rate() over a reason that has not happened yet works.
for _reason in DELETE_REASONS:
    DELETIONS.labels(reason=_reason.value)
