"""The scale check: `kubectl scale pytorchjob` (a Scale on `pytorchjobs/scale`) within the elastic bounds.

Reviews shaped as the apiserver sends them for a scale write (kubesim sends the same, see
kubesim/tests/test_admission.py); the job is read through a stand-in reader here and from kubesim in
test_kubesim_e2e.py. Over HTTP, an error reading the job denies the request (our kinds fail closed).
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

import limits
from fields import FieldError
from webhooks import failures, scaling, views
from webhooks.review import parse_review
from webhooks.tests.conftest import container, pytorch_job

pytestmark = pytest.mark.urls("argoml_site.webhook_urls")

SCALE_KIND = {"group": "autoscaling", "version": "v1", "kind": "Scale"}


def scale_review(
    replicas: int, *, old: int = 2, name: str = "elastic", resource: str = "pytorchjobs"
) -> dict:
    def scale(count: int) -> dict:
        return {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"replicas": count},
            "status": {"replicas": old},
        }

    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "4b5a8f8e-scale",
            "kind": SCALE_KIND,
            "resource": {"group": "argoml.io", "version": "v1alpha1", "resource": resource},
            "subResource": "scale",
            "requestKind": SCALE_KIND,
            "name": name,
            "namespace": "ml",
            "operation": "UPDATE",
            "userInfo": {"username": "alice"},
            "object": scale(replicas),
            "oldObject": scale(old),
            "dryRun": False,
        },
    }


def elastic_job(**policy) -> dict:
    job = pytorch_job(
        "elastic", Worker={"replicas": 2, "template": {"spec": {"containers": [container("pytorch")]}}}
    )
    job["spec"]["elasticPolicy"] = {"minReplicas": 2, "maxReplicas": 4, **policy}
    return job


def decide(replicas: int, job: dict | None, **review) -> scaling.Verdict:
    return scaling.review(parse_review(scale_review(replicas, **review)), lambda namespace, name: job)


@pytest.mark.parametrize("replicas", [2, 3, 4])
def test_a_scale_within_the_bounds_is_allowed(replicas):
    assert decide(replicas, elastic_job()).allowed


@pytest.mark.parametrize(("replicas", "bounds"), [(5, "[2, 4]"), (1, "[2, 4]"), (0, "[2, 4]")])
def test_a_scale_outside_the_bounds_is_refused_naming_the_field(replicas, bounds):
    verdict = decide(replicas, elastic_job())
    assert not verdict.allowed
    assert verdict.code == 422
    problem = f"{replicas} is outside the elastic policy's {bounds}"
    assert verdict.causes == (FieldError("spec.pytorchReplicaSpecs.Worker.replicas", problem),)
    assert (
        verdict.message
        == f'PyTorchJob "elastic" is invalid: spec.pytorchReplicaSpecs.Worker.replicas: {problem}'
    )


@pytest.mark.parametrize("policy", [{"maxReplicas": 200_000}, None])
def test_a_scale_past_the_bound_on_replicas_is_refused_naming_the_field(policy):
    job = elastic_job(**(policy or {}))
    if policy is None:
        del job["spec"]["elasticPolicy"]
    with limits.overridden(replicas_per_job=4):
        assert decide(4, job).allowed
        refused = decide(5, job)
    assert (refused.allowed, refused.code) == (False, 422)
    problem = "must be at most 4 replicas (MAX_REPLICAS_PER_JOB), not 5"
    assert refused.causes == (FieldError("spec.pytorchReplicaSpecs.Worker.replicas", problem),)


def test_the_default_bound_refuses_a_scale_to_a_hundred_thousand_workers():
    job = elastic_job()
    del job["spec"]["elasticPolicy"]
    (cause,) = decide(100_000, job).causes
    assert cause == FieldError(
        "spec.pytorchReplicaSpecs.Worker.replicas",
        "must be at most 1000 replicas (MAX_REPLICAS_PER_JOB), not 100000",
    )


def test_a_job_without_an_elastic_policy_scales_as_its_replicas_may_be_edited():
    job = elastic_job()
    del job["spec"]["elasticPolicy"]
    assert decide(9, job).allowed


def test_a_job_that_is_gone_is_left_to_the_apiservers_404():
    assert decide(9, None).allowed


def test_the_reader_is_asked_for_the_job_the_scale_belongs_to():
    asked = []
    scaling.review(parse_review(scale_review(3)), lambda namespace, name: asked.append((namespace, name)))
    assert asked == [("ml", "elastic")]


@pytest.mark.parametrize(
    ("review", "routed"),
    [
        (scale_review(3), True),
        (scale_review(3, resource="tfjobs"), False),  # no elastic policy, no scale subresource
        ({**scale_review(3), "request": {**scale_review(3)["request"], "subResource": "status"}}, False),
    ],
)
def test_only_a_pytorchjobs_scale_is_routed_to_the_check(review, routed):
    assert scaling.is_scale_request(parse_review(review)) is routed


def test_a_scale_of_our_kinds_fails_closed():
    assert failures.fails_closed(parse_review(scale_review(3)))


def post(body: dict) -> dict:
    response = Client().post("/webhooks/validate", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 200
    return response.json()["response"]


def test_over_http_a_refusal_carries_the_field_and_an_unreadable_job_is_refused(monkeypatch, db):
    monkeypatch.setattr(scaling, "read_job", lambda namespace, name: elastic_job())
    answer = post(scale_review(5))
    assert (answer["allowed"], answer["status"]["code"], answer["status"]["reason"]) == (
        False,
        422,
        "Invalid",
    )
    assert answer["status"]["details"]["causes"][0]["field"] == "spec.pytorchReplicaSpecs.Worker.replicas"
    assert post(scale_review(3))["allowed"] is True

    def unreachable(namespace, name):
        raise ConnectionError("the apiserver is unreachable")

    monkeypatch.setattr(scaling, "read_job", unreachable)
    answer = post(scale_review(3))
    assert (answer["allowed"], answer["status"]["code"]) == (False, 500)
    assert answer["status"]["message"] == f'Scale "elastic" could not be admitted: {views.INTERNAL_ERROR}'
