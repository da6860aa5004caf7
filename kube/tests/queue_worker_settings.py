"""Settings of the test worker processes: the project's, with queue timings short enough for tests."""

from argoml_site.settings import *  # noqa: F403

KUBE_QUEUE_LEASE_SECONDS = 1.0
KUBE_QUEUE_SWEEP_INTERVAL_SECONDS = 0.2
KUBE_QUEUE_RESEND_AFTER_SECONDS = 5.0
KUBE_QUEUE_BACKOFF_BASE_SECONDS = 0.05
KUBE_QUEUE_BACKOFF_MAX_SECONDS = 30.0
