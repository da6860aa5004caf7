"""Pure policy decisions: which failures are retried, restart bookkeeping, deadlines, TTL, clean-up.

Each function answers one question from plain data; `plan.py` puts the answers together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from fields import as_dict, as_int
from jobs.pods import exit_code as container_exit_code
from jobs.pods import is_finished_phase, is_terminating, name_of, restart_count, uid_of

#: Exit codes from 128 up mean "killed by a signal" (128 + signal number): preemption, OOM kill, node
#: shutdown. The ExitCode policy retries those and treats 1-127 as the program's own verdict.
RETRYABLE_EXIT_CODE_MIN = 128


def is_retryable_exit_code(code: int | None) -> bool:
    """True for signal deaths (>= 128) and for failures with no exit code at all (eviction, lost node)."""
    return code is None or code >= RETRYABLE_EXIT_CODE_MIN


def will_restart(restart_policy: str, pod: dict[str, Any], container_name: str) -> bool:
    """Whether a failed replica is retried rather than failing the job.

    Never: no. ExitCode: only signal deaths and failures without an exit code. OnFailure and Always:
    the kubelet restarts containers in place, so a pod that failed as a whole (evicted, node lost)
    is recreated; upstream fails the job there, which defeats the policy the user asked for.
    """
    if restart_policy == "Never":
        return False
    if restart_policy == "ExitCode":
        return is_retryable_exit_code(container_exit_code(pod, container_name))
    return True


@dataclass(frozen=True)
class RestartLedger:
    """Restarts of pods we deleted to recreate, kept in the job status so backoffLimit can see them.

    A recreated pod starts again at restartCount 0, so without this record a job under ExitCode
    could be recreated forever (the upstream bug). `counted_pods` holds, per pod name, the uid of the
    last pod already counted, so a reconcile that runs twice counts a recreation once.
    """

    deleted_pod_restarts: int = 0
    counted_pods: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_status(cls, status: Mapping[str, Any]) -> RestartLedger:
        ledger = as_dict(status.get("restartLedger"))
        counted = as_dict(ledger.get("countedPods"))
        return cls(
            deleted_pod_restarts=max(as_int(ledger.get("deletedPodRestarts")) or 0, 0),
            counted_pods={str(name): str(uid) for name, uid in counted.items()},
        )

    def to_status(self) -> dict[str, Any]:
        return {
            "deletedPodRestarts": self.deleted_pod_restarts,
            "countedPods": dict(sorted(self.counted_pods.items())),
        }

    def is_counted(self, pod: dict[str, Any]) -> bool:
        return self.counted_pods.get(name_of(pod)) == uid_of(pod)

    def total(self, pods: Iterable[dict[str, Any]]) -> int:
        """Every restart so far: recreations (with their pods' restarts) plus live pods' restarts."""
        return self.deleted_pod_restarts + sum(restart_count(p) for p in pods if not self.is_counted(p))

    def recreating(self, pods: Iterable[dict[str, Any]]) -> RestartLedger:
        """The ledger once `pods` are deleted to be recreated: each counts one restart plus its own."""
        counted = dict(self.counted_pods)
        restarts = self.deleted_pod_restarts
        for pod in pods:
            if counted.get(name_of(pod)) != uid_of(pod):
                restarts += 1 + restart_count(pod)
                counted[name_of(pod)] = uid_of(pod)
        return RestartLedger(restarts, counted)


def backoff_exceeded(restarts: int, backoff_limit: int | None) -> bool:
    """`backoffLimit` is the number of restarts allowed, as for a Kubernetes Job; None allows any."""
    return backoff_limit is not None and restarts > backoff_limit


def seconds_until(start: datetime | None, seconds: int | None, now: datetime) -> float | None:
    """Seconds from `now` until `start + seconds` (negative once past); None when either is unset."""
    if start is None or seconds is None:
        return None
    return (start + timedelta(seconds=seconds) - now).total_seconds()


def pods_to_clean(pods: Iterable[dict[str, Any]], clean_pod_policy: str) -> list[dict[str, Any]]:
    """Pods a finished job removes: All of them, the Running (unfinished) ones, or None."""
    if clean_pod_policy == "All":
        return [p for p in pods if not is_terminating(p)]
    if clean_pod_policy == "Running":
        return [p for p in pods if not is_terminating(p) and not is_finished_phase(p)]
    return []


def unfinished_pods(pods: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods still pending or running: a job failed by deadline or backoff stops them whatever the policy."""
    return pods_to_clean(pods, "Running")
