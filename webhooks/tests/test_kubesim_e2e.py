"""End to end: kubesim calls our webhooks over HTTPS, served by gunicorn as in production.

The set-up is what an operator does: install the CRDs, run `webhook_certs` (Secret + configurations with
the caBundle, pointing at the Service), and serve the app with the certificate. kubesim routes the
Service to our gunicorn and checks the certificate for `argoml-webhooks.argoml.svc`.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from django.core.management import call_command
from django.db import connection
from django.test import override_settings

from kube.client import get_client, reset_client
from kube.errors import AlreadyExists, Invalid, NotFound
from kube.resources import CRD, NAMESPACE, POD, SECRET, ResourceType
from kubesim.testing import running_simulator
from webhooks import rulecache
from webhooks.models import InjectionRule, SecretEnvVar
from webhooks.tests.conftest import TRAIN_TEMPLATE, container, hyperparam_workflow, pytorch_job, tf_job
from webhooks.tests.servers import gunicorn_tls

KUBECTL = str(Path(sys.executable).parent / "kubectl")
TFJOB = ResourceType("argoml.io/v1alpha1", "TFJob", "tfjobs")
PYTORCHJOB = ResourceType("argoml.io/v1alpha1", "PyTorchJob", "pytorchjobs")
HYPERPARAM_WORKFLOW = ResourceType("argoml.io/v1alpha1", "HyperparamWorkflow", "hyperparamworkflows")
WORKFLOW = ResourceType("argoproj.io/v1alpha1", "Workflow", "workflows")

pytestmark = pytest.mark.django_db(transaction=True)


def _database_url() -> str:
    """The test database, for the gunicorn process (pytest-django created it under its own name)."""
    db = connection.settings_dict
    user = quote(db.get("USER") or "")
    password = f":{quote(db['PASSWORD'])}" if db.get("PASSWORD") else ""
    return (
        f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    )


@pytest.fixture(scope="module")
def cluster(django_db_setup, django_db_blocker):
    """kubesim with our CRDs, namespaces `argoml` and `ml`, and the webhooks registered and served."""
    if connection.vendor != "postgresql":
        pytest.skip("the gunicorn process shares the test database, which needs a server database")
    with (
        tempfile.TemporaryDirectory(prefix="webhooks-e2e-") as scratch,
        running_simulator() as simulator,
        override_settings(KUBECONFIG=str(simulator.kubeconfig_path), KUBE_IN_CLUSTER=False),
    ):
        reset_client()
        client = get_client()
        for name in ("argoml", "ml"):
            client.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        cert_dir = Path(scratch)
        call_command("install_crds", wait=10, stdout=io.StringIO())
        call_command("webhook_certs", ip=["127.0.0.1"], write_dir=cert_dir, stdout=io.StringIO())
        env = {
            "DATABASE_URL": _database_url(),
            "ALLOWED_HOSTS": "argoml-webhooks.argoml.svc,127.0.0.1",
            "DEBUG": "false",
            # The scale check reads the job a Scale belongs to from the cluster.
            "KUBECONFIG": str(simulator.kubeconfig_path),
        }
        with django_db_blocker.unblock(), gunicorn_tls(cert_dir, env=env, workers=1, threads=4) as served:
            simulator.webhooks.route_service("argoml", "argoml-webhooks", f"127.0.0.1:{served.port}")
            yield simulator
    reset_client()


def kubectl(simulator, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"KUBECONFIG": str(simulator.kubeconfig_path), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [KUBECTL, *args], input=stdin, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def apply(simulator, manifest: dict, *extra: str) -> subprocess.CompletedProcess[str]:
    return kubectl(simulator, "apply", "-f", "-", *extra, stdin=yaml.safe_dump(manifest))


def test_a_katib_users_sweep_fields_reach_the_webhook_which_names_the_fields_meant(cluster):
    """The CRD keeps a sweep's unknown fields for the webhook (a real API server would refuse them first,
    with no hint): `parameters` and a hyperparameter's `feasibleSpace` are Katib's names."""
    sweep = hyperparam_workflow("katib-sweep")
    sweep["spec"]["parameters"] = sweep["spec"].pop("hyperparams")
    sweep["spec"]["parameters"][0]["feasibleSpace"] = {"min": "0.01", "max": "0.1"}
    done = apply(cluster, sweep)
    assert done.returncode == 1
    assert 'The HyperparamWorkflow "katib-sweep" is invalid' in done.stderr
    assert "spec.parameters: unknown field; expected " in done.stderr
    assert '(did you mean "hyperparams"?)' in done.stderr
    assert "spec.hyperparams: " in done.stderr
    sweep = hyperparam_workflow("katib-domain")
    sweep["spec"]["hyperparams"][0] = {"name": "lr", "feasibleSpace": {"min": "0.01", "max": "0.1"}}
    done = apply(cluster, sweep)
    assert done.returncode == 1
    assert "spec.hyperparams[0].feasibleSpace: unknown field" in done.stderr
    assert '(did you mean "range"?)' in done.stderr


def test_a_sweep_whose_workflow_calls_an_undefined_template_is_rejected_with_argos_message(cluster):
    workflow = {
        "entrypoint": "main",
        "templates": [
            TRAIN_TEMPLATE,
            {
                "name": "main",
                "inputs": {"parameters": [{"name": "lr"}, {"name": "batch-size"}]},
                "outputs": {"parameters": [{"name": "loss", "valueFrom": {"parameter": "0.5"}}]},
                "steps": [[{"name": "a", "template": "nope"}]],
            },
        ],
    }
    done = apply(cluster, hyperparam_workflow("bad-sweep", workflow))
    assert done.returncode == 1
    assert done.stderr == (
        'The HyperparamWorkflow "bad-sweep" is invalid: '
        "spec.workflow: templates.main.steps[0].a template name 'nope' undefined\n"
    )
    with pytest.raises(Invalid) as denied:
        get_client().create(HYPERPARAM_WORKFLOW, hyperparam_workflow("bad-sweep", workflow))
    assert str(denied.value) == (
        'admission webhook "validate.argoml.io" denied the request: '
        'HyperparamWorkflow "bad-sweep" is invalid: '
        "spec.workflow: templates.main.steps[0].a template name 'nope' undefined"
    )


def test_a_valid_sweep_is_created(cluster):
    done = apply(cluster, hyperparam_workflow("good-sweep"))
    assert done.returncode == 0, done.stderr


def test_a_tfjob_without_a_tensorflow_container_is_rejected_naming_the_field(cluster):
    job = tf_job(
        "no-tf", Worker={"replicas": 2, "template": {"spec": {"containers": [container("trainer")]}}}
    )
    done = apply(cluster, job)
    assert done.returncode == 1
    assert done.stderr == (
        'The TFJob "no-tf" is invalid: spec.tfReplicaSpecs.Worker.template.spec.containers: '
        "needs a container named 'tensorflow' to run the TFJob code\n"
    )
    with pytest.raises(NotFound):
        get_client().get(TFJOB, "no-tf", "ml")


def test_a_tfjob_is_stored_with_its_defaults_and_a_server_dry_run_stores_nothing(cluster):
    assert apply(cluster, tf_job("dry"), "--dry-run=server").returncode == 0
    with pytest.raises(NotFound):
        get_client().get(TFJOB, "dry", "ml")
    assert apply(cluster, tf_job("defaulted")).returncode == 0
    worker = get_client().get(TFJOB, "defaulted", "ml")["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker["restartPolicy"] == "Never"
    assert worker["template"]["spec"]["containers"][0]["ports"][0]["name"] == "tfjob-port"


def test_a_pod_matching_an_injection_rule_gets_the_secret_env(cluster):
    rule = InjectionRule.objects.create(
        name="wandb",
        pod_selector={"matchExpressions": [{"key": "workflows.argoproj.io/workflow", "operator": "Exists"}]},
    )
    SecretEnvVar.objects.create(rule=rule, name="WANDB_API_KEY", secret_name="wandb", secret_key="api-key")
    # The server may hold rules loaded earlier: it sees the bumped version at its next check.
    time.sleep(rulecache.CHECK_INTERVAL_SECONDS)
    client = get_client()
    client.create(
        SECRET,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "wandb"},
            "stringData": {"api-key": "s3cr3t"},
        },
        "ml",
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "step-1", "namespace": "ml", "labels": {"workflows.argoproj.io/workflow": "w1"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    assert apply(cluster, pod).returncode == 0
    other = {**pod, "metadata": {"name": "web", "namespace": "ml", "labels": {"app": "web"}}}
    assert apply(cluster, other).returncode == 0
    stored = json.loads(kubectl(cluster, "get", "pod", "step-1", "-n", "ml", "-o", "json").stdout)
    assert stored["spec"]["containers"][0]["env"] == [
        {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}}
    ]
    assert "env" not in client.get(POD, "web", "ml")["spec"]["containers"][0]


WORKFLOW_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "workflows.argoproj.io"},
    "spec": {
        "group": "argoproj.io",
        "names": {
            "kind": "Workflow",
            "plural": "workflows",
            "singular": "workflow",
            "listKind": "WorkflowList",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


def test_argo_workflows_are_linted_only_in_namespaces_that_opted_in(cluster):
    client = get_client()
    with contextlib.suppress(AlreadyExists):  # Argo's own CRD, reduced to what serving the kind needs
        client.create(CRD, WORKFLOW_CRD)
    client.create(
        NAMESPACE,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "strict", "labels": {"argoml.io/validate-argo": "enabled"}},
        },
    )
    broken = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "broken"},
        "spec": {
            "entrypoint": "main",
            "templates": [{"name": "main", "steps": [[{"name": "a", "template": "x"}]]}],
        },
    }
    assert kubectl(cluster, "create", "-n", "ml", "-f", "-", stdin=yaml.safe_dump(broken)).returncode == 0
    done = kubectl(cluster, "create", "-n", "strict", "-f", "-", stdin=yaml.safe_dump(broken))
    assert done.returncode == 1
    assert done.stderr == (
        "The Workflow \"broken\" is invalid: spec: templates.main.steps[0].a template name 'x' undefined\n"
    )


def test_kubectl_scale_of_an_elastic_pytorchjob_stays_within_its_bounds(cluster):
    """The apiserver sends our webhook the Scale of `pytorchjobs/scale`; the webhook reads the job."""
    template = {"spec": {"containers": [container("pytorch")]}}
    job = pytorch_job("elastic", Worker={"replicas": 2, "template": template})
    job["spec"]["elasticPolicy"] = {"minReplicas": 2, "maxReplicas": 4}
    assert apply(cluster, job).returncode == 0

    def workers() -> int:
        return get_client().get(PYTORCHJOB, "elastic", "ml")["spec"]["pytorchReplicaSpecs"]["Worker"][
            "replicas"
        ]

    done = kubectl(cluster, "scale", "pytorchjob", "elastic", "-n", "ml", "--replicas=5")
    assert done.returncode == 1
    assert done.stderr == (
        'The Scale "elastic" is invalid: spec.pytorchReplicaSpecs.Worker.replicas: '
        "5 is outside the elastic policy's [2, 4]\n"
    )
    assert workers() == 2

    done = kubectl(cluster, "scale", "pytorchjob", "elastic", "-n", "ml", "--replicas=4")
    assert done.returncode == 0, done.stderr
    assert workers() == 4
