""" "Did you mean": the known field an unknown one most resembles, at the same place."""

from __future__ import annotations

import pytest

from webhooks import suggest
from workflows import spelling

SWEEP_FIELDS = "algorithm, hyperparams, maxTrials, objective, parallelism, workflow"


@pytest.mark.parametrize(
    ("unknown", "expected"),
    [
        ("parameters", "hyperparams"),  # Katib's name, though difflib alone prefers parallelism
        ("maxTrialCount", "maxTrials"),
        ("parallelTrialCount", "parallelism"),
        ("Workflow", "workflow"),  # case
        ("algoritm", "algorithm"),  # a typo
        ("objectives", "objective"),
        ("zzzz", None),
    ],
)
def test_the_closest_known_field_is_chosen(unknown, expected):
    assert spelling.closest(unknown, SWEEP_FIELDS.split(", "), aliases=suggest.KATIB_NAMES) == expected


def test_a_katib_name_is_suggested_only_where_its_counterpart_is_a_field():
    assert spelling.closest("parameters", ["values", "range"], aliases=suggest.KATIB_NAMES) is None


@pytest.mark.parametrize(
    ("field", "message", "kind", "hint"),
    [
        ("spec.parameters", f"unknown field; expected {SWEEP_FIELDS}", "HyperparamWorkflow", "hyperparams"),
        (
            "spec.hyperparams[0].rang",
            "unknown field; expected one of values, range",
            "HyperparamWorkflow",
            "range",
        ),
        ("spec.templates[0].containr", 'unknown field "spec.templates[0].containr"', "Workflow", "container"),
        (
            "spec.workflowSpec.entrypont",
            'unknown field "spec.workflowSpec.entrypont"',
            "CronWorkflow",
            "entrypoint",
        ),
        (
            "spec.workflow.templates[1].dag.task",
            'unknown field "spec.workflow.templates[1].dag.task"',
            "HyperparamWorkflow",
            "tasks",
        ),
        ("spec.tfReplicaSpecs.Worker.replica", "unknown field", "TFJob", "replicas"),
        (
            "spec.tfReplicaSpecs.Workr",
            "unknown replica type; expected one of Chief, PS, Worker",
            "TFJob",
            "Worker",
        ),
        ("spec.runPolicy.ttlSecondAfterFinished", "unknown field", "TFJob", "ttlSecondsAfterFinished"),
        ("spec.runPolicy.schedulingPolicy.queu", "unknown field", "TFJob", "queue"),
    ],
)
def test_the_known_fields_come_from_the_message_the_argo_schema_or_the_job_fields(field, message, kind, hint):
    assert suggest.hint(field, message, kind) == f' (did you mean "{hint}"?)'


@pytest.mark.parametrize(
    ("field", "message", "kind"),
    [
        ("spec.tfReplicaSpecs.Worker.replicas", "must be a non-negative integer", "TFJob"),  # not unknown
        ("spec.zzzz", 'unknown field "spec.zzzz"', "Workflow"),  # nothing close
        ("spec.nope.deeper", 'unknown field "spec.nope.deeper"', "Workflow"),  # no such parent
        ("spec.templates[0].x", 'unknown field "spec.templates[0].x"', "NotArgo"),  # no schema
        ("spec.other.replica", "unknown field", "TFJob"),  # a parent we have no list for
    ],
)
def test_no_hint_when_there_is_nothing_to_suggest(field, message, kind):
    assert suggest.hint(field, message, kind) == ""
