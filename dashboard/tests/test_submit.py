"""Submit: YAML checked with the webhook's rules (errors inline, with field paths), previewed with the
controllers' render logic, created in the cluster (kubesim) through the apps' actions."""

from __future__ import annotations

import copy

import pytest
import yaml
from django.urls import reverse

import limits
from access.models import NamespacePodSecurity
from dashboard.submission import Child
from dashboard.tests.factories import GRID_SPEC, job_spec
from jobs.tests.cluster import install_crds
from jobs.tests.fakes import peak_memory
from kube.client import reset_client

pytestmark = pytest.mark.django_db

URL = reverse("dashboard:submit")


def job_yaml(name: str = "mnist", namespace: str = "team-a", workers: int = 2) -> str:
    manifest = {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": job_spec(workers),
    }
    return yaml.safe_dump(manifest)


def sweep_yaml(name: str = "lr-sweep", **spec_changes) -> str:
    spec = {**copy.deepcopy(GRID_SPEC), **spec_changes}
    spec["hyperparams"] = [
        {"name": "lr", "values": [0.01, 0.1]},
        {"name": "optimizer", "values": ["adam", "sgd"]},
    ]
    manifest = {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "HyperparamWorkflow",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": spec,
    }
    return yaml.safe_dump(manifest)


@pytest.fixture
def cluster(kubesim_factory, settings):
    sim = kubesim_factory()
    settings.KUBECONFIG = str(sim.kubeconfig_path)
    settings.KUBE_IN_CLUSTER = False
    reset_client()
    install_crds(sim)
    sim.store.ensure_namespace("team-a")
    yield sim
    reset_client()


def test_the_form_starts_with_an_example(as_editor):
    assert b"kind: PyTorchJob" in as_editor.get(URL).content


def test_yaml_that_does_not_parse_is_refused_inline(as_editor):
    response = as_editor.post(URL, {"manifest": "kind: [TFJob", "action": "preview"})
    assert response.status_code == 422
    assert b"not valid YAML" in response.content
    assert b'role="alert"' in response.content


def test_a_sweep_alias_bomb_is_refused_before_it_is_expanded(as_editor, monkeypatch):
    """Issue 16: an 861-byte HyperparamWorkflow whose values were aliases of lists took 345 MB here."""
    monkeypatch.setattr("dashboard.submission.check", lambda *a, **k: pytest.fail("checked"))
    levels = ["x0: &x0 [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]"] + [
        f"x{n}: &x{n} [{', '.join([f'*x{n - 1}'] * 10)}]" for n in range(1, 8)
    ]
    bomb = "\n".join(
        [
            "apiVersion: argoml.io/v1alpha1",
            "kind: HyperparamWorkflow",
            "metadata: {name: bomb, namespace: team-a}",
            "spec:",
            *(f"  {line}" for line in levels),
            "  hyperparams: [{name: lr, values: *x7}]",
        ]
    )
    assert len(bomb) < 1000
    response = as_editor.post(URL, {"manifest": bomb, "action": "preview"})
    assert response.status_code == 422
    (problem,) = response.context["problems"]
    assert "*x0 is an alias of a mapping or a sequence" in problem.message


def test_an_unknown_kind_is_named(as_editor):
    response = as_editor.post(URL, {"manifest": "kind: Pod\nmetadata: {name: x}", "action": "preview"})
    assert b"must be one of" in response.content


def test_an_invalid_job_lists_every_problem_with_its_field(as_editor):
    broken = job_yaml(name="Not_A_Name", workers=-1)
    response = as_editor.post(URL, {"manifest": broken, "action": "preview"})
    assert response.status_code == 422
    problems = [str(p) for p in response.context["problems"]]
    assert any(p.startswith("metadata.name") for p in problems)
    assert any("replicas" in p for p in problems)
    assert b"Create TFJob" not in response.content


def test_a_namespace_the_user_may_not_write_is_refused(as_viewer):
    response = as_viewer.post(URL, {"manifest": job_yaml(), "action": "preview"})
    assert response.status_code == 403
    assert b"you may not create resources in namespace" in response.content


def test_access_is_refused_before_the_document_is_checked_or_previewed(as_outsider, monkeypatch):
    """Issue 16: a user with no grant must not make the server lint or expand a large document."""

    def must_not_run(*args, **kwargs):
        raise AssertionError("the document was checked before access was")

    monkeypatch.setattr("dashboard.submission.check", must_not_run)
    monkeypatch.setattr("dashboard.submission.preview", must_not_run)
    response = as_outsider.post(URL, {"manifest": sweep_yaml(), "action": "preview"})
    assert response.status_code == 403
    assert b"you may not create resources in namespace" in response.content


@pytest.mark.parametrize("source", ["../../team-b/workflows/payroll", "a/b", "Payroll", "x%2F.."])
def test_a_tensorboard_source_that_is_not_a_kubernetes_name_is_refused_before_any_read(as_editor, source):
    """Issue 16: spec.workflowRef.name went unchecked into the path the spawner reads the source from."""
    manifest = {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "Tensorboard",
        "metadata": {"name": "tb", "namespace": "team-a"},
        "spec": {"workflowRef": {"kind": "Workflow", "name": source}},
    }
    response = as_editor.post(URL, {"manifest": yaml.safe_dump(manifest), "action": "create"})
    assert response.status_code == 422
    (problem,) = response.context["problems"]
    assert problem.path == "spec.workflowRef.name"
    assert problem.message.startswith("a lowercase RFC 1123 subdomain must consist of")


def test_a_valid_job_is_previewed_as_the_pods_and_services_the_operator_makes(as_editor):
    response = as_editor.post(URL, {"manifest": job_yaml(workers=3), "action": "preview"})
    assert response.status_code == 200
    preview = response.context["preview"]
    assert [c.name for c in preview.children if c.kind == "Pod"] == [
        "mnist-worker-0", "mnist-worker-1", "mnist-worker-2"
    ]  # fmt: skip
    assert "TF_CONFIG" in preview.children[-1].detail
    assert b"Create TFJob mnist" in response.content


def test_a_valid_sweep_is_previewed_as_its_workflows(as_editor):
    response = as_editor.post(URL, {"manifest": sweep_yaml(), "action": "preview"})
    assert response.status_code == 200, response.context.get("problems")
    preview = response.context["preview"]
    assert preview.summary.startswith("4 trial(s) (grid)")
    assert preview.rendered[0]["kind"] == "Workflow"


def test_a_sweep_whose_metric_is_not_an_output_is_refused_with_the_sweep_rules(as_editor):
    response = as_editor.post(
        URL,
        {"manifest": sweep_yaml(objective={"metric": "accuracy", "goal": "maximize"}), "action": "preview"},
    )
    assert response.status_code == 422
    assert any("objective" in p.path for p in response.context["problems"])


def test_an_uploaded_file_is_read_instead_of_the_text_box(as_editor):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("job.yaml", job_yaml().encode(), content_type="text/yaml")
    response = as_editor.post(URL, {"manifest": "", "upload": upload, "action": "preview"})
    assert response.status_code == 200
    assert response.context["preview"].name == "mnist"


def test_create_submits_the_job_to_the_cluster_and_waits_for_the_mirror(as_editor, cluster):
    response = as_editor.post(URL, {"manifest": job_yaml(), "action": "create"})
    assert response.status_code == 302
    assert response["Location"] == reverse("dashboard:job-by-name", args=["team-a", "TFJob", "mnist"])
    assert (
        cluster.store.get("tfjobs.argoml.io", "mnist", "team-a")["spec"]["tfReplicaSpecs"]["Worker"][
            "replicas"
        ]
        == 2
    )


def test_creating_a_name_that_is_taken_says_so_on_the_name(as_editor, cluster):
    as_editor.post(URL, {"manifest": job_yaml(), "action": "create"})
    response = as_editor.post(URL, {"manifest": job_yaml(), "action": "create"})
    assert response.status_code == 422
    assert response.context["problems"][0].path == "metadata.name"


def test_create_submits_a_sweep(as_editor, cluster):
    response = as_editor.post(URL, {"manifest": sweep_yaml(), "action": "create"})
    assert response["Location"] == reverse("dashboard:sweep-by-name", args=["team-a", "lr-sweep"])
    assert cluster.store.get("hyperparamworkflows.argoml.io", "lr-sweep", "team-a")


def test_a_job_with_a_hostpath_volume_is_refused_naming_the_field(as_editor):
    manifest = yaml.safe_load(job_yaml())
    worker = next(iter(manifest["spec"]["tfReplicaSpecs"].values()))
    worker["template"]["spec"]["volumes"] = [{"name": "host", "hostPath": {"path": "/etc"}}]

    response = as_editor.post(URL, {"manifest": yaml.safe_dump(manifest), "action": "preview"})

    assert response.status_code == 422
    [problem] = response.context["problems"]
    assert problem.path.endswith(".template.spec.volumes[0].hostPath")
    assert problem.message == 'hostPath volumes (volume "host")'
    assert problem.path.encode() in response.content
    assert b"Create TFJob" not in response.content


def test_a_sweep_is_held_to_its_namespaces_level_and_service_accounts(as_editor):
    NamespacePodSecurity.objects.create(namespace="team-a", level="baseline", service_accounts="trainer")
    allowed = yaml.safe_load(sweep_yaml())
    allowed["spec"]["workflow"]["serviceAccountName"] = "trainer"
    assert as_editor.post(URL, {"manifest": yaml.safe_dump(allowed), "action": "preview"}).status_code == 200

    refused = copy.deepcopy(allowed)
    refused["spec"]["workflow"]["serviceAccountName"] = "builder"
    response = as_editor.post(URL, {"manifest": yaml.safe_dump(refused), "action": "preview"})
    assert response.status_code == 422
    assert [str(p) for p in response.context["problems"]] == [
        'spec.workflow.serviceAccountName: service account "builder" is not allowed in namespace "team-a" '
        "(allowed: default, trainer)"
    ]


def test_create_refuses_a_privileged_job_before_the_cluster_sees_it(as_editor, cluster):
    manifest = yaml.safe_load(job_yaml(name="escape"))
    worker = next(iter(manifest["spec"]["tfReplicaSpecs"].values()))
    worker["template"]["spec"]["hostNetwork"] = True
    response = as_editor.post(URL, {"manifest": yaml.safe_dump(manifest), "action": "create"})
    assert response.status_code == 422
    assert [p.message for p in response.context["problems"]] == ["host namespaces (hostNetwork=true)"]
    assert cluster.store.list("tfjobs.argoml.io", "team-a")["items"] == []


# -- the bounds on counts (issue 27): refused before any planning, previewed without every pod ---------------
def tf_yaml(name: str = "big", **counts: int) -> str:
    def replica(count: int) -> dict:
        container = {"name": "tensorflow", "image": "example.io/train:1"}
        return {"replicas": count, "template": {"spec": {"containers": [container]}}}

    manifest = {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"tfReplicaSpecs": {rt: replica(n) for rt, n in counts.items()}},
    }
    return yaml.safe_dump(manifest)


def test_a_job_one_replica_past_the_bound_is_refused_inline_naming_the_field(as_editor):
    with limits.overridden(replicas_per_job=4):
        at = as_editor.post(URL, {"manifest": tf_yaml(Chief=1, Worker=3), "action": "preview"})
        over = as_editor.post(URL, {"manifest": tf_yaml(Chief=1, Worker=4), "action": "preview"})

    assert at.status_code == 200, at.context["problems"]
    assert over.status_code == 422
    [problem] = over.context["problems"]
    assert str(problem) == (
        "spec.tfReplicaSpecs.Worker.replicas: "
        "must be at most 4 replicas (MAX_REPLICAS_PER_JOB), not 5 (Chief 1 + Worker 4)"
    )
    assert problem.path.encode() in over.content
    assert b"Create TFJob" not in over.content


def test_the_default_bound_refuses_a_hundred_thousand_workers_cheaply(as_editor):
    """What took the web process to 22 GB: now one field error, the request's memory a few MiB."""
    text = tf_yaml(Worker=100_000)
    with peak_memory() as peak:
        response = as_editor.post(URL, {"manifest": text, "action": "preview"})
    assert response.status_code == 422
    assert [p.path for p in response.context["problems"]] == ["spec.tfReplicaSpecs.Worker.replicas"]
    assert peak.bytes < 8 * 2**20, f"{peak.mib:.1f} MiB"


def test_a_job_at_the_default_bound_is_previewed_by_its_first_replicas_of_each_type(as_editor):
    """Every pod of it would be 1000 TF_CONFIGs of 1000 replicas each (30 MB before rendering)."""
    with peak_memory() as peak:
        response = as_editor.post(URL, {"manifest": tf_yaml(Chief=1, PS=99, Worker=900), "action": "preview"})

    assert response.status_code == 200
    preview = response.context["preview"]
    assert preview.summary == "1000 pod(s) and 1000 headless service(s)."
    listed = [
        "big-chief-0",
        *("big-ps-0", "big-ps-1", "big-ps-2", "big-ps-3 … big-ps-98"),
        *("big-worker-0", "big-worker-1", "big-worker-2", "big-worker-3 … big-worker-899"),
    ]
    assert [c.name for c in preview.children if c.kind == "Service"] == listed
    pods = [c for c in preview.children if c.kind == "Pod"]
    assert [c.name for c in pods] == listed
    assert "TF_CONFIG" in pods[0].detail
    assert pods[-1] == Child("Pod", listed[-1], "897 more, as big-worker-0 but for their index")
    assert [p["metadata"]["name"] for p in preview.rendered] == ["big-chief-0", "big-ps-0", "big-worker-0"]
    assert peak.bytes < 32 * 2**20, f"{peak.mib:.1f} MiB"
