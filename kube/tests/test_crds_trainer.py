"""Kubeflow Trainer v2's kinds are declared with upstream's names and schema, rendered into
deploy/crds/trainer/, and served by a cluster as Trainer's CRDs serve them."""

from __future__ import annotations

import copy
import dataclasses
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from argoml_site.crds import TRAINER_RESOURCES
from kube.client import get_client, reset_client
from kube.crds import render as crd_render
from kube.crds.definition import Scale
from kube.crds.install import install, wait_established
from kube.crds.schema import structural_problems
from kube.errors import Invalid
from kubesim.testing import KUBECTL as KUBECTL_PATH
from kubesim.testing import running_simulator
from trainer.crd import TRAIN_JOB
from trainer.runtimes.catalog import ready_made_runtimes
from trainer.runtimes.crd import CLUSTER_TRAINING_RUNTIME, TRAINING_RUNTIME

REPO = Path(__file__).resolve().parents[2]


def test_the_three_kinds_have_trainers_names_scopes_and_no_short_names_or_categories():
    names = {
        (r.kind, r.plural, r.scope, r.api_version, r.short_names, r.categories) for r in TRAINER_RESOURCES
    }
    assert names == {
        ("TrainJob", "trainjobs", "Namespaced", "trainer.kubeflow.org/v1alpha1", (), ()),
        ("TrainingRuntime", "trainingruntimes", "Namespaced", "trainer.kubeflow.org/v1alpha1", (), ()),
        (
            "ClusterTrainingRuntime",
            "clustertrainingruntimes",
            "Cluster",
            "trainer.kubeflow.org/v1alpha1",
            (),
            (),
        ),
    }
    assert CLUSTER_TRAINING_RUNTIME.resource_type.namespaced is False
    assert TRAINING_RUNTIME.resource_type.namespaced is True


@pytest.mark.parametrize("resource", TRAINER_RESOURCES, ids=lambda r: r.kind)
def test_every_schema_is_structural(resource):
    version = resource.manifest()["spec"]["versions"][0]
    assert structural_problems(version["schema"]["openAPIV3Schema"]) == []


def test_a_declaration_with_an_unknown_scope_or_a_scale_without_status_is_refused():
    with pytest.raises(ValueError, match="scope must be Namespaced or Cluster, not 'Global'"):
        dataclasses.replace(TRAINING_RUNTIME, scope="Global")
    scale = Scale(".spec.replicas", ".status.replicas")
    with pytest.raises(ValueError, match="the scale subresource needs a status"):
        dataclasses.replace(TRAINING_RUNTIME, scale=scale)


def test_only_the_trainjob_has_a_status_subresource():
    versions = {r.kind: r.manifest()["spec"]["versions"][0] for r in TRAINER_RESOURCES}
    assert versions["TrainJob"]["subresources"] == {"status": {}}
    assert "subresources" not in versions["TrainingRuntime"]
    assert "status" not in versions["ClusterTrainingRuntime"]["schema"]["openAPIV3Schema"]["properties"]


def test_the_trainjob_columns_show_state_progress_runtime_and_age():
    columns = [(c.name, c.json_path) for c in TRAIN_JOB.columns]
    assert columns == [
        ("State", '.status.conditions[?(@.status=="True")].type'),
        ("Progress", ".status.trainerStatus.progressPercentage"),
        ("Runtime", ".spec.runtimeRef.name"),
        ("Age", ".metadata.creationTimestamp"),
    ]


def test_upstreams_immutability_and_managed_by_rules_are_declared_for_a_real_apiserver():
    spec = TRAIN_JOB.spec["properties"]
    for field in ("runtimeRef", "initializer", "trainer", "activeDeadlineSeconds", "managedBy"):
        rules = [rule["rule"] for rule in spec[field]["x-kubernetes-validations"]]
        assert "self == oldSelf" in rules, field
    assert spec["managedBy"]["x-kubernetes-validations"][0]["rule"] == (
        "self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']"
    )


def test_the_yaml_in_deploy_crds_trainer_is_rendered_from_the_current_declarations():
    problems = crd_render.stale(REPO / "deploy" / "crds" / "trainer", TRAINER_RESOURCES)
    assert problems == [], "deploy/crds/trainer/ is stale: run `manage.py render_crds` and commit the result"


def test_render_crds_writes_trainers_group_into_its_own_folder(tmp_path):
    call_command("render_crds", "--output", str(tmp_path), stdout=open(os.devnull, "w"))  # noqa: SIM115
    assert sorted(path.name for path in (tmp_path / "trainer").iterdir()) == [
        "clustertrainingruntimes.trainer.kubeflow.org.yaml",
        "trainingruntimes.trainer.kubeflow.org.yaml",
        "trainjobs.trainer.kubeflow.org.yaml",
    ]
    assert not list(tmp_path.glob("*.trainer.kubeflow.org.yaml"))


# -- a cluster (kubesim over HTTP) -----------------------------------------------------------------------


@pytest.fixture
def cluster(settings):
    with running_simulator() as simulator:
        settings.KUBECONFIG = str(simulator.kubeconfig_path)
        settings.KUBE_IN_CLUSTER = False
        reset_client()
        yield simulator
    reset_client()


def kubectl(simulator, *args: str, stdin: str | None = None) -> str:
    env = {**os.environ, "KUBECONFIG": str(simulator.kubeconfig_path)}
    done = subprocess.run(
        [str(KUBECTL_PATH), *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


TRAIN_JOB_MANIFEST: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "mnist", "namespace": "default"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {
            "numNodes": 2,
            "resourcesPerNode": {"limits": {"cpu": 2, "nvidia.com/gpu": "1"}},
            "env": [{"name": "EPOCHS", "value": "3"}],
        },
    },
}


def test_install_crds_with_trainer_serves_the_three_kinds(cluster, capsys):
    call_command("install_crds", "--trainer", "--wait", "10")
    assert capsys.readouterr().out.splitlines()[-4:] == [
        "trainjobs.trainer.kubeflow.org created",
        "trainingruntimes.trainer.kubeflow.org created",
        "clustertrainingruntimes.trainer.kubeflow.org created",
        "all established",
    ]


def test_the_cluster_defaults_a_trainjob_as_trainer_does_and_kubectl_shows_its_columns(cluster):
    client = get_client()
    install(client, TRAINER_RESOURCES)
    assert wait_established(client, [r.name for r in TRAINER_RESOURCES], timeout=10) == []
    for runtime in ready_made_runtimes():
        client.create(CLUSTER_TRAINING_RUNTIME.resource_type, runtime)

    created = client.create(TRAIN_JOB.resource_type, copy.deepcopy(TRAIN_JOB_MANIFEST))
    assert created["spec"]["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    assert created["spec"]["suspend"] is False
    assert created["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"
    assert created["spec"]["trainer"]["resourcesPerNode"] == {"limits": {"cpu": 2, "nvidia.com/gpu": "1"}}

    status = {
        "conditions": [
            {
                "type": "Suspended",
                "status": "False",
                "reason": "Resumed",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
            {
                "type": "Complete",
                "status": "True",
                "reason": "JobsCompleted",
                "message": "done",
                "lastTransitionTime": "2026-01-01T00:10:00Z",
            },
        ],
        "trainerStatus": {"progressPercentage": 40, "lastUpdatedTime": "2026-01-01T00:05:00Z"},
    }
    client.patch_status(TRAIN_JOB.resource_type, "mnist", status, "default")
    header, row = kubectl(cluster, "get", "trainjobs").splitlines()[:2]
    assert header.split() == ["NAME", "STATE", "PROGRESS", "RUNTIME", "AGE"]
    assert row.split()[:4] == ["mnist", "Complete", "40", "torch-distributed"]

    listed = kubectl(cluster, "get", "clustertrainingruntimes", "-o", "name").split()
    assert sorted(listed) == [
        "clustertrainingruntime.trainer.kubeflow.org/deepspeed-distributed",
        "clustertrainingruntime.trainer.kubeflow.org/jax-distributed",
        "clustertrainingruntime.trainer.kubeflow.org/torch-distributed",
        "clustertrainingruntime.trainer.kubeflow.org/xgboost-distributed",
    ]


def test_the_cluster_keeps_runtime_templates_as_written_and_defaults_replicated_jobs(cluster):
    client = get_client()
    install(client, TRAINER_RESOURCES)
    runtime = next(r for r in ready_made_runtimes() if r["metadata"]["name"] == "deepspeed-distributed")
    runtime = {
        **runtime,
        "kind": "TrainingRuntime",
        "metadata": {**runtime["metadata"], "namespace": "default"},
    }
    created = client.create(TRAINING_RUNTIME.resource_type, copy.deepcopy(runtime))
    jobs = created["spec"]["template"]["spec"]["replicatedJobs"]
    assert [job["template"] for job in jobs] == [
        job["template"] for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]
    ]
    assert {(job["replicas"], job["groupName"]) for job in jobs} == {(1, "default")}
    assert created["spec"]["mlPolicy"]["mpi"]["sshAuthMountPath"] == "/home/mpiuser/.ssh"


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (
            ("trainerStatus",),
            {"progressPercentage": 101, "lastUpdatedTime": "2026-01-01T00:00:00Z"},
            "progress",
        ),
        (("jobsStatus",), [{"name": "node", "ready": 1}], "succeeded"),
        (("conditions",), [{"type": "Complete", "status": "Yes"}], "status"),
    ],
)
def test_the_cluster_refuses_a_status_trainers_schema_refuses(cluster, path, value, field):
    client = get_client()
    install(client, [TRAIN_JOB])
    client.create(TRAIN_JOB.resource_type, copy.deepcopy(TRAIN_JOB_MANIFEST))
    with pytest.raises(Invalid) as error:
        client.patch_status(TRAIN_JOB.resource_type, "mnist", {path[0]: value}, "default")
    assert any(field in cause.get("field", "") for cause in error.value.causes), error.value.causes


def test_the_cluster_refuses_a_trainjob_without_a_runtime_name(cluster):
    client = get_client()
    install(client, [TRAIN_JOB])
    bad = copy.deepcopy(TRAIN_JOB_MANIFEST)
    bad["spec"]["runtimeRef"] = {"kind": "TrainingRuntime"}
    with pytest.raises(Invalid) as error:
        client.create(TRAIN_JOB.resource_type, bad)
    assert any("spec.runtimeRef.name" in cause.get("field", "") for cause in error.value.causes)


def test_the_crds_names_and_values_agree_with_trainers_constants():
    from trainer import constants
    from trainer import crd as declared

    assert declared.TRAINER_GROUP == constants.GROUP
    assert f"{declared.TRAINER_GROUP}/{declared.TRAINER_VERSION}" == constants.API_VERSION
    assert declared.MANAGED_BY_VALUES == constants.MANAGED_BY_VALUES
    assert declared.DEFAULT_RUNTIME_KIND == constants.CLUSTER_TRAINING_RUNTIME
    assert {r.kind for r in TRAINER_RESOURCES} == {constants.TRAIN_JOB_KIND, *constants.RUNTIME_KINDS}
