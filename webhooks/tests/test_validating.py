"""The validating webhook: what it checks for each kind, how a denial reads, and what it lets through."""

from __future__ import annotations

import copy

import pytest

import limits
from access import podsecurity
from jobs.tests.fakes import peak_memory
from webhooks import validating
from webhooks.review import Verdict, parse_review
from webhooks.tests.conftest import (
    TRAIN_TEMPLATE,
    admission_review,
    argo_workflow,
    container,
    hyperparam_workflow,
    mpi_job,
    pytorch_job,
    tf_job,
)


@pytest.fixture(autouse=True)
def no_pod_security_policies():
    """These reviews need no database: every namespace has the default policy (baseline, `default`)."""
    podsecurity.reset_process_cache(load=dict, read_version=lambda: None)


def verdict(obj, **options) -> Verdict:
    return validating.review(parse_review(admission_review(obj, **options)))


def causes(result: Verdict) -> dict[str, str]:
    return {cause.path: cause.message for cause in result.causes}


# -- our job kinds --------------------------------------------------------------------------------------


def test_a_kubeflow_v1_job_is_checked_as_ours_is():
    job = {**tf_job(), "apiVersion": "kubeflow.org/v1"}
    assert verdict(job, group_version=("kubeflow.org", "v1")).allowed
    bad = tf_job(Wrokers={"replicas": 1})
    bad["apiVersion"] = "kubeflow.org/v1"
    refused = verdict(bad, group_version=("kubeflow.org", "v1"))
    assert not refused.allowed
    assert "spec.tfReplicaSpecs.Wrokers" in causes(refused)


@pytest.mark.parametrize("job", [tf_job(), pytorch_job(), mpi_job()])
def test_a_valid_job_is_allowed(job):
    assert verdict(job) == Verdict.allow()


def test_an_mpijob_with_an_unknown_mpi_implementation_is_denied_naming_the_field():
    result = verdict(mpi_job(mpiImplementation="OpenMP"))
    assert result.message == (
        "MPIJob \"pi\" is invalid: spec.mpiImplementation: must be one of OpenMPI, Intel, MPICH, not 'OpenMP'"
    )


def test_a_tfjob_without_a_tensorflow_container_is_denied_naming_the_field():
    job = tf_job(Worker={"replicas": 2, "template": {"spec": {"containers": [container("trainer")]}}})
    result = verdict(job)
    assert not result.allowed
    assert result.code == 422
    assert result.message == (
        'TFJob "mnist" is invalid: spec.tfReplicaSpecs.Worker.template.spec.containers: '
        "needs a container named 'tensorflow' to run the TFJob code"
    )
    assert list(causes(result)) == ["spec.tfReplicaSpecs.Worker.template.spec.containers"]


def test_a_pytorchjob_with_two_masters_is_denied():
    job = pytorch_job(Master={"replicas": 2, "template": {"spec": {"containers": [container("pytorch")]}}})
    assert "spec.pytorchReplicaSpecs.Master.replicas" in causes(verdict(job))


def test_a_name_too_long_for_child_pods_is_denied():
    job = tf_job(name="a" * 60)
    assert "child 'aaaa" in causes(verdict(job))["metadata.name"]


def test_every_problem_is_listed_as_the_apiserver_lists_them():
    job = tf_job(Worker={"replicas": -1, "restartPolicy": "Sometimes", "template": {"spec": {}}})
    job["spec"]["runPolicy"] = {"backoffLimit": -3}
    result = verdict(job)
    assert set(causes(result)) == {
        "spec.tfReplicaSpecs.Worker.replicas",
        "spec.tfReplicaSpecs.Worker.restartPolicy",
        "spec.tfReplicaSpecs.Worker.template.spec.containers",
        "spec.runPolicy.backoffLimit",
    }
    assert result.message.startswith('TFJob "mnist" is invalid: [spec.tfReplicaSpecs.Worker.replicas: ')
    assert result.message.endswith("]")


def test_a_job_of_a_kind_nobody_handles_is_left_alone():
    job = tf_job()
    review = admission_review(job)
    review["request"]["kind"]["kind"] = "CaffeJob"
    assert validating.review(parse_review(review)) == Verdict.allow()


# -- HyperparamWorkflow ---------------------------------------------------------------------------------


def test_a_valid_sweep_is_allowed():
    assert verdict(hyperparam_workflow()) == Verdict.allow()


def test_a_sweep_whose_workflow_calls_an_undefined_template_gets_argos_message():
    workflow = {
        "entrypoint": "main",
        "templates": [
            copy.deepcopy(TRAIN_TEMPLATE),
            {
                "name": "main",
                "inputs": {"parameters": [{"name": "lr"}, {"name": "batch-size"}]},
                "outputs": {"parameters": [{"name": "loss", "valueFrom": {"parameter": "x"}}]},
                "steps": [[{"name": "a", "template": "nope"}]],
            },
        ],
    }
    result = verdict(hyperparam_workflow(workflow=workflow))
    assert not result.allowed
    assert result.message == (
        'HyperparamWorkflow "mnist-sweep" is invalid: '
        "spec.workflow: templates.main.steps[0].a template name 'nope' undefined"
    )


def test_the_sweep_spec_itself_is_validated_with_its_field_paths():
    hpw = hyperparam_workflow()
    hpw["spec"]["hyperparams"].append({"name": "momentum", "values": [0.9]})
    hpw["spec"]["algorithm"] = {"name": "annealing"}
    assert {"spec.hyperparams[2].name", "spec.algorithm.name"} <= set(causes(verdict(hpw)))


def test_a_plain_grid_without_an_objective_is_allowed_and_tpe_without_one_is_denied_saying_why():
    hpw = hyperparam_workflow()
    hpw["spec"].pop("objective", None)
    hpw["spec"]["algorithm"] = "grid"
    assert verdict(hpw).allowed
    hpw["spec"].update(algorithm="tpe", maxTrials=10)
    assert "spec.objective" in causes(verdict(hpw))


def test_structural_errors_of_the_embedded_workflow_name_the_field_from_the_objects_root():
    hpw = hyperparam_workflow()
    hpw["spec"]["workflow"]["entrypoints"] = "train"
    result = verdict(hpw)
    assert causes(result) == {
        "spec.workflow.entrypoints": 'unknown field "spec.workflow.entrypoints" (did you mean "entrypoint"?)'
    }


def test_a_katib_users_parameters_are_pointed_to_hyperparams_in_the_message_and_its_cause():
    hpw = hyperparam_workflow()
    hpw["spec"]["parameters"] = hpw["spec"].pop("hyperparams")
    result = verdict(hpw)
    assert not result.allowed
    assert causes(result)["spec.parameters"].endswith('(did you mean "hyperparams"?)')
    assert "spec.parameters: unknown field; expected " in result.message
    assert '(did you mean "hyperparams"?)' in result.message


def test_every_unknown_field_of_a_job_gets_its_hint_at_once():
    job = tf_job()
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]
    worker["replica"] = worker.pop("replicas", 1)
    job["spec"]["runPolicy"] = {"cleanpodpolicy": "All"}
    found = causes(verdict(job))
    assert found["spec.tfReplicaSpecs.Worker.replica"] == 'unknown field (did you mean "replicas"?)'
    assert found["spec.runPolicy.cleanpodpolicy"] == 'unknown field (did you mean "cleanPodPolicy"?)'


def test_an_unknown_field_like_nothing_known_gets_no_hint():
    workflow = argo_workflow()
    workflow["spec"]["zzzqqq"] = 1
    assert causes(verdict(workflow))["spec.zzzqqq"] == 'unknown field "spec.zzzqqq"'


def test_swept_hyperparameters_count_as_supplied_to_the_entrypoint():
    hpw = hyperparam_workflow()
    assert not hpw["spec"]["workflow"].get("arguments")
    assert verdict(hpw).allowed


def test_a_sweep_calling_a_workflow_template_is_allowed_with_a_warning():
    hpw = hyperparam_workflow()
    hpw["spec"]["workflow"]["templates"].append(
        {"name": "prepare", "steps": [[{"name": "fetch", "templateRef": {"name": "lib", "template": "get"}}]]}
    )
    result = verdict(hpw)
    assert result.allowed
    assert result.warnings == (
        'spec.workflow.templates[1].steps[0][0].templateRef: WorkflowTemplate "lib" template "get" '
        "is not checked at admission",
    )


# -- Argo's kinds (in namespaces that opted in) -----------------------------------------------------


def test_a_valid_argo_workflow_is_allowed():
    assert verdict(argo_workflow()) == Verdict.allow()


def test_an_argo_workflow_is_linted_in_full():
    workflow = argo_workflow([{"name": "main", "steps": [[{"name": "a", "template": "missing"}]]}])
    workflow["spec"]["entrypoints"] = "main"
    result = verdict(workflow)
    assert result.code == 422
    assert causes(result) == {
        "spec.entrypoints": 'unknown field "spec.entrypoints" (did you mean "entrypoint"?)',
        "spec": "templates.main.steps[0].a template name 'missing' undefined",
    }
    assert result.message.startswith(
        'Workflow "hello-" is invalid: [unknown field "spec.entrypoints" (did you mean "entrypoint"?), '
    )


@pytest.mark.parametrize(
    ("kind", "reference", "warning"),
    [
        ("templateRef", {"name": "lib", "template": "hello"}, 'WorkflowTemplate "lib" template "hello"'),
        (
            "templateRef",
            {"name": "lib", "template": "hello", "clusterScope": True},
            'ClusterWorkflowTemplate "lib" template "hello"',
        ),
    ],
)
def test_template_refs_that_admission_cannot_resolve_warn_instead_of_deny(kind, reference, warning):
    workflow = argo_workflow([{"name": "main", "dag": {"tasks": [{"name": "t", kind: reference}]}}])
    result = verdict(workflow)
    assert result.allowed
    assert result.warnings == (
        f"spec.templates[0].dag.tasks[0].{kind}: {warning} is not checked at admission",
    )


def test_a_workflow_from_a_workflow_template_warns_that_it_was_not_followed():
    workflow = argo_workflow()
    workflow["spec"] = {"workflowTemplateRef": {"name": "nightly"}}
    result = verdict(workflow)
    assert result.allowed
    assert result.warnings == (
        'spec.workflowTemplateRef: WorkflowTemplate "nightly" is not checked at admission',
    )


def test_many_references_are_summed_up_instead_of_listed():
    steps = [[{"name": f"s{i}", "templateRef": {"name": f"lib{i}", "template": "t"}}] for i in range(8)]
    result = verdict(argo_workflow([{"name": "main", "steps": steps}]))
    assert len(result.warnings) == 6
    assert result.warnings[-1] == "3 more template references were not checked"


def test_a_workflow_template_and_a_cron_workflow_are_linted_too():
    template = argo_workflow()
    template.update(kind="WorkflowTemplate", metadata={"name": "Bad_Name", "namespace": "ml"})
    assert "metadata.name" in causes(verdict(template))
    cron = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "CronWorkflow",
        "metadata": {"name": "nightly", "namespace": "ml"},
        "spec": {"schedules": ["0 0 * * *"], "workflowSpec": {"entrypoint": "nope", "templates": []}},
    }
    assert not verdict(cron).allowed


# -- operations, updates and failures -------------------------------------------------------------


def test_a_delete_is_allowed_without_looking_at_the_object():
    broken = tf_job(Worker={"template": {}})
    assert verdict(None, operation="DELETE", old=broken) == Verdict.allow()


def test_an_update_that_changes_the_spec_is_validated():
    broken = tf_job(Worker={"template": {}})
    assert not verdict(broken, operation="UPDATE", old=tf_job()).allowed


def test_an_update_that_leaves_the_spec_alone_is_allowed_even_when_the_spec_is_invalid():
    broken = tf_job(Worker={"template": {}})
    labelled = copy.deepcopy(broken)
    labelled["metadata"]["labels"] = {"team": "vision"}
    assert verdict(labelled, operation="UPDATE", old=broken) == Verdict.allow()


def test_an_object_being_deleted_can_still_be_updated():
    broken = tf_job(Worker={"template": {}})
    finalizing = copy.deepcopy(broken)
    finalizing["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    finalizing["spec"]["runPolicy"] = {"cleanPodPolicy": "All"}
    assert verdict(finalizing, operation="UPDATE", old=broken).allowed


def test_a_status_update_is_allowed():
    broken = tf_job(Worker={"template": {}})
    assert verdict(broken, operation="UPDATE", old=tf_job(), subResource="status").allowed


def test_kinds_we_have_no_opinion_on_are_allowed():
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}
    assert verdict(config_map) == Verdict.allow()


def test_a_crash_in_a_check_denies_our_kinds_with_a_clear_message(monkeypatch):
    def explode(job, framework):
        raise KeyError("replicas")

    monkeypatch.setattr(validating, "validate_job", explode)
    result = verdict(tf_job())
    assert not result.allowed
    assert result.code == 500
    assert result.message == 'TFJob "mnist" could not be admitted: internal error while validating it'


def test_a_crash_in_the_linter_lets_argos_kinds_through_with_a_warning(monkeypatch):
    def explode(document):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(validating, "lint_argo_document", explode)
    result = verdict(argo_workflow())
    assert result.allowed
    assert result.warnings == (
        'argoml admitted Workflow "hello-" unchecked: internal error while validating it',
    )


# -- the bounds on counts ------------------------------------------------------------------------------


def workers(count: int) -> dict:
    return {"replicas": count, "template": {"spec": {"containers": [container()]}}}


def test_a_job_one_replica_past_the_bound_is_denied_naming_the_field_and_one_at_it_is_allowed():
    with limits.overridden(replicas_per_job=4):
        assert verdict(tf_job(Worker=workers(4))).allowed
        refused = verdict(tf_job(Worker=workers(5)))
    assert (refused.allowed, refused.code) == (False, 422)
    message = "must be at most 4 replicas (MAX_REPLICAS_PER_JOB), not 5"
    assert causes(refused) == {"spec.tfReplicaSpecs.Worker.replicas": message}
    assert refused.message == f'TFJob "mnist" is invalid: spec.tfReplicaSpecs.Worker.replicas: {message}'


def test_the_default_bound_denies_a_hundred_thousand_workers_cheaply():
    with peak_memory() as peak:
        refused = verdict(tf_job(Worker=workers(100_000)))
    assert list(causes(refused)) == ["spec.tfReplicaSpecs.Worker.replicas"]
    assert peak.bytes < 1024 * 1024, f"{peak.mib:.1f} MiB"
