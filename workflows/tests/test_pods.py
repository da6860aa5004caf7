"""The pods of an Argo WorkflowSpec, as the Pod Security check sees them, named by the fields written."""

from __future__ import annotations

from typing import Any

from podsecurity import BASELINE, RESTRICTED, check_views
from workflows.pods import workflow_pod_views

HARDENED = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def spec(*templates: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"entrypoint": "main", "templates": list(templates), **fields}


def paths(level: str, workflow: dict[str, Any], where: str = "spec") -> list[str]:
    return [v.path for v in check_views(level, workflow_pod_views(workflow, where))]


def test_every_container_of_a_template_is_checked_where_it_is_written() -> None:
    privileged = {"privileged": True}
    workflow = spec(
        {"name": "a", "container": {"image": "x", "securityContext": privileged}},
        {"name": "b", "script": {"image": "x", "source": "echo", "securityContext": privileged}},
        {"name": "c", "containerSet": {"containers": [{"name": "one", "securityContext": privileged}]}},
        {
            "name": "d",
            "container": {"image": "x"},
            "initContainers": [{"name": "init", "securityContext": privileged}],
            "sidecars": [{"name": "side", "securityContext": privileged}],
        },
        {"name": "e", "steps": [[{"name": "s", "template": "a"}]]},
    )
    assert paths(BASELINE, workflow, "spec.workflow") == [
        "spec.workflow.templates[0].container.securityContext.privileged",
        "spec.workflow.templates[1].script.securityContext.privileged",
        "spec.workflow.templates[2].containerSet.containers[0].securityContext.privileged",
        "spec.workflow.templates[3].initContainers[0].securityContext.privileged",
        "spec.workflow.templates[3].sidecars[0].securityContext.privileged",
    ]


def test_the_main_container_is_named_main_as_argo_names_it() -> None:
    workflow = spec({"name": "a", "container": {"image": "x", "securityContext": {"privileged": True}}})
    [violation] = check_views(BASELINE, workflow_pod_views(workflow))
    assert 'container "main"' in violation.message


def test_workflow_wide_fields_are_reported_once_however_many_templates_share_them() -> None:
    workflow = spec(
        {"name": "a", "container": {"image": "x"}},
        {"name": "b", "container": {"image": "x"}},
        hostNetwork=True,
        volumes=[{"name": "root", "hostPath": {"path": "/"}}],
        podMetadata={"annotations": {"container.apparmor.security.beta.kubernetes.io/main": "unconfined"}},
    )
    assert paths(BASELINE, workflow) == [
        "spec.hostNetwork",
        "spec.volumes[0].hostPath",
        "spec.podMetadata.annotations[container.apparmor.security.beta.kubernetes.io/main]",
    ]


def test_template_volumes_and_annotations_are_named_in_the_template() -> None:
    workflow = spec(
        {
            "name": "a",
            "container": {"image": "x"},
            "volumes": [{"name": "host", "hostPath": {"path": "/var"}}],
            "metadata": {
                "annotations": {"container.apparmor.security.beta.kubernetes.io/main": "unconfined"}
            },
        }
    )
    assert paths(BASELINE, workflow) == [
        "spec.templates[0].volumes[0].hostPath",
        "spec.templates[0].metadata.annotations[container.apparmor.security.beta.kubernetes.io/main]",
    ]


def test_a_template_security_context_replaces_the_workflows() -> None:
    hardened = {"name": "a", "container": {"image": "x", "securityContext": HARDENED}}
    workflow = spec(
        {**hardened, "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}},
        {**hardened, "name": "b"},
        securityContext={"runAsNonRoot": False},
    )
    assert paths(RESTRICTED, workflow) == [
        "spec.securityContext.runAsNonRoot",
        "spec.templates[1].container.securityContext.runAsNonRoot",
        "spec.templates[1].container.securityContext.seccompProfile.type",
    ]


def test_a_workflow_security_context_covers_every_template_that_has_none() -> None:
    workflow = spec(
        {"name": "a", "container": {"image": "x", "securityContext": HARDENED}},
        {"name": "b", "script": {"image": "x", "source": "true", "securityContext": HARDENED}},
        securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    )
    assert paths(RESTRICTED, workflow) == []


def test_pod_spec_patches_are_refused_wherever_they_are_written() -> None:
    workflow = spec(
        {"name": "a", "container": {"image": "x"}, "podSpecPatch": '{"hostPID": true}'},
        podSpecPatch="{}",
    )
    assert paths(BASELINE, workflow) == ["spec.podSpecPatch", "spec.templates[0].podSpecPatch"]


def test_template_defaults_are_checked_as_a_template() -> None:
    workflow = spec(
        {"name": "a", "container": {"image": "x"}},
        templateDefaults={"container": {"securityContext": {"privileged": True}}},
    )
    assert paths(BASELINE, workflow) == ["spec.templateDefaults.container.securityContext.privileged"]


def test_service_accounts_of_the_pod_and_the_executor_are_collected() -> None:
    workflow = spec(
        {
            "name": "a",
            "container": {"image": "x"},
            "serviceAccountName": "t",
            "executor": {"serviceAccountName": "e"},
        },
        serviceAccountName="w",
    )
    named = [account for view in workflow_pod_views(workflow) for account in view.service_accounts]
    assert named == [
        ("spec.serviceAccountName", "w"),
        ("spec.templates[0].serviceAccountName", "t"),
        ("spec.templates[0].executor.serviceAccountName", "e"),
    ]


def test_a_malformed_spec_has_only_the_empty_workflow_view() -> None:
    assert paths(RESTRICTED, "nonsense") == []  # type: ignore[arg-type]
    assert len(workflow_pod_views({"templates": [1, {"name": "x", "dag": {}}]})) == 1
