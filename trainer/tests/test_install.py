"""`install_runtimes` applies the ready-made ClusterTrainingRuntimes: created once, then unchanged, updated
when they drift, never taken from another installer unless asked; against kubesim as the cluster."""

from __future__ import annotations

import copy
import io

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from argoml_site.crds import TRAINER_RESOURCES
from kube.client import get_client, reset_client
from kube.crds.install import install as install_crds
from kube.crds.install import wait_established
from kubesim.testing import running_simulator
from trainer.runtimes import catalog
from trainer.runtimes.install import RUNTIMES, says_all_of

NAMES = ["deepspeed-distributed", "jax-distributed", "torch-distributed", "xgboost-distributed"]


# -- pure ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "desired", "same"),
    [
        ({"a": 1, "b": 2}, {"a": 1}, True),  # the server added b (a default)
        ({"a": 1}, {"a": 1, "b": 2}, False),  # we added b
        ({"a": [{"x": 1, "d": 0}]}, {"a": [{"x": 1}]}, True),  # a default inside a list item
        ({"a": [{"x": 1}]}, {"a": [{"x": 1}, {"x": 2}]}, False),  # we added an item
        ({"a": [{"x": 1}, {"x": 2}]}, {"a": [{"x": 1}]}, False),  # we removed one
        ({"a": "img:1"}, {"a": "img:2"}, False),
        ({"a": {"b": 1}}, {"a": "b"}, False),
        ({"a": 1}, {"a": 1.0}, True),
    ],
)
def test_a_runtime_is_unchanged_when_the_cluster_says_all_ours_does(current, desired, same):
    assert says_all_of(current, desired) is same


# -- against a cluster ---------------------------------------------------------------------------------------


@pytest.fixture
def cluster(settings):
    with running_simulator() as simulator:
        settings.KUBECONFIG = str(simulator.kubeconfig_path)
        settings.KUBE_IN_CLUSTER = False
        reset_client()
        client = get_client()
        install_crds(client, TRAINER_RESOURCES)
        assert wait_established(client, [r.name for r in TRAINER_RESOURCES], timeout=10) == []
        yield simulator
    reset_client()


def run(*args: str) -> list[str]:
    out = io.StringIO()
    call_command("install_runtimes", *args, stdout=out)
    return out.getvalue().splitlines()


def test_the_runtimes_are_created_then_unchanged(cluster):
    assert run() == [f"clustertrainingruntime/{name} created" for name in NAMES]
    assert run() == [f"clustertrainingruntime/{name} unchanged" for name in NAMES]
    stored = get_client().get(RUNTIMES, "torch-distributed")
    assert stored["metadata"]["labels"] == {
        "trainer.kubeflow.org/framework": "torch",
        "app.kubernetes.io/part-of": "argoml",
    }
    shipped = next(r for r in catalog.ready_made_runtimes() if r["metadata"]["name"] == "torch-distributed")
    assert says_all_of(stored["spec"], shipped["spec"])


def test_a_drifted_runtime_is_updated_and_keeps_its_finalizers_and_others_labels(cluster):
    run()
    client = get_client()
    drifted = client.get(RUNTIMES, "jax-distributed")
    drifted["spec"]["mlPolicy"]["numNodes"] = 7
    drifted["metadata"]["finalizers"] = ["trainer.kubeflow.org/resource-in-use"]
    drifted["metadata"]["labels"]["team"] = "vision"
    client.replace(RUNTIMES, drifted)

    assert "clustertrainingruntime/jax-distributed updated" in run()
    stored = client.get(RUNTIMES, "jax-distributed")
    assert stored["spec"]["mlPolicy"]["numNodes"] == 1
    assert stored["metadata"]["finalizers"] == ["trainer.kubeflow.org/resource-in-use"]
    assert stored["metadata"]["labels"]["team"] == "vision"


def test_a_runtime_another_installer_made_is_kept_unless_adopted(cluster):
    theirs = copy.deepcopy(catalog.ready_made_runtimes()[2])  # torch-distributed, as Kubeflow installs it
    theirs["spec"]["mlPolicy"]["numNodes"] = 4
    client = get_client()
    client.create(RUNTIMES, theirs)

    assert "clustertrainingruntime/torch-distributed kept: not installed by Argo-ML" in run()
    assert client.get(RUNTIMES, "torch-distributed")["spec"]["mlPolicy"]["numNodes"] == 4
    assert "clustertrainingruntime/torch-distributed updated" in run("--adopt")
    assert client.get(RUNTIMES, "torch-distributed")["spec"]["mlPolicy"]["numNodes"] == 1


def test_a_dry_run_prints_the_runtimes_and_what_would_happen_and_writes_nothing(cluster):
    out = io.StringIO()
    call_command("install_runtimes", "--dry-run", stdout=out)
    printed = out.getvalue()
    assert [doc["metadata"]["name"] for doc in yaml.safe_load_all(printed)] == NAMES
    assert printed.splitlines()[-4:] == [
        f"# clustertrainingruntime/{name} would be created" for name in NAMES
    ]
    assert get_client().list(RUNTIMES)["items"] == []


def test_without_the_crds_the_command_fails_naming_the_cause(settings):
    with running_simulator() as simulator:
        settings.KUBECONFIG = str(simulator.kubeconfig_path)
        settings.KUBE_IN_CLUSTER = False
        reset_client()
        try:
            with pytest.raises(CommandError, match=r"does not serve ClusterTrainingRuntimes .* --trainer"):
                run()
        finally:
            reset_client()
