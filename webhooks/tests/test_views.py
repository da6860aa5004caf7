"""The endpoints over HTTP: the apiserver's contract, malformed bodies, dry runs, the zero-query hot path."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from typing import Any

import pytest
from django.test import Client, RequestFactory
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from access.models import NamespacePodSecurity
from webhooks import mutating, rulecache, rulesversion, validating, views
from webhooks.budget import BudgetExceeded, within_budget
from webhooks.models import InjectionRule, SecretEnvVar
from webhooks.tests.conftest import (
    admission_review,
    container,
    decoded_patch,
    hyperparam_workflow,
    patched,
    pod,
    tf_job,
)

ENDPOINTS = ["/webhooks/validate", "/webhooks/mutate"]
# The webhook listener's URLconf; the web server's has no /webhooks/ (test_the_web_server_...).
pytestmark = pytest.mark.urls("argoml_site.webhook_urls")


@pytest.fixture
def apiserver() -> Client:
    """A client with no session or token that still enforces CSRF, like the apiserver calling us."""
    return Client(enforce_csrf_checks=True)


def post(client: Client, path: str, body: object) -> dict:
    response = client.post(path, data=json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def wandb_rule(db) -> InjectionRule:
    rule = InjectionRule.objects.create(
        name="wandb",
        namespaces=["ml"],
        pod_selector={"matchExpressions": [{"key": "workflows.argoproj.io/workflow", "operator": "Exists"}]},
    )
    SecretEnvVar.objects.create(rule=rule, name="WANDB_API_KEY", secret_name="wandb", secret_key="api-key")
    return rule


# -- the contract ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ENDPOINTS)
def test_a_review_is_answered_for_its_uid_without_any_login_or_csrf_token(apiserver, path, db):
    body = admission_review(tf_job())
    answer = post(apiserver, path, body)
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    assert answer["response"]["uid"] == body["request"]["uid"]
    assert answer["response"]["allowed"] is True


@pytest.mark.parametrize("path", ENDPOINTS)
def test_the_api_throttle_never_answers_the_apiserver(apiserver, path, db, settings):
    """The apiserver calls anonymously from one address, many times a minute; a 429 would fail admission."""
    settings.API_THROTTLE_ANON = "2/minute"
    body = admission_review(tf_job())
    for _ in range(5):
        assert post(apiserver, path, body)["response"]["allowed"] is True


@pytest.mark.parametrize("path", ENDPOINTS)
def test_a_session_without_a_csrf_token_is_not_refused_either(apiserver, path, django_user_model):
    """DRF's SessionAuthentication would demand a CSRF token from a logged-in session: not here."""
    apiserver.force_login(django_user_model.objects.create_user("someone"))
    post(apiserver, path, admission_review(tf_job()))


def test_a_denial_says_why_with_code_and_message(apiserver, db):
    job = tf_job(Worker={"template": {"spec": {"containers": [container("tf")]}}})
    response = post(apiserver, "/webhooks/validate", admission_review(job))["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 422
    assert "spec.tfReplicaSpecs.Worker.template.spec.containers" in response["status"]["message"]


def test_a_job_comes_back_with_a_base64_json_patch(apiserver):
    response = post(apiserver, "/webhooks/mutate", admission_review(tf_job()))["response"]
    assert response["patchType"] == "JSONPatch"
    assert {
        "op": "add",
        "path": "/spec/tfReplicaSpecs/Worker/restartPolicy",
        "value": "Never",
    } in decoded_patch(response)


def job_of(kind: str, spec_key: str, container_name: str, **spec: Any) -> dict[str, Any]:
    worker = {"replicas": 2, "template": {"spec": {"containers": [container(container_name)]}}}
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": "kubeflow-shaped", "namespace": "ml"},
        "spec": {spec_key: {"Worker": worker}, **spec},
    }


def test_the_newer_kubeflow_kinds_are_defaulted_as_kubeflow_defaults_them(apiserver):
    review = admission_review(job_of("PaddleJob", "paddleReplicaSpecs", "paddle", elasticPolicy={}))
    stored = patched(review["request"]["object"], post(apiserver, "/webhooks/mutate", review)["response"])
    worker = stored["spec"]["paddleReplicaSpecs"]["Worker"]
    assert worker["restartPolicy"] == "OnFailure"
    assert worker["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "master", "containerPort": 36543, "protocol": "TCP"}
    ]
    assert stored["spec"]["elasticPolicy"] == {"minReplicas": 2, "maxReplicas": 2}
    assert stored["spec"]["runPolicy"] == {"cleanPodPolicy": "None"}


@pytest.mark.parametrize(
    ("job", "allowed", "field"),
    [
        (job_of("JAXJob", "jaxReplicaSpecs", "jax"), True, ""),
        (job_of("PaddleJob", "paddleReplicaSpecs", "paddle"), True, ""),
        (job_of("XGBoostJob", "xgbReplicaSpecs", "xgboost"), False, "spec.xgbReplicaSpecs.Master"),
        (job_of("JAXJob", "jaxReplicaSpecs", "main"), False, "spec.jaxReplicaSpecs.Worker.template"),
    ],
)
def test_the_newer_kubeflow_kinds_are_validated(apiserver, db, job, allowed, field):
    response = post(apiserver, "/webhooks/validate", admission_review(job))["response"]
    assert response["allowed"] is allowed
    assert field in response.get("status", {}).get("message", "")


@pytest.mark.parametrize("path", ENDPOINTS)
def test_a_dry_run_is_answered_exactly_like_the_real_request(apiserver, path, wandb_rule):
    workflow_pod = pod(labels={"workflows.argoproj.io/workflow": "w1"})
    for obj in (tf_job(), workflow_pod, tf_job(Worker={})):
        real = post(apiserver, path, admission_review(obj))["response"]
        dry = post(apiserver, path, admission_review(obj, dry_run=True))["response"]
        assert {**dry, "uid": ""} == {**real, "uid": ""}


def test_a_dry_run_changes_nothing(apiserver, wandb_rule, django_assert_num_queries):
    version = rulesversion.read_rules_version()
    post(apiserver, "/webhooks/mutate", admission_review(pod(), dry_run=True))  # loads the rules once
    post(apiserver, "/webhooks/validate", admission_review(tf_job(), dry_run=True))  # and the pod security
    with django_assert_num_queries(0):
        post(apiserver, "/webhooks/mutate", admission_review(pod(), dry_run=True))
        post(apiserver, "/webhooks/validate", admission_review(tf_job(), dry_run=True))
    assert rulesversion.read_rules_version() == version


@pytest.mark.parametrize("path", ENDPOINTS)
def test_a_delete_is_allowed(apiserver, path, db):
    response = post(apiserver, path, admission_review(None, operation="DELETE", old=tf_job()))["response"]
    assert response == {"uid": response["uid"], "allowed": True}


# -- the hot path -------------------------------------------------------------------------------------


def test_admitting_pods_makes_no_database_query_once_the_rules_are_held(
    apiserver, wandb_rule, django_assert_num_queries
):
    workflow_pod = pod(labels={"workflows.argoproj.io/workflow": "w1"})
    post(apiserver, "/webhooks/mutate", admission_review(workflow_pod))
    post(apiserver, "/webhooks/validate", admission_review(tf_job()))  # loads the namespaces' pod security
    with django_assert_num_queries(0):
        for _ in range(3):
            response = post(apiserver, "/webhooks/mutate", admission_review(workflow_pod))["response"]
            post(apiserver, "/webhooks/mutate", admission_review(tf_job()))
            post(apiserver, "/webhooks/validate", admission_review(tf_job()))
    assert decoded_patch(response)[0]["path"] == "/spec/containers/0/env"


def test_an_unchanged_version_after_the_interval_still_makes_no_query(
    apiserver, wandb_rule, django_assert_num_queries
):
    now = [0.0]
    rulecache.reset_process_cache(clock=lambda: now[0])
    post(apiserver, "/webhooks/mutate", admission_review(pod()))
    now[0] += rulecache.CHECK_INTERVAL_SECONDS + 1
    with django_assert_num_queries(0):
        post(apiserver, "/webhooks/mutate", admission_review(pod()))


def test_a_rule_saved_reaches_the_webhook_at_the_next_check(
    apiserver, wandb_rule, django_capture_on_commit_callbacks
):
    now = [0.0]
    rulecache.reset_process_cache(clock=lambda: now[0])
    plain_pod = pod(labels={"app": "web"})
    assert "patch" not in post(apiserver, "/webhooks/mutate", admission_review(plain_pod))["response"]
    before = int(rulesversion.read_rules_version() or 0)
    with django_capture_on_commit_callbacks(execute=True):
        wandb_rule.pod_selector = {}
        wandb_rule.save()
    assert int(rulesversion.read_rules_version() or 0) > before
    assert "patch" not in post(apiserver, "/webhooks/mutate", admission_review(plain_pod))["response"]
    now[0] += rulecache.CHECK_INTERVAL_SECONDS
    assert "patch" in post(apiserver, "/webhooks/mutate", admission_review(plain_pod))["response"]


def test_a_malformed_rule_in_the_database_is_skipped_not_applied(apiserver, wandb_rule):
    InjectionRule.objects.create(name="broken", priority=1, pod_selector={"matchExpressions": "nope"})
    workflow_pod = pod(labels={"workflows.argoproj.io/workflow": "w1"})
    response = post(apiserver, "/webhooks/mutate", admission_review(workflow_pod))["response"]
    assert response["allowed"] is True
    assert decoded_patch(response)[0]["value"][0]["name"] == "WANDB_API_KEY"


# -- what is not a review -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        (b"{not json", "JSON parse error"),
        (b"\xff\xfe\x00", "JSON parse error"),
        (b'{"a": NaN}', "JSON parse error"),
        (b"[" * 100_000 + b"]" * 100_000, "JSON parse error"),
        (b"", "not an AdmissionReview v1 request: apiVersion must be"),
        (b"[]", "not an AdmissionReview v1 request: the body must be a JSON object"),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', "request is required"),
    ],
)
def test_a_malformed_body_gets_400_with_a_json_error(apiserver, path, body, complaint):
    response = apiserver.post(path, data=body, content_type="application/json")
    assert response.status_code == 400
    assert complaint in response.json()["detail"]


@pytest.mark.parametrize("path", ENDPOINTS)
def test_only_post_is_accepted(apiserver, path):
    assert apiserver.get(path).status_code == 405
    assert apiserver.put(path, data="{}", content_type="application/json").status_code == 405


@pytest.mark.parametrize("path", ENDPOINTS)
def test_only_json_is_accepted(apiserver, path):
    response = apiserver.post(path, data="apiVersion=1", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert "detail" in response.json()


# -- fuzzing ------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)
kinds = st.sampled_from(
    [
        {"group": "argoml.io", "version": "v1alpha1", "kind": "TFJob"},
        {"group": "argoml.io", "version": "v1alpha1", "kind": "PyTorchJob"},
        {"group": "argoml.io", "version": "v1alpha1", "kind": "HyperparamWorkflow"},
        {"group": "argoproj.io", "version": "v1alpha1", "kind": "Workflow"},
        {"group": "argoproj.io", "version": "v1alpha1", "kind": "CronWorkflow"},
        {"group": "", "version": "v1", "kind": "Pod"},
    ]
)
reviews = st.fixed_dictionaries(
    {"apiVersion": st.just("admission.k8s.io/v1"), "kind": st.just("AdmissionReview")},
    optional={
        "request": st.fixed_dictionaries(
            {"uid": st.text(min_size=1, max_size=8), "kind": kinds},
            optional={
                "operation": st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT", "PATCH", 3]),
                "namespace": st.text(max_size=8) | json_values,
                "object": st.fixed_dictionaries(
                    {},
                    optional={
                        "metadata": st.fixed_dictionaries(
                            {}, optional={"name": json_values, "labels": json_values}
                        ),
                        "spec": json_values,
                    },
                )
                | json_values,
                "oldObject": json_values,
                "dryRun": json_values,
            },
        )
        | json_values
    },
)


def assert_no_internal_error(response, caplog) -> None:
    """The production net answers an internal error per the failurePolicy and logs it; in a test it is a
    failure, whatever the answer looked like."""
    logged = [record for record in caplog.records if record.levelno >= logging.ERROR]
    caplog.clear()
    assert not logged, f"a review logged an error: {logged[0].getMessage()}"
    if response.status_code != 200:
        return
    answer = response.json()["response"]
    internal = [
        text
        for text in (answer.get("status", {}).get("message", ""), *answer.get("warnings", ()))
        if text.endswith((views.INTERNAL_ERROR, validating.INTERNAL_ERROR, mutating.INJECTION_FAILED))
    ]
    assert not internal, f"an internal error was answered: {internal}"


@pytest.mark.django_db
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=reviews | json_values, path=st.sampled_from(ENDPOINTS))
# Most generated bodies are refused before any review runs; these two always reach one, on each endpoint,
# so that a review that raises is found on every run (test_the_fuzz_test_fails_when_validation_raises).
@example(body=admission_review(tf_job()), path="/webhooks/validate")
@example(body=admission_review(pod()), path="/webhooks/mutate")
def test_any_json_body_gets_an_answer_or_a_400_never_a_500(apiserver, caplog, body, path):
    response = apiserver.post(path, data=json.dumps(body), content_type="application/json")
    assert response.status_code in (200, 400), response.content
    assert_no_internal_error(response, caplog)
    answer = response.json()
    if response.status_code == 200:
        assert answer["response"]["uid"] == body["request"]["uid"]
        assert isinstance(answer["response"]["allowed"], bool)
    else:
        assert answer["detail"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=64), path=st.sampled_from(ENDPOINTS))
def test_any_bytes_get_an_answer_or_a_400_never_a_500(apiserver, caplog, body, path):
    response = apiserver.post(path, data=body, content_type="application/json")
    assert response.status_code in (200, 400)
    assert_no_internal_error(response, caplog)
    assert response.json()


# -- pod security ------------------------------------------------------------------------------------


def test_a_job_breaking_its_namespaces_pod_security_is_denied_with_every_field(apiserver, db):
    escape = {"containers": [container(securityContext={"privileged": True})], "hostIPC": True}
    job = tf_job(Worker={"template": {"spec": escape, "metadata": {}}})
    response = post(apiserver, "/webhooks/validate", admission_review(job))["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 422
    where = "spec.tfReplicaSpecs.Worker.template.spec"
    assert response["status"]["details"]["causes"] == [
        {
            "field": f"{where}.hostIPC",
            "message": "host namespaces (hostIPC=true)",
            "type": "FieldValueInvalid",
        },
        {
            "field": f"{where}.containers[0].securityContext.privileged",
            "message": 'privileged (container "tensorflow" must not set securityContext.privileged=true)',
            "type": "FieldValueInvalid",
        },
    ]
    assert f"{where}.hostIPC: host namespaces (hostIPC=true)" in response["status"]["message"]


def test_the_webhook_reads_the_level_of_the_reviews_namespace(apiserver, db):
    NamespacePodSecurity.objects.create(namespace="ml", level="restricted")
    NamespacePodSecurity.objects.create(namespace="lab", level="privileged", service_accounts="builder")
    bare = tf_job(
        Worker={"template": {"spec": {"containers": [container()], "serviceAccountName": "builder"}}}
    )
    denied = post(apiserver, "/webhooks/validate", admission_review(bare))["response"]
    assert denied["allowed"] is False
    fields = {cause["field"] for cause in denied["status"]["details"]["causes"]}
    assert "spec.tfReplicaSpecs.Worker.template.spec.containers[0].securityContext.runAsNonRoot" in fields
    assert "spec.tfReplicaSpecs.Worker.template.spec.serviceAccountName" in fields
    elsewhere = {**bare, "metadata": {"name": "mnist", "namespace": "lab"}}
    assert post(apiserver, "/webhooks/validate", admission_review(elsewhere))["response"]["allowed"] is True


def test_a_sweep_whose_workflow_mounts_the_host_is_denied(apiserver, db):
    workflow = {
        "entrypoint": "train",
        "templates": [
            {
                "name": "train",
                "container": {"image": "x"},
                "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
            }
        ],
    }
    review = admission_review(hyperparam_workflow(workflow=workflow))
    causes = post(apiserver, "/webhooks/validate", review)["response"]["status"]["details"]["causes"]
    assert {
        "type": "FieldValueInvalid",
        "field": "spec.workflow.templates[0].volumes[0].hostPath",
        "message": 'hostPath volumes (volume "h")',
    } in causes


def test_the_fuzz_test_fails_when_validation_raises(apiserver, caplog, monkeypatch, db):
    def explode(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(validating, "review", explode)
    with pytest.raises(AssertionError, match="a review logged an error"):
        test_any_json_body_gets_an_answer_or_a_400_never_a_500(apiserver, caplog)


# -- the web server does not serve them; the listener serves nothing else -----------------------------


@pytest.mark.urls("argoml_site.urls")
@pytest.mark.parametrize("path", ENDPOINTS)
def test_the_web_server_does_not_answer_reviews(apiserver, path, db):
    response = apiserver.post(path, data=json.dumps(admission_review(pod())), content_type="application/json")
    assert response.status_code == 404


@pytest.mark.parametrize("path", ["/admin/", "/api/", "/dashboard/", "/metrics", "/api/schema/"])
def test_the_listener_serves_nothing_but_reviews_and_probes(apiserver, path, db):
    assert apiserver.get(path).status_code == 404
    assert apiserver.get("/healthz").status_code == 200


def test_the_listener_application_resolves_against_the_webhook_urls(db):
    from argoml_site.webhook_wsgi import application

    def call(path: str) -> str:
        statuses = []
        environ = RequestFactory().get(path).environ
        b"".join(application(environ, lambda status, headers: statuses.append(status)))
        return statuses[0]

    assert call("/healthz").startswith("200")
    assert call("/admin/").startswith("404")
    assert call("/webhooks/validate").startswith("405")


# -- limits -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ENDPOINTS)
def test_a_body_over_the_limit_is_refused_with_413_before_it_is_read(apiserver, path, settings, monkeypatch):
    settings.WEBHOOK_MAX_BODY_BYTES = 2048
    body = json.dumps(admission_review(tf_job(), uid="x" * 4000))

    def unread(*args, **kwargs):
        raise AssertionError("the body was parsed")

    monkeypatch.setattr("rest_framework.parsers.JSONParser.parse", unread)
    response = apiserver.post(path, data=body, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["detail"] == (
        f"the body is {len(body)} bytes; an AdmissionReview may have at most 2048 bytes"
    )


def test_a_body_at_the_limit_is_answered(apiserver, settings, db):
    body = json.dumps(admission_review(tf_job()))
    settings.WEBHOOK_MAX_BODY_BYTES = len(body)
    assert apiserver.post("/webhooks/validate", data=body, content_type="application/json").status_code == 200


def slow_check(seconds: float):
    def check(obj):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:  # busy, as a slow lint is: CPU, not sleep
            pass
        slow_check.finished = True  # type: ignore[attr-defined]
        return validating.Findings((), ())

    return check


@pytest.mark.parametrize(
    ("kind", "obj"),
    [("TFJob", tf_job()), ("Workflow", {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow"})],
)
def test_a_review_past_its_budget_is_stopped_and_answered_per_the_failure_policy(
    apiserver, settings, monkeypatch, caplog, kind, obj
):
    settings.WEBHOOK_REVIEW_BUDGET_SECONDS = 0.2
    slow_check.finished = False  # type: ignore[attr-defined]
    monkeypatch.setattr(validating, "checker", lambda kind: slow_check(5.0))
    answer = post(apiserver, "/webhooks/validate", admission_review(obj))["response"]
    assert slow_check.finished is False, "the slow work was stopped, not waited for"  # type: ignore[attr-defined]
    if kind == "TFJob":  # ours fail closed
        assert answer["allowed"] is False
        assert answer["status"]["code"] == 500
        assert (
            answer["status"]["message"] == 'TFJob "mnist" could not be admitted: its review ran out of time'
        )
    else:  # Argo's fail open
        assert answer["allowed"] is True
        assert answer["warnings"] == [f"argoml admitted {kind} unchecked: its review ran out of time"]
    assert "stopped after its 0.2s budget" in caplog.text


def test_a_review_within_its_budget_is_answered_normally(apiserver, settings, monkeypatch, db):
    settings.WEBHOOK_REVIEW_BUDGET_SECONDS = 2.0
    monkeypatch.setattr(validating, "checker", lambda kind: slow_check(0.05))
    assert post(apiserver, "/webhooks/validate", admission_review(tf_job()))["response"]["allowed"] is True


def test_no_stray_exception_reaches_the_thread_after_a_budget_ends():
    """Answers given just as the timer fires are late (BudgetExceeded), never followed by a stray raise."""
    answered = 0
    for _ in range(200):
        with contextlib.suppress(BudgetExceeded):
            answered += within_budget(lambda: 1, 0.0001)
    for _ in range(100):  # a stray asynchronous exception would surface in this loop
        time.sleep(0.001)
    assert answered <= 200


@pytest.mark.parametrize("path", ENDPOINTS)
def test_a_review_nested_past_the_depth_bound_is_400_naming_it(apiserver, path, db):
    """The bounded reader, as for every other body: not a RecursionError caught after the fact."""
    review = admission_review(tf_job())
    review["request"]["object"]["spec"]["deep"] = "NESTED"
    body = json.dumps(review).replace('"NESTED"', "[" * 500 + "]" * 500)
    response = apiserver.post(path, data=body, content_type="application/json")
    assert response.status_code == 400
    assert "MAX_YAML_DEPTH" in response.json()["detail"]


@pytest.mark.parametrize("path", ENDPOINTS)
def test_a_review_with_a_number_no_api_server_stores_is_400_naming_its_field(apiserver, path, db):
    review = admission_review(tf_job())
    review["request"]["object"]["spec"]["runPolicy"] = {"backoffLimit": 2**70}
    response = apiserver.post(path, data=json.dumps(review), content_type="application/json")
    assert response.status_code == 400
    assert "request.object.spec.runPolicy.backoffLimit" in response.json()["detail"]
