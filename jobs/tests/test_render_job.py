"""`manage.py render_job FILE.yaml`: the dry-run preview of the Services and Pods of a job."""

from __future__ import annotations

import io
import json

import pytest
import yaml
from django.core.management import CommandError, call_command

import limits
from jobs.tests.cluster import job_manifest
from jobs.tests.fakes import peak_memory


def render(tmp_path, manifest: object, *args: str) -> list[dict]:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(manifest))
    output = io.StringIO()
    call_command("render_job", str(path), *args, stdout=output)
    return list(yaml.safe_load_all(output.getvalue()))


def test_it_prints_the_services_then_the_pods_the_operator_would_create(tmp_path):
    manifest = job_manifest("TFJob", {"Chief": 1, "PS": 2, "Worker": 4}, name="mnist", namespace="team-a")

    children = render(tmp_path, manifest, "--cluster-domain", "cluster.local")

    kinds = [child["kind"] for child in children]
    assert kinds == ["Service"] * 7 + ["Pod"] * 7
    assert children[0]["metadata"]["name"] == "mnist-chief-0"
    worker = children[-1]
    assert worker["metadata"]["name"] == "mnist-worker-3"
    env = {e["name"]: e["value"] for e in worker["spec"]["containers"][0]["env"]}
    config = json.loads(env["TF_CONFIG"])
    assert config["task"] == {"type": "worker", "index": 3}
    assert config["cluster"]["ps"] == [
        "mnist-ps-0.team-a.svc.cluster.local:2222",
        "mnist-ps-1.team-a.svc.cluster.local:2222",
    ]


@pytest.mark.parametrize(
    ("scheduler", "api_version", "mark"),
    [
        ("volcano", "scheduling.volcano.sh/v1beta1", ("annotations", "scheduling.k8s.io/group-name")),
        ("scheduler-plugins", "scheduling.x-k8s.io/v1alpha1", ("labels", "scheduling.x-k8s.io/pod-group")),
    ],
)
def test_with_a_gang_scheduler_the_pod_group_comes_first_and_the_pods_are_marked(
    tmp_path, scheduler, api_version, mark
):
    manifest = job_manifest("TFJob", {"Chief": 1, "Worker": 2}, name="mnist", namespace="team-a")

    children = render(tmp_path, manifest, "--gang-scheduler", scheduler)

    assert [child["kind"] for child in children] == ["PodGroup"] + ["Service"] * 3 + ["Pod"] * 3
    assert (children[0]["apiVersion"], children[0]["spec"]["minMember"]) == (api_version, 3)
    field, key = mark
    assert all(pod["metadata"][field][key] == "mnist" for pod in children[4:])
    plain = render(tmp_path, manifest, "--gang-scheduler", "none")
    assert [child["kind"] for child in plain] == ["Service"] * 3 + ["Pod"] * 3


def test_an_invalid_job_names_every_field_and_prints_nothing(tmp_path):
    manifest = job_manifest("MXJob", {"Scheduler": 2, "Worker": 1}, name="tune", namespace="team-a")
    manifest["spec"]["runPolicy"] = {"cleanPodPolicy": "Sometimes"}

    with pytest.raises(CommandError) as error:
        render(tmp_path, manifest)

    assert "spec.mxReplicaSpecs.Scheduler.replicas: a MXJob has exactly 1 Scheduler, not 2" in str(
        error.value
    )
    assert "spec.runPolicy.cleanPodPolicy: must be one of All, Running, None" in str(error.value)


def test_an_alias_bomb_ends_the_command_with_exit_code_2_naming_the_alias(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("a: &a [1, 1]\nb: &b [*a, *a]\nkind: TFJob\n")
    with pytest.raises(CommandError) as refused:
        call_command("render_job", str(path), stdout=io.StringIO())
    assert refused.value.returncode == 2
    assert str(refused.value) == (
        f"{path}: line 2: *a is an alias of a mapping or a sequence; such aliases (and << merge keys) are "
        "not accepted, write the values out (aliases of plain values are fine)"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [("kind: Notebook\n", "kind: kind 'Notebook' is not a training job kind"), ("a: [\n", "not valid YAML")],
)
def test_unusable_files_are_refused_with_the_reason(tmp_path, content, message):
    path = tmp_path / "job.yaml"
    path.write_text(content)
    with pytest.raises(CommandError, match=message):
        call_command("render_job", str(path), stdout=io.StringIO())


def test_a_workers_only_elastic_pytorchjob_gives_every_worker_the_rendezvous(tmp_path):
    manifest = job_manifest(
        "PyTorchJob",
        {"Worker": 2},
        name="elastic",
        namespace="team-a",
        elasticPolicy={
            "minReplicas": 1,
            "maxReplicas": 3,
            "rdzvId": "run-1",
            "rdzvConf": [{"key": "join_timeout", "value": "300"}],
            "maxRestarts": 3,
        },
    )

    children = render(tmp_path, manifest)

    assert [(c["kind"], c["metadata"]["name"]) for c in children] == [
        ("Service", "elastic-worker-0"),
        ("Service", "elastic-worker-1"),
        ("Pod", "elastic-worker-0"),
        ("Pod", "elastic-worker-1"),
    ]
    for pod in children[2:]:
        env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        assert {name: value for name, value in env.items() if name.startswith(("PET_", "PYTHON"))} == {
            "PYTHONUNBUFFERED": "1",
            "PET_NPROC_PER_NODE": "auto",
            "PET_RDZV_ENDPOINT": "elastic-worker-0:23456",
            "PET_RDZV_BACKEND": "c10d",
            "PET_NNODES": "1:3",
            "PET_MAX_RESTARTS": "3",
            "PET_RDZV_ID": "run-1",
            "PET_RDZV_CONF": "join_timeout=300",
        }
        assert "MASTER_ADDR" not in env


def test_an_elastic_job_with_metrics_gets_its_horizontal_pod_autoscaler_first(tmp_path):
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}
    manifest = job_manifest(
        "PyTorchJob",
        {"Worker": 2},
        name="elastic",
        namespace="team-a",
        elasticPolicy={"minReplicas": 1, "maxReplicas": 3, "metrics": [cpu]},
    )

    hpa, *children = render(tmp_path, manifest)

    assert (hpa["apiVersion"], hpa["kind"], hpa["metadata"]["name"]) == (
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "elastic",
    )
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "argoml.io/v1alpha1", "kind": "PyTorchJob", "name": "elastic"},
        "minReplicas": 1,
        "maxReplicas": 3,
        "metrics": [cpu],
    }
    assert [c["kind"] for c in children] == ["Service", "Service", "Pod", "Pod"]


def test_replicas_outside_the_elastic_bounds_are_named(tmp_path):
    manifest = job_manifest(
        "PyTorchJob", {"Worker": 5}, name="elastic", namespace="team-a", elasticPolicy={"maxReplicas": 4}
    )
    with pytest.raises(CommandError) as error:
        render(tmp_path, manifest)
    assert "spec.pytorchReplicaSpecs.Worker.replicas: 5 is outside the elastic policy's [4, 4]" in str(
        error.value
    )


def test_a_job_one_replica_past_the_bound_ends_with_exit_code_2_and_one_line_naming_the_field(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job_manifest("TFJob", {"Worker": 5}, name="big", namespace="team-a")))

    with limits.overridden(replicas_per_job=4), pytest.raises(CommandError) as refused:
        call_command("render_job", str(path), stdout=io.StringIO())

    assert refused.value.returncode == 2
    assert str(refused.value) == (
        f"{path}, document 1: spec.tfReplicaSpecs.Worker.replicas: "
        "must be at most 4 replicas (MAX_REPLICAS_PER_JOB), not 5"
    )


def test_a_job_at_the_bound_is_rendered(tmp_path):
    manifest = job_manifest("TFJob", {"Worker": 4}, name="big", namespace="team-a")
    with limits.overridden(replicas_per_job=4):
        children = render(tmp_path, manifest)
    assert [child["kind"] for child in children] == ["Service"] * 4 + ["Pod"] * 4


def test_the_default_bound_refuses_a_hundred_thousand_workers_cheaply(tmp_path):
    path = tmp_path / "job.yaml"
    manifest = job_manifest("TFJob", {"Worker": 100_000}, name="huge", namespace="team-a")
    path.write_text(yaml.safe_dump(manifest))

    with peak_memory() as peak, pytest.raises(CommandError) as refused:
        call_command("render_job", str(path), stdout=io.StringIO())

    assert refused.value.returncode == 2
    assert "spec.tfReplicaSpecs.Worker.replicas: must be at most 1000 replicas" in str(refused.value)
    assert peak.bytes < 2 * 2**20, f"{peak.mib:.1f} MiB"
