""" "Did you mean" for unknown fields: the known field at the same place that the unknown one most resembles.

Pure. The known fields at a path come from the message when it lists them (`unknown field; expected ...`),
from Argo's schema for Argo specs (`unknown field "spec.templates[0].containr"`), or from the job
validation's field lists. Katib's names for what we call otherwise are matched first (a Katib user writes
`parameters`, which difflib alone would take for `parallelism`); the choosing and the wording are
`workflows.spelling`'s, shared with every door that refuses an unknown name.
"""

from __future__ import annotations

import re

from jobs import validation
from workflows import spelling
from workflows.lint import schema

# Katib Experiment fields → ours (hyperparam/sweep.py), for users coming from Kubeflow's tuner.
KATIB_NAMES = {
    "parameters": "hyperparams",
    "maxTrialCount": "maxTrials",
    "parallelTrialCount": "parallelism",
    "trialTemplate": "workflow",
    "feasibleSpace": "range",
    "parameterType": "range",
}
_EXPECTED = re.compile(r"unknown (?:field|replica type)[^;]*; expected (?:one of )?(?P<fields>.+)$")
_ARGO_UNKNOWN = re.compile(r'^unknown field "(?P<path>[^"]+)"$')
_SEGMENT = re.compile(r"([^.\[\]]+)|\[\d+\]")
# Job fields the messages do not list, by the path of their parent (`spec.<x>ReplicaSpecs.<type>`, ...).
_JOB_PARENTS = (
    (re.compile(r"^spec\.[a-zA-Z]+ReplicaSpecs\.[^.]+$"), validation.REPLICA_SPEC_FIELDS),
    (re.compile(r"^spec\.runPolicy$"), validation.RUN_POLICY_FIELDS),
    (re.compile(r"^spec\.runPolicy\.schedulingPolicy$"), validation.SCHEDULING_POLICY_FIELDS),
)
EMBEDDED_WORKFLOW = "spec.workflow"  # a HyperparamWorkflow's Argo spec, linted as a Workflow's `spec`


def known_fields(field: str, message: str, kind: str) -> tuple[str, ...]:
    """The fields allowed beside the unknown `field`, or () when the message is not about one."""
    if expected := _EXPECTED.search(message):
        return tuple(name.strip() for name in expected.group("fields").split(","))
    if argo := _ARGO_UNKNOWN.match(message):
        return _argo_fields(argo.group("path"), kind)
    if message == "unknown field":
        parent = field.rpartition(".")[0]
        for pattern, fields in _JOB_PARENTS:
            if pattern.match(parent):
                return tuple(fields)
    return ()


def hint(field: str, message: str, kind: str) -> str:
    """` (did you mean "x"?)` for an unknown field with a close known one, else ""."""
    known = known_fields(field, message, kind)
    if not known:
        return ""
    unknown = field.rpartition(".")[2].split("[", 1)[0]
    offer = spelling.did_you_mean(unknown, known, aliases=KATIB_NAMES)
    return f" ({offer})" if offer else ""


def _argo_fields(path: str, kind: str) -> tuple[str, ...]:
    """The fields of the Argo object holding `path`'s last segment, from the linter's schema."""
    if path.startswith(EMBEDDED_WORKFLOW + "."):
        path, kind = "spec" + path.removeprefix(EMBEDDED_WORKFLOW), "Workflow"
    node = schema.document_schema(kind)
    segments = [match.group(1) for match in _SEGMENT.finditer(path)]
    for segment in segments[:-1]:
        if node is None:
            return ()
        if segment is None:  # a list index
            node = node.item
        else:
            node = node.fields.get(segment) if node.kind == schema.OBJECT else None
    if node is None or node.kind != schema.OBJECT:
        return ()
    return tuple(node.fields)
