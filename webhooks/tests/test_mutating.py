"""The mutating webhook: job defaults and Pod injection, as JSON Patches the apiserver applies."""

from __future__ import annotations

import copy
import json

import pytest

import limits
from jobs.frameworks import framework_class
from jobs.spec import with_defaults
from webhooks import mutating
from webhooks.injection import Rule, SecretEnv
from webhooks.review import Verdict, parse_review, review_response
from webhooks.tests.conftest import admission_review, container, mpi_job, patched, pod, pytorch_job, tf_job

WANDB_RULE = Rule("wandb", env=(SecretEnv("WANDB_API_KEY", "wandb", "api-key"),))


def answer(obj, rules=(), **options):
    """The AdmissionReview response for `obj`, with `rules` as the process's injection rules."""
    review = parse_review(admission_review(obj, **options))
    return review_response(review, mutating.review(review, lambda: rules))["response"]


@pytest.mark.parametrize("job", [tf_job(), pytorch_job(), mpi_job()])
def test_a_job_is_patched_to_exactly_its_defaults(job):
    response = answer(job)
    assert response["allowed"] is True
    stored = patched(job, response)
    framework = framework_class(job["kind"])()
    assert stored["spec"] == with_defaults(job, framework)["spec"]
    assert stored["spec"] != job["spec"]


def test_a_kubeflow_v1_job_is_defaulted_as_ours_is():
    job = {**tf_job(), "apiVersion": "kubeflow.org/v1"}
    response = answer(job, group_version=("kubeflow.org", "v1"))
    assert patched(job, response)["spec"] == with_defaults(job, framework_class("TFJob")())["spec"]


def test_the_defaults_fill_ports_restart_policies_and_run_policy():
    stored = patched(tf_job(), answer(tf_job()))
    worker = stored["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker["restartPolicy"] == "Never"
    assert worker["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}
    ]
    assert "cleanPodPolicy" in stored["spec"]["runPolicy"]


def test_an_mpijob_gets_kubeflows_mpi_defaults():
    stored = patched(mpi_job(workers=None), answer(mpi_job(workers=None)))["spec"]
    replicas = stored["mpiReplicaSpecs"]
    assert (replicas["Launcher"]["replicas"], replicas["Worker"]["replicas"]) == (1, 0)
    assert stored["runPolicy"] == {"cleanPodPolicy": "None"}
    assert (stored["slotsPerWorker"], stored["mpiImplementation"]) == (1, "OpenMPI")


def test_a_job_that_already_has_its_defaults_gets_no_patch():
    response = answer(with_defaults(tf_job(), framework_class("TFJob")()))
    assert response["allowed"] is True
    assert "patch" not in response


def test_an_invalid_job_is_left_as_written_for_the_validating_webhook_to_deny():
    job = tf_job(worker={"template": {"spec": {"containers": [container()]}}}, Wrokers={"replicas": 1})
    assert "patch" not in answer(job)


def test_a_job_past_its_bounds_is_left_as_written_and_one_at_them_is_defaulted():
    job = tf_job(Worker={"replicas": 4, "template": {"spec": {"containers": [container()]}}})
    with limits.overridden(replicas_per_job=4):
        assert mutating.defaults_patch(job, "TFJob")
        job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 5
        assert mutating.defaults_patch(job, "TFJob") == []


def test_defaults_apply_to_an_update_of_the_spec():
    job = tf_job()
    old = copy.deepcopy(job)
    old["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 1
    assert "patch" in answer(job, operation="UPDATE", old=old)


def test_an_update_that_leaves_the_spec_alone_is_not_defaulted():
    job = tf_job()
    labelled = copy.deepcopy(job)
    labelled["metadata"]["labels"] = {"team": "vision"}
    assert "patch" not in answer(labelled, operation="UPDATE", old=job)


def test_a_delete_or_a_status_update_gets_no_patch():
    deleted = answer(None, operation="DELETE", old=tf_job())
    assert deleted == {"uid": deleted["uid"], "allowed": True}
    assert "patch" not in answer(tf_job(), operation="UPDATE", old=tf_job(), subResource="status")


def test_a_crash_while_defaulting_a_job_denies_it_with_a_generic_message_and_logs_the_detail(
    monkeypatch, caplog
):
    def explode(job, framework):
        raise TypeError("secret-detail-from-the-spec")

    monkeypatch.setattr(mutating, "with_defaults", explode)
    response = answer(tf_job())
    assert response["allowed"] is False
    assert response["status"]["code"] == 500
    assert response["status"]["message"] == (
        'TFJob "mnist" could not be admitted: internal error while filling in its defaults'
    )
    assert "secret-detail-from-the-spec" not in json.dumps(response)
    [record] = [record for record in caplog.records if record.name == "webhooks.mutating"]
    assert record.exc_info is not None
    assert "secret-detail-from-the-spec" in str(record.exc_info[1])


def test_a_pod_a_rule_selects_gets_the_secret_env():
    original = pod()
    stored = patched(original, answer(original, rules=(WANDB_RULE,)))
    assert stored["spec"]["containers"][0]["env"] == [
        {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}}
    ]


def test_a_pod_no_rule_selects_gets_no_patch():
    rule = Rule("only-team-a", namespaces=("team-a",), env=WANDB_RULE.env)
    assert "patch" not in answer(pod(namespace="ml"), rules=(rule,))


def test_the_namespace_of_the_request_decides_not_the_pods_metadata():
    rule = Rule("only-team-a", namespaces=("team-a",), env=WANDB_RULE.env)
    nameless = pod()
    del nameless["metadata"]["namespace"]
    assert "patch" in answer(nameless, rules=(rule,), namespace="team-a")


def test_pods_are_injected_on_create_only():
    original = pod()
    assert "patch" not in answer(original, rules=(WANDB_RULE,), operation="UPDATE", old=original)


def test_a_dry_run_gets_the_same_answer():
    original = pod()
    real, dry = answer(original, rules=(WANDB_RULE,)), answer(original, rules=(WANDB_RULE,), dry_run=True)
    assert dry["patch"] == real["patch"]


def test_broken_rules_admit_the_pod_unchanged_with_a_warning():
    def broken_rules():
        raise ConnectionError("database db.internal:5432 is down")

    review = parse_review(admission_review(pod()))
    assert mutating.review(review, broken_rules) == Verdict.allow(
        warnings=["argoml injection rules were not applied (internal error)"]
    )


def test_other_kinds_are_left_alone():
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {}}
    assert "patch" not in answer(config_map, rules=(WANDB_RULE,))
