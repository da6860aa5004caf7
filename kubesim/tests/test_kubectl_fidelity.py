"""What the real kubectl 1.37 sees against the secured simulator where it once differed from an API server
(issue 28's fidelity findings): protobuf bodies kept whole, cron schedules and pods validated."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from kubesim.simulator import Simulator
from kubesim.testing import run_kubectl

CRON_JOB = """
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    metadata: {labels: {team: data}, annotations: {note: kept}}
    spec:
      backoffLimit: 2
      activeDeadlineSeconds: 600
      template:
        metadata: {labels: {app: nightly}}
        spec:
          restartPolicy: OnFailure
          serviceAccountName: default
          nodeSelector: {disk: ssd}
          tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
          securityContext: {runAsUser: 1000, fsGroup: 2000}
          volumes:
          - {name: data, emptyDir: {sizeLimit: 1Gi}}
          - name: config
            configMap: {name: settings, items: [{key: a.yaml, path: a.yaml, mode: 0400}]}
          - name: token
            projected:
              sources:
              - serviceAccountToken: {path: token, expirationSeconds: 3600, audience: vault}
          initContainers:
          - name: fetch
            image: busybox:1.36
            command: [sh, -c, "cp /config/a.yaml /data/"]
            volumeMounts: [{name: data, mountPath: /data}, {name: config, mountPath: /config, readOnly: true}]
          containers:
          - name: main
            image: python:3.12
            args: ["--epochs", "3"]
            workingDir: /data
            ports: [{name: metrics, containerPort: 9100}]
            env:
            - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
            - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}
            - {name: PASSWORD, valueFrom: {secretKeyRef: {name: db, key: password, optional: true}}}
            envFrom: [{prefix: CFG_, configMapRef: {name: settings}}]
            resources: {requests: {cpu: 250m, memory: 64Mi}, limits: {cpu: "1", memory: 128Mi}}
            volumeMounts:
            - {name: data, mountPath: /data, subPath: run}
            - {name: token, mountPath: /var/run/token}
            livenessProbe: {httpGet: {path: /healthz, port: metrics}, initialDelaySeconds: 5}
            readinessProbe: {exec: {command: [cat, /data/ready]}}
            securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
            lifecycle: {preStop: {sleep: {seconds: 2}}}
"""


def _kubectl(sim: Simulator, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_kubectl(sim, *args, stdin=stdin, check=False)


def _json(sim: Simulator, *args: str) -> Any:
    done = _kubectl(sim, "get", *args, "-o", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def secured(kubesim_factory: Callable[..., Simulator]) -> Simulator:
    return kubesim_factory(https=True, auth=True)


def test_create_job_from_a_cronjob_keeps_the_whole_template(secured: Simulator) -> None:
    """kubectl sends the Job as protobuf; every field of the CronJob's job template arrives, and the Job is
    owned by the CronJob ("kubectl create job test-job --from=cronjob/a-cronjob", kubectl reference)."""
    assert _kubectl(secured, "apply", "-f", "-", stdin=CRON_JOB).returncode == 0
    created = _kubectl(secured, "create", "job", "manual", "--from=cronjob/nightly")
    assert created.returncode == 0, created.stderr
    cron_job, job = _json(secured, "cronjob", "nightly"), _json(secured, "job", "manual")
    wanted = cron_job["spec"]["jobTemplate"]["spec"]["template"]
    template = job["spec"]["template"]
    template["metadata"]["labels"] = {
        "app": template["metadata"]["labels"]["app"]
    }  # minus the generated ones
    assert template == wanted
    assert job["spec"]["backoffLimit"] == 2
    assert job["spec"]["activeDeadlineSeconds"] == 600
    assert job["metadata"]["labels"] == {"team": "data"}
    assert job["metadata"]["annotations"] == {"note": "kept", "cronjob.kubernetes.io/instantiate": "manual"}
    (owner,) = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "CronJob",
        "nightly",
        cron_job["metadata"]["uid"],
        True,
    )


def test_debug_copy_to_creates_the_copy(secured: Simulator) -> None:
    """`kubectl debug --copy-to` sends the copied Pod as protobuf; it is created with the debug container
    beside the original's."""
    assert _kubectl(secured, "run", "web", "--image=nginx:1.27", "--port=80").returncode == 0
    copied = _kubectl(
        secured, "debug", "web", "--copy-to=web-copy", "--image=busybox:1.36", "--container=dbg"
    )
    assert copied.returncode == 0, copied.stderr
    pod = _json(secured, "pod", "web-copy")
    assert [c["name"] for c in pod["spec"]["containers"]] == ["web", "dbg"]
    assert pod["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("every tuesday", "expected exactly 5 fields, found 2: [every tuesday]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("CRON_TZ=UTC * * * * *", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ],
)
def test_an_invalid_cron_schedule_is_refused(secured: Simulator, schedule: str, message: str) -> None:
    manifest = CRON_JOB.replace('"*/5 * * * *"', json.dumps(schedule))
    refused = _kubectl(secured, "apply", "-f", "-", stdin=manifest)
    assert refused.returncode == 1
    assert (
        f'The CronJob "nightly" is invalid: spec.schedule: Invalid value: {json.dumps(schedule)}: {message}'
        in refused.stderr
    )


def test_a_pod_mounting_a_volume_it_does_not_have_is_refused(secured: Simulator) -> None:
    pod = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "orphan-mount"},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    }
                ]
            },
        }
    )
    refused = _kubectl(secured, "apply", "-f", "-", stdin=pod)
    assert refused.returncode == 1
    expected = 'The Pod "orphan-mount" is invalid: spec.containers[0].volumeMounts[0].name: Not found: "data"'
    assert expected in refused.stderr


def test_a_deployment_template_is_validated_at_its_path(secured: Simulator) -> None:
    manifest = json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [{"name": "Web", "image": "nginx", "ports": [{"containerPort": 70000}]}]
                    },
                },
            },
        }
    )
    refused = _kubectl(secured, "apply", "-f", "-", stdin=manifest)
    assert refused.returncode == 1
    assert (
        'spec.template.spec.containers[0].name: Invalid value: "Web": a lowercase RFC 1123 label'
        in refused.stderr
    )
    port = "spec.template.spec.containers[0].ports[0].containerPort"
    assert f"{port}: Invalid value: 70000: must be between 1 and 65535, inclusive" in refused.stderr
