"""A sample controller used only by the tests and the benchmark, imported by worker processes (`-I`).

It reconciles ConfigMaps labelled `sample.argoml.io/enabled=true`: each gets a child Secret `<name>-copy`
holding the same data, with a controller ownerReference and the label `sample.argoml.io/owner=<name>`.
Deleting or editing the Secret brings it back (a child event reconciles its owner). Everything it does is
recorded in Redis (settings.REDIS_URL, or SAMPLE_RECORDS_REDIS_URL when the queue's Redis is the one a
test breaks), so tests in another process can check what happened:
  sample:mirror   one JSON record per mirrored ConfigMap event {worker, pid, time, type, name, rv}
  sample:runs     one JSON record per reconcile {worker, pid, name, start, end, wrote}
SAMPLE_RECONCILE_SECONDS (default 0) makes every run take that long, so a test can catch keys queued and
running; a ConfigMap's own `sleep` data item overrides it for its runs.
"""

from __future__ import annotations

import base64
import json
import os
import time
from functools import cache
from typing import Any

import redis
from django.conf import settings

from kube.client import get_client
from kube.controller.registry import Owns, register
from kube.errors import AlreadyExists, NotFound
from kube.resources import CONFIGMAP, SECRET

ENABLED_LABEL = "sample.argoml.io/enabled"
OWNER_LABEL = "sample.argoml.io/owner"
MIRROR_LOG = "sample:mirror"
RUNS_LOG = "sample:runs"


RECONCILE_SECONDS = float(os.environ.get("SAMPLE_RECONCILE_SECONDS", "0"))


@cache
def _redis() -> redis.Redis:
    url = os.environ.get("SAMPLE_RECORDS_REDIS_URL") or settings.REDIS_URL
    return redis.Redis.from_url(url, decode_responses=True)


def _worker() -> str:
    return os.environ.get("SAMPLE_WORKER_NAME", "in-process")


def mirror_configmap(event_type: str, obj: dict[str, Any]) -> None:
    """Stands in for a mirror into the database: notes which process saw which event."""
    metadata = obj["metadata"]
    record = {
        "worker": _worker(),
        "pid": os.getpid(),
        "time": time.time(),
        "type": event_type,
        "name": metadata["name"],
        "rv": metadata.get("resourceVersion"),
    }
    _redis().rpush(MIRROR_LOG, json.dumps(record))


def desired_secret(configmap: dict[str, Any]) -> dict[str, Any]:
    metadata = configmap["metadata"]
    data = configmap.get("data") or {}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"{metadata['name']}-copy",
            "namespace": metadata["namespace"],
            "labels": {OWNER_LABEL: metadata["name"]},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": metadata["name"],
                    "uid": metadata["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }


def reconcile_configmap(namespace: str, name: str) -> None:
    """Level-triggered: make `<name>-copy` hold the ConfigMap's data, whatever happened before."""
    start = time.time()
    client = get_client()
    wrote = False
    try:
        configmap = client.get(CONFIGMAP, name, namespace)
    except NotFound:
        configmap = None  # deleted: the garbage collector removes the Secret through its ownerReference
    time.sleep(float(((configmap or {}).get("data") or {}).get("sleep", RECONCILE_SECONDS)))
    if configmap is not None:
        desired = desired_secret(configmap)
        try:
            current = client.get(SECRET, desired["metadata"]["name"], namespace)
        except NotFound:
            try:
                client.create(SECRET, desired)
                wrote = True
            except AlreadyExists:
                pass
        else:
            current_data = current.get("data") or {}
            if current_data != desired["data"]:
                removed = dict.fromkeys(set(current_data) - set(desired["data"]))
                patch = {"data": {**removed, **desired["data"]}}
                client.patch(SECRET, desired["metadata"]["name"], patch, namespace)
                wrote = True
    record = {"worker": _worker(), "pid": os.getpid(), "name": name, "start": start, "end": time.time()}
    _redis().rpush(RUNS_LOG, json.dumps({**record, "wrote": wrote}))


register(
    CONFIGMAP,
    reconcile_configmap,
    label_selector=f"{ENABLED_LABEL}=true",
    owns=[Owns(SECRET, label_selector=OWNER_LABEL)],
    mirror=mirror_configmap,
)
