"""The validating webhook's decisions: which checks an object gets, and how their findings read.

Pure but for the namespaces' Pod Security policies, which come from this process's memory (no query per
review). Our job kinds are checked by `jobs.validation`, a HyperparamWorkflow by its sweep validation (the
spec and its batch plan, every count bounded) plus a lint of the embedded Argo spec (both with their pod
templates against the namespace's Pod Security policy), and Argo's own kinds by the linter in full (only in
namespaces that opted in: the webhook configuration's namespaceSelector decides what reaches us).
A denial lists every problem with its field path. A bug in a check denies our kinds (the apiserver's
failurePolicy for them is Fail too) and lets Argo's through with a warning (their policy is Ignore):
`failures.undecided`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from access import podsecurity
from fields import FieldError, SpecError
from hyperparam import manifests as sweep_manifests
from hyperparam.sweep import parse_sweep
from jobs import apigroups
from jobs.frameworks import Framework, UnknownKind, framework_class
from jobs.spec import API_GROUP, job_namespace, pod_views
from jobs.validation import validate as validate_job
from workflows.lint import LINTED_KINDS
from workflows.pods import workflow_pod_views

from . import failures, suggest
from .argo import Findings, lint_argo_document, lint_embedded_workflow
from .review import AdmissionRequest, GroupVersionKind, Verdict

logger = logging.getLogger(__name__)

ARGO_GROUP = "argoproj.io"
HYPERPARAM_WORKFLOW = "HyperparamWorkflow"
VALIDATED_OPERATIONS = ("CREATE", "UPDATE")
INTERNAL_ERROR = "internal error while validating it"
# How many problems the denial's one-line message spells out; status.details.causes carries all of them.
MESSAGE_PROBLEMS = 20

Check = Callable[[dict[str, Any]], Findings]


def review(request: AdmissionRequest) -> Verdict:
    """Allow or deny one admission request."""
    obj = request.object
    if request.operation not in VALIDATED_OPERATIONS or request.sub_resource or obj is None:
        return Verdict.allow()
    check = checker(request.kind)
    if check is None or not request.changes_spec:
        return Verdict.allow()
    try:
        findings = check(obj)
        findings = _merged(findings, pod_security(request.kind, obj, request.namespace))
    except Exception:
        # A bug in a check answers per the kind's failurePolicy; its details go to the log only.
        logger.exception("validating %s failed", request.display_name)
        return failures.undecided(request, INTERNAL_ERROR)
    findings = with_hints(findings, request.kind.kind)
    if findings.causes:
        return Verdict.deny(
            422, invalid_message(request.display_name, findings.lines), findings.causes, findings.warnings
        )
    return Verdict.allow(warnings=findings.warnings)


def with_hints(findings: Findings, kind: str) -> Findings:
    """The findings with a "did you mean" after each unknown field that resembles a known one.

    Each check lists its lines in the order of its causes, so a line gets its cause's hint.
    """
    hints = [suggest.hint(cause.path, cause.message, kind) for cause in findings.causes]
    if not any(hints):
        return findings
    pairs = zip(findings.causes, hints, strict=True)
    causes = tuple(FieldError(cause.path, cause.message + hint) for cause, hint in pairs)
    lines = findings.lines
    if len(lines) == len(hints):
        lines = tuple(line + hint for line, hint in zip(lines, hints, strict=True))
    return Findings(causes, lines, findings.warnings)


def checker(kind: GroupVersionKind) -> Check | None:
    """The check for a kind, or None for kinds we have no opinion on."""
    if kind.group == API_GROUP and kind.kind == HYPERPARAM_WORKFLOW:
        return check_hyperparam_workflow
    if kind.group in apigroups.GROUPS:  # a training job, ours or Kubeflow's v1
        try:
            framework = framework_class(kind.kind)
        except UnknownKind:
            return None
        return lambda job: check_job(job, framework())
    if kind.group == ARGO_GROUP and kind.kind in LINTED_KINDS:
        return lint_argo_document
    return None


def check_job(job: dict[str, Any], framework: Framework) -> Findings:
    """A training job of any kind, as the operator will read it."""
    errors = validate_job(job, framework)
    return Findings(tuple(errors), tuple(str(error) for error in errors))


def check_hyperparam_workflow(hpw: dict[str, Any]) -> Findings:
    """The sweep (search space, algorithm, objective) and the Argo spec every trial runs."""
    spec = hpw.get("spec")
    causes: list[FieldError] = []
    lines: list[str] = []
    try:
        sweep = parse_sweep(spec)
        # Its plan too, as the controller will make it: whether one trial fits a Workflow, and how many
        # Workflows the sweep makes (arithmetic on the spec; no trial is planned).
        sweep_manifests.plan_batches(hpw, sweep)
    except SpecError as invalid:
        causes += invalid.errors
        lines += [str(error) for error in invalid.errors]
    if not isinstance(spec, dict) or not isinstance(workflow := spec.get("workflow"), dict):
        return Findings(tuple(causes), tuple(lines))
    lint = lint_embedded_workflow(workflow, "spec.workflow", _swept_names(spec))
    return Findings((*causes, *lint.causes), (*lines, *lint.lines), lint.warnings)


def pod_security(kind: GroupVersionKind, obj: dict[str, Any], namespace: str) -> Findings:
    """Our kinds' pod templates against the namespace's Pod Security policy: the check the API and the
    dashboard make before they submit (`access.podsecurity`), so kubectl gets the same answer."""
    if kind.group not in apigroups.GROUPS:
        return Findings()
    if kind.group == API_GROUP and kind.kind == HYPERPARAM_WORKFLOW:
        spec = obj.get("spec")
        views = workflow_pod_views(spec.get("workflow") if isinstance(spec, dict) else None, "spec.workflow")
    else:
        try:
            views = pod_views(obj, framework_class(kind.kind)())
        except UnknownKind:
            return Findings()
    violations = podsecurity.check(namespace or job_namespace(obj), views)
    return Findings(tuple(FieldError(v.path, v.message) for v in violations), tuple(map(str, violations)))


def _merged(first: Findings, second: Findings) -> Findings:
    return Findings(
        (*first.causes, *second.causes), (*first.lines, *second.lines), (*first.warnings, *second.warnings)
    )


def invalid_message(display_name: str, lines: tuple[str, ...] | list[str]) -> str:
    """`TFJob "x" is invalid: <problem>`, or `[<problem>, <problem>, ...]` as the apiserver lists them."""
    shown = list(lines[:MESSAGE_PROBLEMS])
    if len(lines) > MESSAGE_PROBLEMS:
        shown.append(f"and {len(lines) - MESSAGE_PROBLEMS} more")
    body = shown[0] if len(shown) == 1 else "[" + ", ".join(shown) + "]"
    return f"{display_name} is invalid: {body}"


def _swept_names(spec: dict[str, Any]) -> tuple[str, ...]:
    hyperparams = spec.get("hyperparams")
    if not isinstance(hyperparams, list):
        return ()
    names = (item.get("name") for item in hyperparams if isinstance(item, dict))
    return tuple(name for name in names if isinstance(name, str) and name)
