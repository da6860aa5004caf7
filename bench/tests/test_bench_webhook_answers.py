"""The answer checks of bench/webhook_latency.py: counting wrong answers as fast ones would mislead."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import webhook_latency as bench

POD = json.loads(bench.pod_review())["request"]["object"]
RIGHT_PATCH = [
    {"op": "add", "path": "/metadata/labels/argoml.io~1injected", "value": "1"},
    {"op": "add", "path": "/spec/imagePullSecrets", "value": [{"name": "registry"}]},
    {"op": "add", "path": "/spec/initContainers/0/env/0", "value": bench.INJECTED_ENV},
    {"op": "add", "path": "/spec/containers/0/env/0", "value": bench.INJECTED_ENV},
    {"op": "add", "path": "/spec/containers/1/env/0", "value": bench.INJECTED_ENV},
]


def answer(**response: object) -> bytes:
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
    return json.dumps({**body, "response": {"uid": bench.REVIEW_UID, "allowed": True, **response}}).encode()


def patched(operations: list[dict]) -> bytes:
    encoded = base64.b64encode(json.dumps(operations).encode()).decode()
    return answer(patchType="JSONPatch", patch=encoded)


def test_the_right_mutation_passes():
    assert bench.mutate_problem_for(POD)(patched(RIGHT_PATCH)) is None


@pytest.mark.parametrize(
    ("dropped", "complaint"),
    [
        (0, "no argoml.io/injected label"),
        (1, "no imagePullSecrets entry for registry"),
        (2, "container init has no WANDB_API_KEY"),
        (4, "container wait has no WANDB_API_KEY"),
    ],
)
def test_a_mutation_missing_one_operation_is_wrong(dropped, complaint):
    operations = [op for index, op in enumerate(RIGHT_PATCH) if index != dropped]
    assert complaint in bench.mutate_problem_for(POD)(patched(operations))


def test_a_patch_that_does_not_apply_is_wrong():
    broken = [{"op": "add", "path": "/spec/containers/9/env/0", "value": bench.INJECTED_ENV}]
    assert "does not apply" in bench.mutate_problem_for(POD)(patched(broken))


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        (answer(allowed=False, status={"message": "no"}), "allowed is False"),
        (answer(uid="someone-else"), "not the review's"),
        (b"<html>Not Found</html>", "not an AdmissionReview"),
        (answer(), "patchType None"),
    ],
)
def test_a_mutate_answer_that_does_not_allow_with_a_patch_is_wrong(body, complaint):
    assert complaint in bench.mutate_problem_for(POD)(body)


def test_validate_wants_allowed_for_the_review_and_no_patch():
    assert bench.validate_problem(answer()) is None
    assert "allowed is False" in bench.validate_problem(answer(allowed=False))
    assert "with a patch" in bench.validate_problem(patched(RIGHT_PATCH))


def test_healthz_wants_its_body():
    assert bench.healthz_problem(b'{"status": "ok"}') is None
    assert bench.healthz_problem(b'{"status": "degraded"}') is not None


def test_a_wrong_answer_is_counted_and_a_right_one_remembered():
    target = bench.Target("validate", "POST", "/webhooks/validate", b"{}", bench.validate_problem)
    assert target.answer_is_right(200, answer())
    assert target.checked == {answer()}
    assert not target.answer_is_right(429, answer())
    assert not target.answer_is_right(200, answer(allowed=False))
    assert target.errors == {"HTTP 429": 1, "allowed is False: None": 1}


def test_apply_patch_follows_rfc_6902_for_what_the_webhook_emits():
    document = {"a": {"b/c": 1}, "list": [1, 2]}
    operations = [
        {"op": "replace", "path": "/a/b~1c", "value": 2},
        {"op": "add", "path": "/list/-", "value": 3},
        {"op": "add", "path": "/list/0", "value": 0},
        {"op": "remove", "path": "/list/1"},
    ]
    assert bench.apply_patch(document, operations) == {"a": {"b/c": 2}, "list": [0, 2, 3]}
    assert document == {"a": {"b/c": 1}, "list": [1, 2]}
    with pytest.raises(ValueError, match="unexpected op"):
        bench.apply_patch(document, [{"op": "move", "path": "/a", "from": "/list"}])
