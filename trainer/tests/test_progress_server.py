"""The plan gives the trainer step's containers what Trainer's TrainJobStatus plugin gives them
(pkg/runtime/framework/plugins/trainjobstatus), only when a status server is configured."""

from __future__ import annotations

import pytest

from trainer import constants as c
from trainer.operator import plan, resolution, spec
from trainer.progress import server as progress_server
from trainer.tests import factories as f

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
SERVER = progress_server.StatusServer("https://argoml-webhooks.argoml.svc:443", CA)
URL = "https://argoml-webhooks.argoml.svc:443/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/tj/status"


def planned(job_body, runtime_body, server=SERVER) -> plan.Plan:
    resolved = resolution.resolve(spec.parse_train_job(job_body), spec.parse_runtime(runtime_body))
    return plan.plan(resolved, server)


def container(pod, name):
    return next(x for x in pod["spec"]["containers"] if x["name"] == name)


def env_of(found):
    return {e["name"]: e.get("value") for e in found.get("env", [])}


def test_every_trainer_container_gets_the_url_the_ca_and_the_token_paths():
    runtime = f.runtime(
        f.replicated_job("node", f.container(), f.container("sidecar"), ancestor=c.ANCESTOR_TRAINER),
        ml_policy={"numNodes": 2, "torch": {}},
    )
    result = planned(f.train_job(name="tj", namespace="ml"), runtime)
    assert len(result.pods) == 2
    for pod in result.pods:
        for name in ("node", "sidecar"):
            found = container(pod, name)
            assert {k: v for k, v in env_of(found).items() if k.startswith("KUBEFLOW_")} == {
                "KUBEFLOW_TRAINER_SERVER_URL": URL,
                "KUBEFLOW_TRAINER_SERVER_CA_CERT": "/var/run/secrets/kubeflow/trainer/ca.crt",
                "KUBEFLOW_TRAINER_SERVER_TOKEN": "/var/run/secrets/kubeflow/trainer/token",
            }
            assert found["volumeMounts"] == [
                {
                    "name": "kubeflow-trainer-token",
                    "mountPath": "/var/run/secrets/kubeflow/trainer",
                    "readOnly": True,
                }
            ]


def test_the_volume_projects_a_one_hour_token_of_the_jobs_audience_and_the_ca():
    pod = planned(f.train_job(name="tj", namespace="ml"), f.torch_runtime()).pods[0]
    assert pod["spec"]["volumes"] == [
        {
            "name": "kubeflow-trainer-token",
            "projected": {
                "sources": [
                    {
                        "serviceAccountToken": {
                            "audience": "trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/tj/status",
                            "expirationSeconds": 3600,
                            "path": "token",
                        }
                    },
                    {"configMap": {"name": "tj-tls-config", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                ]
            },
        }
    ]


def test_the_ca_config_map_is_the_jobs_own_child():
    result = planned(f.train_job(name="tj", namespace="ml"), f.torch_runtime())
    assert result.config_maps == (
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "tj-tls-config",
                "namespace": "ml",
                "labels": {"jobset.sigs.k8s.io/jobset-name": "tj"},
                "ownerReferences": [
                    {
                        "apiVersion": "trainer.kubeflow.org/v1alpha1",
                        "kind": "TrainJob",
                        "name": "tj",
                        "uid": "uid-tj",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "data": {"ca.crt": CA},
        },
    )


def test_steps_other_than_the_trainer_get_nothing():
    runtime = f.runtime(
        f.replicated_job(
            "dataset-initializer", f.container("dataset-initializer"), ancestor="dataset-initializer"
        ),
        f.replicated_job("node", f.container(), ancestor=c.ANCESTOR_TRAINER),
    )
    result = planned(f.train_job(name="tj", namespace="ml"), runtime)
    initializer = result.pod("tj-dataset-initializer-0-0")
    assert "volumes" not in initializer["spec"]
    assert "KUBEFLOW_TRAINER_SERVER_URL" not in env_of(container(initializer, "dataset-initializer"))
    assert "KUBEFLOW_TRAINER_SERVER_URL" in env_of(container(result.pod("tj-node-0-0"), "node"))


def test_mpi_the_launcher_reports_and_keeps_its_hostfile_and_ssh_mounts():
    result = planned(f.train_job(name="tj", namespace="ml"), f.mpi_runtime(num_nodes=2))
    launcher = result.pod("tj-launcher-0-0")
    mounts = [m["name"] for m in container(launcher, "node")["volumeMounts"]]
    assert "kubeflow-trainer-token" in mounts
    assert len(mounts) == 3
    assert [cm["metadata"]["name"] for cm in result.config_maps] == ["tj-mpi-hostfile", "tj-tls-config"]


def test_a_value_the_runtime_set_for_the_same_names_is_replaced():
    runtime = f.runtime(
        f.replicated_job(
            "node",
            f.container(env=[{"name": "KUBEFLOW_TRAINER_SERVER_URL", "value": "https://elsewhere"}]),
            ancestor=c.ANCESTOR_TRAINER,
        )
    )
    found = container(planned(f.train_job(name="tj", namespace="ml"), runtime).pods[0], "node")
    assert [e for e in found["env"] if e["name"] == "KUBEFLOW_TRAINER_SERVER_URL"] == [
        {"name": "KUBEFLOW_TRAINER_SERVER_URL", "value": URL}
    ]


def test_without_a_server_nothing_is_injected():
    result = planned(f.train_job(name="tj", namespace="ml"), f.torch_runtime(), server=None)
    assert "volumes" not in result.pods[0]["spec"]
    assert not any(k.startswith("KUBEFLOW_") for k in env_of(container(result.pods[0], "node")))
    assert result.config_maps == ()


def test_a_suspended_job_keeps_its_ca_config_map():
    result = planned(f.train_job(name="tj", namespace="ml", suspend=True), f.torch_runtime())
    assert result.pods == ()
    assert [cm["metadata"]["name"] for cm in result.config_maps] == ["tj-tls-config"]


@pytest.mark.parametrize(
    ("url", "ca", "problem"),
    [
        ("http://argoml-webhooks.argoml.svc", CA, "must start with https://"),
        ("https://argoml-webhooks.argoml.svc", "not a certificate", "must be a PEM certificate"),
    ],
)
def test_a_misconfigured_server_is_refused(url, ca, problem):
    with pytest.raises(ValueError, match=problem):
        progress_server.StatusServer(url, ca)


def test_the_path_and_audience_are_trainers():
    assert (
        progress_server.status_path("ns", "job")
        == "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/job/status"
    )
    assert (
        progress_server.token_audience("ns", "job")
        == "trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/job/status"
    )
