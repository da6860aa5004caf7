"""The Tensorboard reconcile against the simulator: children created and converged, status and events."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from django.utils import timezone

from hyperparam.manifests import LABEL_BATCH, LABEL_SWEEP_UID
from hyperparam.tests.conftest import make_spec
from kube.client import get_client
from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL as KUBECTL_PATH
from tensorboard.actions import spawn
from tensorboard.conf import conf_from_settings
from tensorboard.fetchplan import Plan, parse_plan
from tensorboard.manifests import plan_configmap_name
from tensorboard.reconcile import reconcile_tensorboard

from .cluster import children, event_reasons, store_workflow, tensorboard
from .workflows import NAMESPACE, node, s3_artifact, workflow


def create_tensorboard(sim: Simulator, name: str = "mnist", *paths: str, **spec: Any) -> dict[str, Any]:
    logdirs = [{"name": f"run-{index}", "path": path} for index, path in enumerate(paths or ["s3://ml/a"])]
    return sim.store.create(
        {
            "apiVersion": "argoml.io/v1alpha1",
            "kind": "Tensorboard",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"logdirs": logdirs, **spec},
        }
    )


def fetch_plan_of(sim: Simulator, name: str) -> Plan:
    configmap = sim.store.get("configmaps", plan_configmap_name(name), NAMESPACE)
    return parse_plan(configmap["data"]["plan.json"])


def args(deployment: dict[str, Any]) -> list[str]:
    return deployment["spec"]["template"]["spec"]["containers"][0]["args"]


def test_a_tensorboard_gets_its_deployment_and_service_then_becomes_ready_when_the_pod_is(sim):
    create_tensorboard(sim, "mnist", "s3://ml/a", "pvc://logs/b")
    reconcile_tensorboard(NAMESPACE, "mnist")

    deployment, service = children(sim, "mnist", NAMESPACE)
    # Fetched runs are the emptyDir's sub-folders (unnamed entry); the PVC logdir is a named entry.
    assert args(deployment)[0] == "--logdir_spec=/tensorboard-logs,run-1:/logdirs/logs/b"
    assert service["spec"]["selector"] == {"argoml.io/tensorboard": "mnist"}
    status = tensorboard(sim, "mnist", NAMESPACE)["status"]
    assert status["phase"] == "Pending"
    assert status["url"] == "http://tb-mnist.team-a.svc.cluster.local/tensorboards/team-a/mnist/"

    sim.advance(5)  # the kubelet runs the fetcher, starts TensorBoard, the Deployment becomes available
    reconcile_tensorboard(NAMESPACE, "mnist")
    status = tensorboard(sim, "mnist", NAMESPACE)["status"]
    assert status["phase"] == "Ready"
    assert status["conditions"][0]["reason"] == "DeploymentAvailable"
    assert status["observedGeneration"] == 1
    # The fetch plan's ConfigMap, the Deployment, the Service.
    assert event_reasons(sim, NAMESPACE, "mnist") == ["SuccessfulCreate"] * 3 + ["Ready"]


def test_runs_the_pods_fetcher_could_not_fetch_reach_the_status_and_the_instance_stays_ready(sim):
    create_tensorboard(sim, "mnist", "s3://ml/a", "s3://ml/b")
    reconcile_tensorboard(NAMESPACE, "mnist")
    sim.advance(5)
    [pod] = sim.store.list("pods", NAMESPACE, label_selector="argoml.io/tensorboard=mnist")["items"]
    [fetcher] = pod["status"]["initContainerStatuses"]
    report = {"runs": 2, "failed": [{"run": "run-1", "url": "s3://ml/b", "reason": "NoSuchKey: gone"}]}
    fetcher["state"] = {"terminated": {"exitCode": 0, "reason": "Completed", "message": json.dumps(report)}}
    sim.store.patch(
        "pods",
        pod["metadata"]["name"],
        {"status": {"initContainerStatuses": [fetcher]}},
        namespace=NAMESPACE,
        subresource="status",
    )

    reconcile_tensorboard(NAMESPACE, "mnist")
    status = tensorboard(sim, "mnist", NAMESPACE)["status"]
    assert status["phase"] == "Ready"
    assert status["fetchProblems"] == report["failed"]
    fetched = next(c for c in status["conditions"] if c["type"] == "ArtifactsFetched")
    assert (fetched["status"], fetched["reason"]) == ("False", "SomeNotFetched")
    assert fetched["message"] == "1 of 2 runs could not be fetched: run-1: NoSuchKey: gone"


def test_reconciling_a_converged_instance_again_writes_nothing(sim):
    create_tensorboard(sim)
    reconcile_tensorboard(NAMESPACE, "mnist")
    sim.advance(2)
    reconcile_tensorboard(NAMESPACE, "mnist")
    sim.store.wait_idle(5)
    before = sim.store.resource_version
    reconcile_tensorboard(NAMESPACE, "mnist")
    sim.store.wait_idle(5)
    assert sim.store.resource_version == before


def test_new_logdirs_replace_the_deployments_template(sim):
    create_tensorboard(sim)
    reconcile_tensorboard(NAMESPACE, "mnist")
    sim.advance(2)
    reconcile_tensorboard(NAMESPACE, "mnist")
    patch = {"spec": {"logdirs": [{"name": "a", "path": "s3://ml/a"}, {"name": "b", "path": "s3://ml/b"}]}}
    sim.store.patch("tensorboards.argoml.io", "mnist", patch, namespace=NAMESPACE)

    reconcile_tensorboard(NAMESPACE, "mnist")
    deployment, _service = children(sim, "mnist", NAMESPACE)
    assert args(deployment)[0] == "--logdir=/tensorboard-logs"
    # No sidecar: the plan's hash on the pod template starts a pod whose init container fetches the new runs.
    assert [run.folder for run in fetch_plan_of(sim, "mnist").runs] == ["run-0", "a", "b"]
    assert tensorboard(sim, "mnist", NAMESPACE)["status"]["observedGeneration"] == 2
    assert "SuccessfulUpdate" in event_reasons(sim, NAMESPACE, "mnist")


def test_a_child_someone_else_owns_is_never_overwritten_and_the_instance_fails_naming_it(sim):
    metadata = {"name": "tb-mnist", "namespace": NAMESPACE}
    foreign = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {"selector": {"app": "other"}},
    }
    sim.store.create(foreign)
    create_tensorboard(sim)
    reconcile_tensorboard(NAMESPACE, "mnist")

    status = tensorboard(sim, "mnist", NAMESPACE)["status"]
    assert status["phase"] == "Failed"
    assert status["message"] == "Service team-a/tb-mnist exists and is not controlled by this Tensorboard."
    assert children(sim, "mnist", NAMESPACE)[1]["spec"]["selector"] == {"app": "other"}
    assert "NameConflict" in event_reasons(sim, NAMESPACE, "mnist")


def test_a_spec_that_cannot_run_fails_without_children(sim):
    create_tensorboard(sim, "escape", "pvc://logs/../secrets")
    reconcile_tensorboard(NAMESPACE, "escape")
    status = tensorboard(sim, "escape", NAMESPACE)["status"]
    assert (status["phase"], status["conditions"][0]["reason"]) == ("Failed", "InvalidSpec")
    assert "may not leave its claim" in status["message"]
    assert children(sim, "escape", NAMESPACE) == (None, None)


def test_deleting_the_tensorboard_takes_its_children_along_and_its_reconcile_does_nothing(sim):
    create_tensorboard(sim)
    reconcile_tensorboard(NAMESPACE, "mnist")
    sim.store.delete("tensorboards.argoml.io", "mnist", NAMESPACE)
    assert reconcile_tensorboard(NAMESPACE, "mnist") is None
    assert children(sim, "mnist", NAMESPACE) == (None, None)


def test_a_child_the_api_server_refuses_fails_the_instance_instead_of_retrying_forever(sim):
    sim.faults.fail(422, verb="create", resource="deployments")
    create_tensorboard(sim)
    reconcile_tensorboard(NAMESPACE, "mnist")
    status = tensorboard(sim, "mnist", NAMESPACE)["status"]
    assert (status["phase"], status["conditions"][0]["reason"]) == ("Failed", "ChildRejected")
    assert "ChildRejected" in event_reasons(sim, NAMESPACE, "mnist")

    reconcile_tensorboard(NAMESPACE, "mnist")  # the fault fired once: the next run creates it
    assert children(sim, "mnist", NAMESPACE)[0] is not None


def test_kubectl_applies_a_tensorboard_and_shows_its_phase_and_url(sim):
    manifest = """
apiVersion: argoml.io/v1alpha1
kind: Tensorboard
metadata: {name: from-kubectl, namespace: team-a}
spec:
  logdirs: [{name: baseline, path: "pvc://shared-logs/baseline"}]
"""
    kubectl(sim, "apply", "-f", "-", stdin=manifest)
    reconcile_tensorboard(NAMESPACE, "from-kubectl")
    header, row = kubectl(sim, "get", "tb", "-n", NAMESPACE).splitlines()
    assert header.split() == ["NAME", "PHASE", "URL", "AGE"]
    assert row.split()[:3] == [
        "from-kubectl",
        "Pending",
        "http://tb-from-kubectl.team-a.svc.cluster.local/tensorboards/team-a/from-kubectl/",
    ]
    refused = kubectl(sim, "apply", "-f", "-", stdin=manifest.replace("pvc://", "file://"), check=False)
    assert "spec.logdirs[0].path" in refused


def kubectl(sim: Simulator, *args: str, stdin: str | None = None, check: bool = True) -> str:
    result = subprocess.run(
        [str(KUBECTL_PATH), "--kubeconfig", str(sim.kubeconfig_path), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


def test_a_running_workflows_new_trial_joins_the_plan_configmap_without_touching_the_deployment(sim):
    trial_0 = node("sweep", "trial-0", s3_artifact("sweep/trial-0/tb"))
    store_workflow(sim, workflow("sweep", trial_0, phase="Running"))
    spawn(get_client(), conf_from_settings(), namespace=NAMESPACE, kind="Workflow", source="sweep",
          now=timezone.now())  # fmt: skip
    assert reconcile_tensorboard(NAMESPACE, "sweep") == 60.0  # comes back to read the running source
    assert [(run.run, run.folder) for run in fetch_plan_of(sim, "sweep").runs] == [("trial-0", "trial-0")]
    deployment, _service = children(sim, "sweep", NAMESPACE)
    pod = deployment["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["tensorboard", "sync-logs"]
    plan_volume = {"name": "fetch-plan", "configMap": {"name": "tb-sweep-fetch-plan", "defaultMode": 420}}
    assert plan_volume in pod["volumes"]  # defaultMode: the API server's default

    trial_1 = node("sweep", "trial-1", s3_artifact("sweep/trial-1/tb"), started="2025-01-01T10:30:00Z")
    grown = workflow("sweep", trial_0, trial_1, phase="Running")
    sim.store.mutate(
        "workflows.argoproj.io", "sweep", lambda wf: {**wf, "status": grown["status"]}, namespace=NAMESPACE
    )
    assert reconcile_tensorboard(NAMESPACE, "sweep") == 60.0

    plan = fetch_plan_of(sim, "sweep")
    assert [(run.run, run.url, run.folder) for run in plan.runs] == [
        ("trial-0", "s3://ml-artifacts/sweep/trial-0/tb", "trial-0"),
        ("trial-1", "s3://ml-artifacts/sweep/trial-1/tb", "trial-1"),
    ]
    again, _service = children(sim, "sweep", NAMESPACE)
    # No restart: the spec is as it was (the simulated Deployment controller may have written its status
    # meanwhile, so the resourceVersion may move; the generation counts spec changes only).
    assert again["metadata"]["generation"] == deployment["metadata"]["generation"]
    assert again["spec"]["template"] == deployment["spec"]["template"]
    assert [e["name"] for e in tensorboard(sim, "sweep", NAMESPACE)["spec"]["logdirs"]] == ["trial-0"]
    assert "SuccessfulUpdate" in event_reasons(sim, NAMESPACE, "sweep")  # the ConfigMap's


def test_a_source_that_disappears_leaves_the_plan_as_it_was(sim):
    trial_0 = node("gone", "trial-0", s3_artifact("gone/trial-0/tb"))
    store_workflow(sim, workflow("gone", trial_0, phase="Running"))
    spawn(get_client(), conf_from_settings(), namespace=NAMESPACE, kind="Workflow", source="gone",
          now=timezone.now())  # fmt: skip
    reconcile_tensorboard(NAMESPACE, "gone")
    sim.store.delete("workflows.argoproj.io", "gone", namespace=NAMESPACE)
    assert reconcile_tensorboard(NAMESPACE, "gone") == 60.0
    assert [run.run for run in fetch_plan_of(sim, "gone").runs] == ["trial-0"]


def test_logdirs_named_directly_are_synced_by_the_sidecar_but_never_read_again_by_the_controller(sim):
    create_tensorboard(sim, "named", "s3://ml/a", syncSeconds=30)
    assert reconcile_tensorboard(NAMESPACE, "named") is None  # no source to read: no timer
    deployment, _service = children(sim, "named", NAMESPACE)
    assert [c["name"] for c in deployment["spec"]["template"]["spec"]["containers"]] == [
        "tensorboard",
        "sync-logs",
    ]


def test_a_plan_configmap_someone_else_owns_is_never_overwritten(sim):
    foreign = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"plan.json": "mine"},
               "metadata": {"name": "tb-mnist-fetch-plan", "namespace": NAMESPACE}}  # fmt: skip
    sim.store.create(foreign)
    create_tensorboard(sim)
    reconcile_tensorboard(NAMESPACE, "mnist")

    status = tensorboard(sim, "mnist", NAMESPACE)["status"]
    assert status["phase"] == "Failed"
    assert status["message"] == (
        "ConfigMap team-a/tb-mnist-fetch-plan exists and is not controlled by this Tensorboard."
    )
    assert sim.store.get("configmaps", "tb-mnist-fetch-plan", NAMESPACE)["data"] == {"plan.json": "mine"}


def test_a_running_sweeps_next_batch_joins_the_plan(sim):
    hpw = sim.store.create(
        {"apiVersion": "argoml.io/v1alpha1", "kind": "HyperparamWorkflow",
         "metadata": {"name": "lr", "namespace": NAMESPACE}, "spec": make_spec()}
    )  # fmt: skip
    sim.store.patch("hyperparamworkflows.argoml.io", "lr", {"status": {"phase": "Running"}},
                    namespace=NAMESPACE, subresource="status")  # fmt: skip

    def batch(index: int) -> None:
        name = f"lr-{index}"
        labels = {LABEL_SWEEP_UID: hpw["metadata"]["uid"], LABEL_BATCH: str(index)}
        trial = node(name, f"trial-{index}-0", s3_artifact(f"{name}/trial-{index}-0/tb"))
        store_workflow(sim, workflow(name, trial, labels=labels))

    batch(0)
    spawn(get_client(), conf_from_settings(), namespace=NAMESPACE, kind="HyperparamWorkflow", source="lr",
          now=timezone.now())  # fmt: skip
    assert reconcile_tensorboard(NAMESPACE, "lr-hpw") == 60.0
    assert [run.run for run in fetch_plan_of(sim, "lr-hpw").runs] == ["trial-0-0"]

    batch(1)
    reconcile_tensorboard(NAMESPACE, "lr-hpw")
    assert [run.run for run in fetch_plan_of(sim, "lr-hpw").runs] == ["trial-0-0", "trial-1-0"]
