"""The AdmissionReview v1 contract: what a request must carry and what a response says."""

from __future__ import annotations

import base64
import json

import pytest

from fields import FieldError
from webhooks.review import MalformedReview, Verdict, parse_review, review_response
from webhooks.tests.conftest import admission_review, tf_job


def test_a_request_is_read_field_by_field():
    body = admission_review(tf_job(), operation="UPDATE", old=tf_job(), dry_run=True)
    request = parse_review(body)
    assert request.uid == body["request"]["uid"]
    assert (request.kind.group, request.kind.version, request.kind.kind) == ("argoml.io", "v1alpha1", "TFJob")
    assert request.operation == "UPDATE"
    assert (request.namespace, request.name) == ("ml", "mnist")
    assert request.object == tf_job()
    assert request.old_object == tf_job()
    assert request.dry_run is True
    assert request.display_name == 'TFJob "mnist"'


def test_a_delete_has_no_object_and_an_old_object():
    request = parse_review(admission_review(None, operation="DELETE", old=tf_job()))
    assert request.object is None
    assert request.old_object == tf_job()
    assert request.display_name == 'TFJob "mnist"'


@pytest.mark.parametrize(
    ("mangle", "complaint"),
    [
        (lambda body: body.update(apiVersion="admission.k8s.io/v1beta1"), "apiVersion must be"),
        (lambda body: body.update(kind="Review"), "kind must be 'AdmissionReview'"),
        (lambda body: body.pop("request"), "request is required"),
        (lambda body: body["request"].pop("uid"), "request.uid is required"),
        (lambda body: body["request"].update(uid=7), "request.uid is required"),
        (lambda body: body["request"].update(operation="PATCH"), "request.operation must be one of"),
        (lambda body: body["request"].update(kind="TFJob"), "request.kind is required"),
        (lambda body: body["request"]["kind"].update(kind=""), "request.kind.version and request.kind.kind"),
        (lambda body: body["request"]["kind"].update(group=None), "request.kind.group must be a string"),
        (lambda body: body["request"].update(object=[1]), "request.object must be an object or null"),
        (lambda body: body["request"].update(oldObject="x"), "request.oldObject must be an object or null"),
        (lambda body: body["request"].update(namespace=3), "request.namespace must be a string"),
        (lambda body: body["request"].update(dryRun="yes"), "request.dryRun must be true or false"),
        (lambda body: body["request"].update(resource="tfjobs"), "request.resource must be an object"),
        (lambda body: body["request"]["resource"].update(group=1), "request.resource.group must be a string"),
    ],
)
def test_a_malformed_request_is_refused_naming_the_field(mangle, complaint):
    body = admission_review(tf_job())
    mangle(body)
    with pytest.raises(MalformedReview, match=complaint):
        parse_review(body)


@pytest.mark.parametrize("body", [None, [], "AdmissionReview", 42])
def test_a_body_that_is_not_an_object_is_refused(body):
    with pytest.raises(MalformedReview, match="must be a JSON object"):
        parse_review(body)


def test_the_resource_says_what_a_subresources_object_belongs_to():
    body = admission_review(tf_job(), operation="UPDATE", old=tf_job(), subResource="scale")
    body["request"]["resource"] = {"group": "argoml.io", "version": "v1alpha1", "resource": "pytorchjobs"}
    request = parse_review(body)
    assert (request.sub_resource, request.resource_group, request.resource) == (
        "scale",
        "argoml.io",
        "pytorchjobs",
    )


REQUEST = parse_review(admission_review(tf_job()))


def test_an_allowed_response_echoes_the_uid_and_nothing_else():
    assert review_response(REQUEST, Verdict.allow()) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": REQUEST.uid, "allowed": True},
    }


def test_a_denial_carries_code_message_reason_and_causes():
    verdict = Verdict.deny(422, 'TFJob "x" is invalid: spec: bad', [FieldError("spec", "bad")], ["careful"])
    response = review_response(REQUEST, verdict)["response"]
    assert response["allowed"] is False
    assert response["status"] == {
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": 'TFJob "x" is invalid: spec: bad',
        "details": {
            "name": "mnist",
            "group": "argoml.io",
            "kind": "TFJob",
            "causes": [{"type": "FieldValueInvalid", "field": "spec", "message": "bad"}],
        },
    }
    assert response["warnings"] == ["careful"]
    assert "patch" not in response


def test_a_patch_travels_base64_encoded_as_json_patch():
    operations = [{"op": "add", "path": "/metadata/labels", "value": {"team": "a"}}]
    response = review_response(REQUEST, Verdict.allow(patch=operations))["response"]
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == operations


def test_a_denial_needs_an_error_code():
    with pytest.raises(ValueError, match="needs an error code"):
        Verdict.deny(200, "no")
