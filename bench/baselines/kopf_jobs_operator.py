"""The baseline of bench/jobs_operator.py: a minimal TFJob operator written with Kopf, doing the same work.

    KUBECONFIG=... DATABASE_URL=... SECRET_KEY=... \
        kopf run --standalone --all-namespaces bench/baselines/kopf_jobs_operator.py

Not a benchmark itself: it lives in bench/baselines/ so `make bench` (bench/*.py) does not run it.

On creation of a TFJob it makes the children and writes the status our operator's first reconcile does (it
calls the same pure `jobs.plan`), with the official client as a Kopf operator would; like ours, it mirrors
every job and every job's pod into the database with the same `kube.controller.mirror.apply_event`.
Deliberately minimal otherwise: no restarts, policies or resync, only what the benchmark measures. Only
bench/ uses it.

Tuned as Kopf's documentation advises for I/O-bound synchronous handlers: Kopf runs them in a thread pool
whose size is `settings.execution.max_workers` (KOPF_MAX_WORKERS, default 20 here), so many jobs are handled
at once; a job's children are created concurrently (KOPF_CHILD_THREADS, default 8, one per child of a
4-replica job) over an HTTP connection pool large enough for every thread.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import django
import kopf
from kubernetes import client, config

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
django.setup()

from jobs.frameworks import framework_for  # noqa: E402
from jobs.manifests import LABEL_JOB_NAME  # noqa: E402
from jobs.models import Replica, TrainingJob  # noqa: E402
from jobs.plan import Observed, parse_job, plan  # noqa: E402
from kube.controller.mirror import apply_event  # noqa: E402

MAX_WORKERS = int(os.environ.get("KOPF_MAX_WORKERS", "20"))
CHILD_THREADS = int(os.environ.get("KOPF_CHILD_THREADS", "8"))

_api: client.CoreV1Api | None = None
_children = ThreadPoolExecutor(max_workers=CHILD_THREADS, thread_name_prefix="children")


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    global _api
    settings.execution.max_workers = MAX_WORKERS
    configuration = client.Configuration()
    config.load_kube_config(client_configuration=configuration)
    configuration.connection_pool_maxsize = MAX_WORKERS + CHILD_THREADS
    _api = client.CoreV1Api(client.ApiClient(configuration))


def _create(namespace: str, manifest: dict[str, Any]) -> None:
    assert _api is not None
    is_service = manifest["kind"] == "Service"
    create = _api.create_namespaced_service if is_service else _api.create_namespaced_pod
    try:
        create(namespace, manifest, _preload_content=False)  # raw response: no model decoding
    except client.ApiException as error:
        if error.status != 409:
            raise


@kopf.on.create("argoml.io", "v1alpha1", "tfjobs")
def create_tfjob(body: kopf.Body, namespace: str, patch: kopf.Patch, **_: Any) -> None:
    job = {"apiVersion": body["apiVersion"], "kind": body["kind"], "metadata": dict(body.metadata)}
    job.update(spec=dict(body.spec), status=dict(body.status))
    framework = framework_for(job["kind"])
    decided = plan(parse_job(job, framework), Observed(), job["status"], datetime.now(UTC))
    # list() waits for every child and re-raises the first failure, so Kopf retries the handler.
    list(_children.map(lambda manifest: _create(namespace, manifest), decided.create))
    for key, value in decided.status.items():
        patch.status[key] = value


@kopf.on.event("argoml.io", "v1alpha1", "tfjobs")
def mirror_tfjob(event: kopf.RawEvent, **_: Any) -> None:
    apply_event(TrainingJob, event.get("type") or "ADDED", dict(event["object"]))


@kopf.on.event("", "v1", "pods", labels={LABEL_JOB_NAME: kopf.PRESENT})
def mirror_pod(event: kopf.RawEvent, **_: Any) -> None:
    apply_event(Replica, event.get("type") or "ADDED", dict(event["object"]))
