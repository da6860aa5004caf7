"""submit_workflow: the one write path creates the Workflow, and tells a refusal from an absent cluster."""

from typing import Any

import pytest

from kube.client import reset_client
from kubesim.simulator import Simulator
from pipelines.actions import SubmissionFailed, submit_workflow
from pipelines.documents import transpile_documents
from pipelines.tests.conftest import NAMESPACE
from workflows.tests.pipeline_examples import one_task_pipeline

# submit_workflow reads the namespace's pod security first.
pytestmark = pytest.mark.django_db


@pytest.fixture
def workflow() -> dict[str, Any]:
    return transpile_documents(one_task_pipeline(), {"docker_image": "churn:1"}).workflow


def test_the_workflow_is_created_with_a_generated_name(cluster: Simulator, workflow: dict[str, Any]) -> None:
    created = submit_workflow(workflow, NAMESPACE)
    name = created["metadata"]["name"]
    assert name.startswith("pipeline-")
    assert cluster.store.get("workflows.argoproj.io", name, NAMESPACE)["spec"] == workflow["spec"]


def test_a_missing_namespace_is_a_refusal(cluster: Simulator, workflow: dict[str, Any]) -> None:
    with pytest.raises(SubmissionFailed) as caught:
        submit_workflow(workflow, "nowhere")
    assert caught.value.refused
    assert str(caught.value).startswith("submitting to namespace nowhere failed: ")


def test_no_configured_cluster_is_not_a_refusal(settings: Any, workflow: dict[str, Any]) -> None:
    settings.KUBECONFIG, settings.KUBE_IN_CLUSTER = "", False
    reset_client()
    with pytest.raises(SubmissionFailed) as caught:
        submit_workflow(workflow, NAMESPACE)
    assert not caught.value.refused
    assert "No cluster is configured" in caught.value.reason
