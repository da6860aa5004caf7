"""End to end: a training pod reports its progress as Kubeflow's SDK does, with what the plan injected,
to the webhook listener served by gunicorn over TLS as in production; kubesim is the cluster.

The test plays the kubelet's part for the projected volume (a TokenRequest bound to the pod with the
volume's audience and expiry, the CA from the TrainJob's ConfigMap), in a directory standing for the mount.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import override_settings

from kube.client import get_client, reset_client
from kube.resources import CONFIGMAP, POD
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from trainer.models import TrainerStatusUpdate
from trainer.operator import plan, resolution, spec
from trainer.progress import reporting
from trainer.progress import server as progress_server
from trainer.tests import factories, progress
from webhooks import certs
from webhooks.tests.servers import Served, gunicorn_tls

pytestmark = pytest.mark.django_db(transaction=True)

# What a training script runs (Kubeflow's SDK `update_trainjob_status` sends this body, the time from
# `datetime.now(timezone.utc).isoformat()` and every metric value as text), with only the standard library.
POD_SCRIPT = """
import json, os, ssl, sys, urllib.error, urllib.request
from datetime import datetime, timezone
body = {"trainerStatus": {
    "lastUpdatedTime": datetime.now(timezone.utc).isoformat(),
    "progressPercentage": 42,
    "estimatedRemainingSeconds": 120,
    "metrics": [{"name": "loss", "value": str(0.123)}, {"name": "epoch", "value": str(3)}],
}}
token = open(os.environ["KUBEFLOW_TRAINER_SERVER_TOKEN"]).read().strip()
context = ssl.create_default_context(cafile=os.environ["KUBEFLOW_TRAINER_SERVER_CA_CERT"])
request = urllib.request.Request(
    os.environ["KUBEFLOW_TRAINER_SERVER_URL"], data=json.dumps(body).encode(),
    headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
)
try:
    answer = urllib.request.urlopen(request, context=context, timeout=10)
except urllib.error.HTTPError as error:
    answer = error
print(json.dumps({"code": answer.status, "body": json.loads(answer.read())}))
"""


def _database_url() -> str:
    db = connection.settings_dict
    user = quote(db.get("USER") or "")
    password = f":{quote(db['PASSWORD'])}" if db.get("PASSWORD") else ""
    return (
        f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    )


@dataclass(frozen=True)
class Listener:
    cluster: Simulator
    served: Served
    server: progress_server.StatusServer


@pytest.fixture(scope="module")
def listener(django_db_setup, django_db_blocker) -> Iterator[Listener]:
    if connection.vendor != "postgresql":
        pytest.skip("the gunicorn process shares the test database, which needs a server database")
    with (
        tempfile.TemporaryDirectory(prefix="trainer-e2e-") as scratch,
        running_simulator(auth=True) as simulator,
        override_settings(KUBECONFIG=str(simulator.kubeconfig_path), KUBE_IN_CLUSTER=False),
    ):
        reset_client()
        cert_dir = Path(scratch)
        bundle = certs.issue(["localhost"], ["127.0.0.1"], now=datetime.now(UTC))
        (cert_dir / "ca.crt").write_bytes(bundle.ca)
        (cert_dir / "tls.crt").write_bytes(bundle.cert)
        (cert_dir / "tls.key").write_bytes(bundle.key)
        env = {
            "DATABASE_URL": _database_url(),
            "ALLOWED_HOSTS": "127.0.0.1",
            "DEBUG": "false",
            "KUBECONFIG": str(simulator.kubeconfig_path),
        }
        with django_db_blocker.unblock(), gunicorn_tls(cert_dir, env=env, workers=1, threads=2) as served:
            server = progress_server.StatusServer(f"https://127.0.0.1:{served.port}", bundle.ca.decode())
            yield Listener(simulator, served, server)
        reset_client()


def run_planned_job(listener: Listener, namespace: str, name: str) -> dict:
    """Create the TrainJob and its first status (the controller writes it before any pod), plan it with
    the listener as its status server, create its pods and CA."""
    client = get_client()
    job = client.create(reporting.TRAIN_JOB, factories.train_job(name=name, namespace=namespace), namespace)
    client.patch(reporting.TRAIN_JOB, name, {"status": {"jobsStatus": []}}, namespace, subresource="status")
    resolved = resolution.resolve(spec.parse_train_job(job), spec.parse_runtime(factories.torch_runtime()))
    desired = plan.plan(resolved, listener.server)
    for config_map in desired.config_maps:
        client.create(CONFIGMAP, config_map)
    [pod] = desired.pods
    pod["spec"]["serviceAccountName"] = progress.ACCOUNT  # the runtime's template would name it
    return client.create(POD, pod)


def mount_projected_volume(pod: dict, mount: Path) -> dict[str, str]:
    """What the kubelet does for the pod's projected volume; the container's env, pointed at `mount`."""
    [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == progress_server.VOLUME]
    token_source, config_map_source = (s for s in volume["projected"]["sources"])
    token_spec = token_source["serviceAccountToken"]
    namespace = pod["metadata"]["namespace"]
    token = progress.token(
        namespace, pod["metadata"]["name"], token_spec["audience"], token_spec["expirationSeconds"]
    )
    (mount / token_spec["path"]).write_text(token)
    config_map = get_client().get(CONFIGMAP, config_map_source["configMap"]["name"], namespace)
    for item in config_map_source["configMap"]["items"]:
        (mount / item["path"]).write_text(config_map["data"][item["key"]])
    [container] = pod["spec"]["containers"]
    return {
        e["name"]: e["value"].replace(progress_server.MOUNT_PATH, str(mount))
        for e in container["env"]
        if e["name"].startswith("KUBEFLOW_TRAINER_SERVER_")
    }


def test_a_pod_reports_with_what_the_plan_gave_it(listener, tmp_path):
    namespace = progress.prepare(listener.cluster)
    pod = run_planned_job(listener, namespace, "tj")
    env = mount_projected_volume(pod, tmp_path)
    ran = subprocess.run(
        [sys.executable, "-c", POD_SCRIPT], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    answer = json.loads(ran.stdout)
    assert answer["code"] == 200, answer
    stored = get_client().get(reporting.TRAIN_JOB, "tj", namespace)["status"]["trainerStatus"]
    assert answer["body"] == {"trainerStatus": stored}
    assert stored["progressPercentage"] == 42
    assert stored["metrics"] == [{"name": "loss", "value": "0.123"}, {"name": "epoch", "value": "3"}]
    assert stored["lastUpdatedTime"].endswith("Z")
    [kept] = TrainerStatusUpdate.objects.filter(namespace=namespace)
    assert (kept.pod, kept.progress_percentage) == ("tj-node-0-0", 42)


def test_a_pod_without_the_ca_cannot_talk_to_the_listener(listener, tmp_path):
    """The listener's certificate is signed by our CA only: the pod trusts it through the mounted CA."""
    namespace = progress.prepare(listener.cluster)
    pod = run_planned_job(listener, namespace, "tj")
    env = mount_projected_volume(pod, tmp_path)
    env["KUBEFLOW_TRAINER_SERVER_CA_CERT"] = "/etc/ssl/certs/ca-certificates.crt"
    ran = subprocess.run(
        [sys.executable, "-c", POD_SCRIPT], env=env, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode != 0
    assert "CERTIFICATE_VERIFY_FAILED" in ran.stderr
