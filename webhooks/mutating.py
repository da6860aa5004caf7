"""The mutating webhook's decisions: defaults for our job kinds, injection rules for Pods.

Pure apart from logging; the rules come from a callable so only Pod requests touch the rule cache. Each
answer is a JSON Patch of the difference between the object as sent and the object as it should be stored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from jobs import apigroups
from jobs.frameworks import UnknownKind, framework_class
from jobs.spec import with_defaults
from jobs.validation import validate as validate_job

from . import failures
from .injection import Rule, injection_patch
from .jsonpatch import diff
from .review import AdmissionRequest, Verdict

logger = logging.getLogger(__name__)

MUTATED_OPERATIONS = ("CREATE", "UPDATE")
DEFAULTING_FAILED = "internal error while filling in its defaults"
INJECTION_FAILED = "argoml injection rules were not applied (internal error)"


def review(request: AdmissionRequest, rules: Callable[[], Sequence[Rule]]) -> Verdict:
    """Allow every request, with a patch when something should be filled in or injected."""
    obj = request.object
    if request.operation not in MUTATED_OPERATIONS or request.sub_resource or obj is None:
        return Verdict.allow()
    if request.kind.group in apigroups.GROUPS:  # our kinds and Kubeflow's v1 jobs
        return _job_defaults(request, obj) if request.changes_spec else Verdict.allow()
    if request.kind.group == "" and request.kind.kind == "Pod" and request.operation == "CREATE":
        return _injection(request, obj, rules)
    return Verdict.allow()


def defaults_patch(job: dict[str, Any], framework_kind: str) -> list[dict[str, Any]]:
    """The patch that fills in a job's defaults (ports, restart policies, run policy), or none at all.

    An invalid job is left exactly as written: defaulting it would rename or drop what the user wrote
    (`worker` becomes `Worker`, an unknown replica type disappears), and the validating webhook must
    report the problems with the user's own field paths.
    """
    framework = framework_class(framework_kind)()
    spec = job.get("spec")
    if not isinstance(spec, dict) or validate_job(job, framework):
        return []
    return diff(spec, with_defaults(job, framework)["spec"], "/spec")


def _job_defaults(request: AdmissionRequest, job: dict[str, Any]) -> Verdict:
    try:
        return Verdict.allow(patch=defaults_patch(job, request.kind.kind))
    except UnknownKind:
        return Verdict.allow()
    except Exception:
        # The exception's text may quote the spec or our code: the log gets it, the answer does not.
        logger.exception("defaulting %s failed", request.display_name)
        return failures.undecided(request, DEFAULTING_FAILED)


def _injection(
    request: AdmissionRequest, pod: dict[str, Any], rules: Callable[[], Sequence[Rule]]
) -> Verdict:
    """Apply the injection rules; a failure admits the Pod unchanged (the Pod webhook's policy is Ignore)."""
    try:
        patch, applied = injection_patch(pod, request.namespace, rules())
    except Exception:
        # Never the exception's text: it may name another namespace's Secrets.
        logger.exception("injection rules failed on %s in %s", request.display_name, request.namespace)
        return Verdict.allow(warnings=[INJECTION_FAILED])
    if applied:
        logger.debug(
            "injection rules %s applied to %s in %s", applied, request.display_name, request.namespace
        )
    return Verdict.allow(patch=patch)
