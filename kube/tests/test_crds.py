"""Our CRDs are declared once in Python; deploy/crds/ is rendered from them and installs into a cluster."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from argoml_site.crds import CUSTOM_RESOURCES, by_kind
from hyperparam.crd import HYPERPARAM_WORKFLOW
from jobs.crd import PYTORCHJOB, TFJOB
from kube.client import get_client, reset_client
from kube.crds import render as crd_render
from kube.crds.definition import CustomResource, PrinterColumn, Scale
from kube.crds.install import CREATED, UNCHANGED, UPDATED, install, wait_established
from kube.crds.schema import obj, string, structural_problems
from kube.errors import Invalid
from kube.resources import CRD
from kubesim.testing import KUBECTL as KUBECTL_PATH
from kubesim.testing import running_simulator
from tensorboard.crd import TENSORBOARD

REPO = Path(__file__).resolve().parents[2]


# -- the declarations ------------------------------------------------------------------------------------


def test_every_kind_is_declared_with_its_short_name_in_group_argoml_io():
    assert {(r.kind, r.short_names) for r in CUSTOM_RESOURCES} == {
        ("TFJob", ("tfjob",)),
        ("MXJob", ("mxjob",)),
        ("PyTorchJob", ("pytorchjob",)),
        ("XGBoostJob", ("xgboostjob",)),
        ("JAXJob", ("jaxjob",)),
        ("PaddleJob", ("paddlejob",)),
        ("MPIJob", ("mpijob",)),
        ("HyperparamWorkflow", ("hpw",)),
        ("Tensorboard", ("tb",)),
    }
    for resource in CUSTOM_RESOURCES:
        names = resource.manifest()["spec"]
        assert (names["group"], names["versions"][0]["name"]) == ("argoml.io", "v1alpha1")
        assert "argoml" in names["names"]["categories"]


@pytest.mark.parametrize("resource", CUSTOM_RESOURCES, ids=lambda r: r.kind)
def test_every_schema_is_structural_and_the_status_is_a_subresource(resource):
    version = resource.manifest()["spec"]["versions"][0]
    assert structural_problems(version["schema"]["openAPIV3Schema"]) == []
    assert version["subresources"]["status"] == {}


def test_the_kinds_kubeflow_scales_have_its_scale_subresource_and_no_other_kind_has_one():
    """Kubeflow's paths (manifests/base/crds/kubeflow.org_{pytorch,jax,paddle}jobs.yaml), so an HPA or
    `kubectl scale` written for Kubeflow drives the Workers here too."""
    scaled = {
        resource.kind: resource.manifest()["spec"]["versions"][0]["subresources"].get("scale")
        for resource in CUSTOM_RESOURCES
    }
    for kind, spec_key in (
        ("PyTorchJob", "pytorchReplicaSpecs"),
        ("JAXJob", "jaxReplicaSpecs"),
        ("PaddleJob", "paddleReplicaSpecs"),
    ):
        assert scaled.pop(kind) == {
            "specReplicasPath": f".spec.{spec_key}.Worker.replicas",
            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
        }
    assert set(scaled.values()) == {None}


@pytest.mark.parametrize(
    ("paths", "problem"),
    [
        (("spec.replicas", ".status.replicas", ""), "specReplicasPath"),
        ((".status.x", ".status.replicas", ""), "under .spec"),
        ((".spec.r", ".status.a[0]", ""), "statusReplicasPath"),
        ((".spec.r", ".status.r", "status.selector"), "labelSelectorPath"),
    ],
)
def test_a_scale_with_a_path_the_apiserver_refuses_is_an_error_naming_the_field(paths, problem):
    with pytest.raises(ValueError, match=problem):
        Scale(*paths)


def test_printer_columns_show_state_for_jobs_trials_for_sweeps_and_url_for_tensorboards():
    def columns(resource: CustomResource) -> list[str]:
        return [
            column["name"]
            for column in resource.manifest()["spec"]["versions"][0]["additionalPrinterColumns"]
        ]

    assert columns(TFJOB) == ["State", "Replicas", "Age"]
    assert columns(HYPERPARAM_WORKFLOW) == ["Phase", "Trials", "Best", "Message", "Age"]
    assert columns(TENSORBOARD) == ["Phase", "URL", "Age"]


def test_pod_templates_and_argo_specs_are_kept_as_written_but_our_own_fields_are_typed():
    spec = TFJOB.spec["properties"]
    replica = spec["tfReplicaSpecs"]["additionalProperties"]["properties"]
    assert replica["template"]["x-kubernetes-preserve-unknown-fields"] is True
    assert replica["restartPolicy"]["enum"] == ["Always", "OnFailure", "Never", "ExitCode"]
    assert spec["runPolicy"]["properties"]["cleanPodPolicy"]["enum"] == ["All", "Running", "None"]
    hpw = HYPERPARAM_WORKFLOW.spec["properties"]
    assert hpw["workflow"]["x-kubernetes-preserve-unknown-fields"] is True
    assert hpw["objective"]["properties"]["goal"]["enum"] == ["minimize", "maximize"]


def test_a_schema_node_without_a_type_is_reported_with_its_path():
    schema = obj({"spec": obj({"replicas": {"minimum": 0}, "name": string()})})
    assert structural_problems(schema) == ["spec.replicas: no type"]


def test_a_declaration_with_a_non_structural_schema_is_refused():
    with pytest.raises(ValueError, match=r"Broken: the schema is not structural: spec\.x: no type"):
        CustomResource("Broken", "brokens", ("br",), "", obj({"x": {}}), obj({}), ())


def test_a_printer_column_of_an_unknown_type_is_refused():
    with pytest.raises(ValueError, match="column 'Size': type must be one of"):
        PrinterColumn("Size", "bytes", ".status.size")


def test_a_kind_is_found_by_name_and_an_unknown_one_is_named_in_the_error():
    assert by_kind("Tensorboard") is TENSORBOARD
    with pytest.raises(LookupError, match="'CaffeJob' is not one of our kinds"):
        by_kind("CaffeJob")


# -- deploy/crds/ ----------------------------------------------------------------------------------------


def test_the_yaml_in_deploy_crds_is_rendered_from_the_current_declarations():
    problems = crd_render.stale(REPO / "deploy" / "crds", CUSTOM_RESOURCES)
    assert problems == [], "deploy/crds/ is stale: run `manage.py render_crds` and commit the result"


def test_a_changed_declaration_makes_the_rendered_yaml_stale(tmp_path):
    crd_render.write(tmp_path, CUSTOM_RESOURCES)
    changed = CustomResource(
        TFJOB.kind, TFJOB.plural, ("tf",), TFJOB.description, TFJOB.spec, TFJOB.status, TFJOB.columns
    )
    assert crd_render.stale(tmp_path, [changed, *CUSTOM_RESOURCES[1:]]) == [
        "tfjobs.argoml.io.yaml: differs from its declaration"
    ]


def test_missing_files_and_files_of_undeclared_kinds_are_stale_and_render_fixes_both(tmp_path):
    crd_render.write(tmp_path, CUSTOM_RESOURCES)
    (tmp_path / "tfjobs.argoml.io.yaml").unlink()
    (tmp_path / "oldjobs.argoml.io.yaml").write_text("kind: CustomResourceDefinition\n")
    (tmp_path / "README.txt").write_text("not ours")
    assert crd_render.stale(tmp_path, CUSTOM_RESOURCES) == [
        "tfjobs.argoml.io.yaml: missing",
        "oldjobs.argoml.io.yaml: no such kind is declared",
    ]
    assert crd_render.write(tmp_path, CUSTOM_RESOURCES) == ["tfjobs.argoml.io.yaml", "oldjobs.argoml.io.yaml"]
    assert crd_render.stale(tmp_path, CUSTOM_RESOURCES) == []
    assert (tmp_path / "README.txt").exists()


def test_render_crds_check_fails_on_a_stale_directory_and_passes_after_rendering(tmp_path):
    with pytest.raises(CommandError, match=r"tfjobs\.argoml\.io\.yaml: missing"):
        call_command("render_crds", "--check", "--output", str(tmp_path))
    call_command("render_crds", "--output", str(tmp_path), stdout=open(os.devnull, "w"))  # noqa: SIM115
    call_command("render_crds", "--check", "--output", str(tmp_path), stdout=open(os.devnull, "w"))  # noqa: SIM115


# -- a cluster (kubesim over HTTP) -----------------------------------------------------------------------


@pytest.fixture
def cluster(settings):
    """A simulator as the configured cluster: `get_client()` and `kubectl` both talk to it."""
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


TFJOB_YAML = """
apiVersion: argoml.io/v1alpha1
kind: TFJob
metadata: {name: mnist, namespace: default}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: ExitCode
      template: {spec: {containers: [{name: tensorflow, image: tf:2.15, args: [--epochs, "3"]}]}}
"""


def test_install_crds_creates_them_then_changes_nothing_and_kubectl_serves_every_kind(cluster, capsys):
    call_command("install_crds", "--wait", "10")
    assert capsys.readouterr().out.splitlines() == [
        *(f"{resource.name} created" for resource in CUSTOM_RESOURCES),
        "all established",
    ]
    call_command("install_crds")
    assert capsys.readouterr().out.splitlines() == [
        f"{resource.name} unchanged" for resource in CUSTOM_RESOURCES
    ]

    assert "tfjob.argoml.io/mnist created" in kubectl(cluster, "apply", "-f", "-", stdin=TFJOB_YAML)
    table = kubectl(cluster, "get", "tfjob", "mnist")
    assert table.split("\n")[0].split() == ["NAME", "STATE", "REPLICAS", "AGE"]
    assert "tfjob.argoml.io/mnist" in kubectl(cluster, "get", "argoml")
    for short_name in ("hpw", "tb", "mxjob", "pytorchjob"):
        kubectl(cluster, "get", short_name)


def test_install_crds_with_kubeflow_serves_the_training_kinds_as_kubeflow_org_v1_too(cluster, capsys):
    call_command("install_crds", "--kubeflow", "--wait", "10")
    installed = capsys.readouterr().out.splitlines()
    assert installed[-8:] == [
        "tfjobs.kubeflow.org created",
        "mxjobs.kubeflow.org created",
        "pytorchjobs.kubeflow.org created",
        "xgboostjobs.kubeflow.org created",
        "jaxjobs.kubeflow.org created",
        "paddlejobs.kubeflow.org created",
        "mpijobs.kubeflow.org created",
        "all established",
    ]
    kubeflow_yaml = TFJOB_YAML.replace("argoml.io/v1alpha1", "kubeflow.org/v1")
    assert "tfjob.kubeflow.org/mnist created" in kubectl(cluster, "apply", "-f", "-", stdin=kubeflow_yaml)
    assert "tfjob.argoml.io/mnist created" in kubectl(cluster, "apply", "-f", "-", stdin=TFJOB_YAML)
    assert "mnist" in kubectl(cluster, "get", "tfjobs.kubeflow.org", "mnist")


def test_kubeflows_mpijob_example_with_its_older_clean_pod_policy_field_applies_unchanged(cluster, capsys):
    """Kubeflow v1.9.4's examples/mpi/tensorflow-mnist-elastic.yaml writes `spec.cleanPodPolicy`, which its
    MPIJob declares beside `runPolicy`; kubectl's strict field validation refused it (issue 32)."""
    call_command("install_crds", "--kubeflow", "--wait", "10")
    manifest = (REPO / "jobs" / "tests" / "kubeflow" / "tensorflow-mnist-elastic.yaml").read_text()
    assert "mpijob.kubeflow.org/tensorflow-mnist-elastic created" in kubectl(
        cluster, "apply", "-f", "-", stdin=manifest
    )
    stored = json.loads(
        kubectl(cluster, "get", "mpijobs.kubeflow.org", "tensorflow-mnist-elastic", "-o", "json")
    )
    assert stored["spec"]["cleanPodPolicy"] == "Running"


def test_with_both_groups_kubectl_finds_each_groups_jobs_by_name_and_both_by_category(cluster, capsys):
    """`pytorchjobs` is ours and says nothing of Kubeflow's; so Kubeflow's group has its own short names
    (`kfpytorchjob`) and `kubectl get training` lists both groups' jobs (docs/kubeflow.md, "kubectl")."""
    call_command("install_crds", "--kubeflow", "--wait", "10")
    kubectl(cluster, "apply", "-f", "-", stdin=TFJOB_YAML.replace("name: mnist", "name: ours"))
    theirs = TFJOB_YAML.replace("argoml.io/v1alpha1", "kubeflow.org/v1")
    kubectl(cluster, "apply", "-f", "-", stdin=theirs.replace("name: mnist", "name: theirs"))
    for ours in ("tfjob", "tfjobs", "tfjobs.argoml.io"):
        assert kubectl(cluster, "get", ours, "-o", "name").split() == ["tfjob.argoml.io/ours"], ours
    for kubeflows in ("kftfjob", "tfjobs.kubeflow.org"):
        assert kubectl(cluster, "get", kubeflows, "-o", "name").split() == ["tfjob.kubeflow.org/theirs"]
    both = kubectl(cluster, "get", "training", "-o", "name").split()
    assert both == ["tfjob.argoml.io/ours", "tfjob.kubeflow.org/theirs"]
    assert kubectl(cluster, "get", "kubeflow", "-o", "name").split() == ["tfjob.kubeflow.org/theirs"]
    resources = kubectl(cluster, "api-resources", "--api-group=kubeflow.org", "-o", "wide")
    assert "kfpytorchjob" in resources
    assert "training" in resources


def test_render_crds_writes_kubeflows_group_into_its_own_folder(tmp_path):
    call_command("render_crds", "--output", str(tmp_path), stdout=open(os.devnull, "w"))  # noqa: SIM115
    assert sorted(path.name for path in (tmp_path / "kubeflow").iterdir()) == [
        "jaxjobs.kubeflow.org.yaml",
        "mpijobs.kubeflow.org.yaml",
        "mxjobs.kubeflow.org.yaml",
        "paddlejobs.kubeflow.org.yaml",
        "pytorchjobs.kubeflow.org.yaml",
        "tfjobs.kubeflow.org.yaml",
        "xgboostjobs.kubeflow.org.yaml",
    ]
    assert not list(tmp_path.glob("*.kubeflow.org.yaml"))


def test_the_cluster_validates_our_fields_keeps_pod_templates_and_serves_status(cluster):
    client = get_client()
    install(client, CUSTOM_RESOURCES)
    job = {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "mnist", "namespace": "default"},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {
                    "replicas": 2,
                    "template": {"spec": {"containers": [{"name": "tensorflow", "x": 1}]}},
                }
            }
        },
    }
    created = client.create(TFJOB.resource_type, job)
    assert created["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["x"] == 1

    status = {"conditions": [{"type": "Running", "status": "True", "reason": "PodsRunning", "message": ""}]}
    patched = client.patch_status(TFJOB.resource_type, "mnist", status, "default")
    assert patched["status"]["conditions"][0]["type"] == "Running"
    assert kubectl(cluster, "get", "tfjob", "mnist", "-o", "name").strip() == "tfjob.argoml.io/mnist"

    bad = copy.deepcopy(job)
    bad["metadata"]["name"] = "bad"
    bad["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
    with pytest.raises(Invalid) as error:
        client.create(TFJOB.resource_type, bad)
    assert any("restartPolicy" in cause.get("field", "") for cause in error.value.causes)


def test_the_cluster_keeps_a_pytorchjobs_elastic_policy_and_refuses_a_bad_port(cluster):
    client = get_client()
    install(client, [PYTORCHJOB])
    policy = {
        "minReplicas": 1,
        "maxReplicas": 4,
        "rdzvBackend": "c10d",
        "rdzvId": "run-1",
        "rdzvConf": [{"key": "join_timeout", "value": "300"}],
        "maxRestarts": 3,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}],
    }
    job = {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "PyTorchJob",
        "metadata": {"name": "elastic", "namespace": "default"},
        "spec": {
            "elasticPolicy": policy,
            "pytorchReplicaSpecs": {
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "pytorch"}]}}}
            },
        },
    }
    assert client.create(PYTORCHJOB.resource_type, job)["spec"]["elasticPolicy"] == policy

    bad = copy.deepcopy(job)
    bad["metadata"]["name"] = "bad"
    bad["spec"]["elasticPolicy"]["rdzvPort"] = 70000
    with pytest.raises(Invalid) as error:
        client.create(PYTORCHJOB.resource_type, bad)
    assert any("rdzvPort" in cause.get("field", "") for cause in error.value.causes)


def test_kubectl_shows_the_latest_condition_as_the_jobs_state(cluster):
    client = get_client()
    install(client, [TFJOB])
    kubectl(cluster, "apply", "-f", "-", stdin=TFJOB_YAML)
    conditions = [
        {"type": "Created", "status": "True", "reason": "JobCreated", "message": ""},
        {"type": "Running", "status": "True", "reason": "PodsRunning", "message": ""},
    ]
    client.patch_status(TFJOB.resource_type, "mnist", {"conditions": conditions}, "default")
    assert kubectl(cluster, "get", "tfjob", "mnist").split("\n")[1].split()[:2] == ["mnist", "Running"]


def test_install_updates_a_crd_that_drifted_from_its_declaration(cluster):
    client = get_client()
    install(client, CUSTOM_RESOURCES)
    drifted = client.get(CRD, TFJOB.name)
    drifted["spec"]["versions"][0]["additionalPrinterColumns"] = []
    client.replace(CRD, drifted)

    outcomes = dict(install(client, CUSTOM_RESOURCES))
    assert outcomes[TFJOB.name] == UPDATED
    assert {outcome for name, outcome in outcomes.items() if name != TFJOB.name} == {UNCHANGED}
    columns = client.get(CRD, TFJOB.name)["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [column["name"] for column in columns] == ["State", "Replicas", "Age"]
    assert wait_established(client, [TFJOB.name], timeout=5) == []


def test_install_reports_created_for_a_crd_that_is_missing(cluster):
    client = get_client()
    install(client, CUSTOM_RESOURCES)
    client.delete(CRD, TENSORBOARD.name)
    assert dict(install(client, CUSTOM_RESOURCES))[TENSORBOARD.name] == CREATED
