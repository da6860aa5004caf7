"""Settings of the operator test worker: the project's, with the controllers on, leader election and queue
timings short enough for tests, unthrottled writes, and the operator's clock reading the simulator's."""

from argoml_site.settings import *  # noqa: F403

KUBE_CONTROLLERS_ENABLED = True
KUBE_LEADER_ELECTION_NAMESPACE = "default"
KUBE_LEADER_ELECTION_LEASE_NAME = "argoml-jobs-test"
KUBE_LEADER_ELECTION_LEASE_DURATION_SECONDS = 2.0
KUBE_LEADER_ELECTION_RENEW_DEADLINE_SECONDS = 1.5
KUBE_LEADER_ELECTION_RETRY_PERIOD_SECONDS = 0.25
KUBE_WATCH_SILENCE_TIMEOUT_SECONDS = 10.0

KUBE_QUEUE_LEASE_SECONDS = 2.0
KUBE_QUEUE_SWEEP_INTERVAL_SECONDS = 0.2
KUBE_QUEUE_RESEND_AFTER_SECONDS = 5.0
KUBE_QUEUE_BACKOFF_BASE_SECONDS = 0.05
KUBE_QUEUE_BACKOFF_MAX_SECONDS = 5.0

KUBE_WRITE_QPS = 10_000.0
KUBE_WRITE_BURST = 10_000

JOBS_CLOCK = "jobs.tests.simclock.now"
