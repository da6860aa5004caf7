"""Prometheus metrics of the controllers and their reconcile queue, under controller-runtime's names.

Dashboards and alerts written for controller-runtime work unchanged: `controller` and the workqueue `name`
are the lowercased kind. Each process (web, worker, pool child) holds its own values; serving them on
/metrics is the job of the metrics view.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

# controller-runtime's buckets for reconcile time, and client-go's for workqueue durations (10 ns … ~3 h).
_RECONCILE_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    *(1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0),
    *(40.0, 50.0, 60.0),
)
_WORKQUEUE_BUCKETS = tuple(10e-9 * 10**power for power in range(12))

reconcile_total = Counter(
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller.",
    ["controller", "result"],
)
reconcile_errors_total = Counter(
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller.",
    ["controller"],
)
reconcile_time_seconds = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller.",
    ["controller"],
    buckets=_RECONCILE_BUCKETS,
)
workqueue_depth = Gauge("workqueue_depth", "Current depth of workqueue (keys due to run).", ["name"])
workqueue_adds_total = Counter("workqueue_adds_total", "Total number of adds handled by workqueue.", ["name"])
workqueue_queue_duration_seconds = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested.",
    ["name"],
    buckets=_WORKQUEUE_BUCKETS,
)
workqueue_work_duration_seconds = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    ["name"],
    buckets=_WORKQUEUE_BUCKETS,
)
workqueue_retries_total = Counter(
    "workqueue_retries_total", "Total number of retries handled by workqueue.", ["name"]
)
# client-go's name: how long writes waited for the client-side rate limiter (KUBE_WRITE_QPS/BURST).
rate_limiter_duration_seconds = Histogram(
    "rest_client_rate_limiter_duration_seconds",
    "Client side rate limiter latency in seconds. Broken down by verb.",
    ["verb"],
    buckets=(0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0),
)
