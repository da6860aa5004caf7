"""The answer to a review that could not be decided (an internal error, or its time budget spent).

It follows the failurePolicy the webhook configurations give the kind (`configurations.py`): our own
kinds fail closed, because an unvalidated job must not run; Argo's kinds and Pods fail open, because a
webhook problem must not stop workflows or every Pod of the cluster. The message never carries the
exception's text: that goes to the log, where operators read it and tenants do not.
"""

from __future__ import annotations

from jobs import apigroups
from trainer import constants as trainer_constants

from .review import AdmissionRequest, Verdict


def fails_closed(request: AdmissionRequest) -> bool:
    """Whether the kind's failurePolicy is Fail (our kinds, Kubeflow's v1 jobs and Trainer's kinds, and their
    subresources, such as a job's Scale) rather than Ignore (Argo's kinds, Pods)."""
    closed = (*apigroups.GROUPS, trainer_constants.GROUP)
    return any(group in closed for group in (request.kind.group, request.resource_group))


def undecided(request: AdmissionRequest, why: str) -> Verdict:
    """Deny ours with `why`, admit the others with `why` as a warning."""
    if fails_closed(request):
        return Verdict.deny(500, f"{request.display_name} could not be admitted: {why}")
    return Verdict.allow(warnings=[f"argoml admitted {request.display_name} unchecked: {why}"])
