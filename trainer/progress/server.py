"""Where a TrainJob's pods push their progress (Kubeflow KEP-2779) and what they are given to do it: the
endpoint's path, the token audience, and the env, projected token and CA that Trainer's `TrainJobStatus`
plugin injects into every trainer container (pkg/runtime/framework/plugins/trainjobstatus).

Pure: the plan calls `inject` with the server's base URL and CA given; nothing here reads settings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import fields
from trainer import constants as c
from trainer.operator import readers

# Trainer's names (trainjobstatus.go, statusserver/utils.go), so its SDK and HF's callback find them.
ENV_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"  # noqa: S105 - a variable name, not a secret
MOUNT_PATH = "/var/run/secrets/kubeflow/trainer"
CA_CERT_KEY = "ca.crt"
TOKEN_FILE = "token"  # noqa: S105 - a file name, not a secret
VOLUME = "kubeflow-trainer-token"
TOKEN_EXPIRY_SECONDS = 3600
TOKEN_AUDIENCE_PREFIX = c.GROUP
CA_CONFIG_MAP_SUFFIX = "-tls-config"


def status_path(namespace: str, name: str) -> str:
    """The endpoint's path, the same as the status subresource's on the API server."""
    return f"/apis/{c.API_VERSION}/namespaces/{namespace}/trainjobs/{name}/status"


def token_audience(namespace: str, name: str) -> str:
    """The audience of one TrainJob's tokens: a token of a pod of job A is useless for job B."""
    return f"{TOKEN_AUDIENCE_PREFIX}/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status"


def ca_config_map_name(job_name: str) -> str:
    return job_name + CA_CONFIG_MAP_SUFFIX


@dataclass(frozen=True)
class StatusServer:
    """The listener the pods report to: its base URL (`https://<service>.<namespace>.svc:<port>`) and the
    PEM of the CA that signed its certificate, which the pods mount to trust it."""

    url: str
    ca_cert: str

    def __post_init__(self) -> None:
        if not self.url.startswith("https://"):
            raise ValueError(f"the status server's URL {self.url!r} must start with https://")
        if "BEGIN CERTIFICATE" not in self.ca_cert:
            raise ValueError("the status server's CA must be a PEM certificate")


def env(server: StatusServer, namespace: str, name: str) -> list[fields.RawDict]:
    return [
        {"name": ENV_URL, "value": server.url.rstrip("/") + status_path(namespace, name)},
        {"name": ENV_CA_CERT, "value": f"{MOUNT_PATH}/{CA_CERT_KEY}"},
        {"name": ENV_TOKEN, "value": f"{MOUNT_PATH}/{TOKEN_FILE}"},
    ]


def volume(namespace: str, name: str) -> fields.RawDict:
    """One projected volume: a short-lived token for this TrainJob's audience, and the CA beside it."""
    return {
        "name": VOLUME,
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "audience": token_audience(namespace, name),
                        "expirationSeconds": TOKEN_EXPIRY_SECONDS,
                        "path": TOKEN_FILE,
                    }
                },
                {
                    "configMap": {
                        "name": ca_config_map_name(name),
                        "items": [{"key": CA_CERT_KEY, "path": CA_CERT_KEY}],
                    }
                },
            ]
        },
    }


def volume_mount() -> fields.RawDict:
    return {"name": VOLUME, "mountPath": MOUNT_PATH, "readOnly": True}


def inject(pod_templates: Iterable[fields.RawDict], server: StatusServer, namespace: str, name: str) -> None:
    """Give every container of the trainer step's pod templates the env and the mount, and each template
    the volume (in place; an existing entry of the same name is replaced, as Trainer's Upsert* do)."""
    variables = env(server, namespace, name)
    for template in pod_templates:
        pod_spec = template.setdefault("spec", {})
        for container in pod_spec.get("containers") or []:
            readers.upsert_by_name(container.setdefault("env", []), variables)
            readers.upsert_by_name(container.setdefault("volumeMounts", []), [volume_mount()])
        readers.upsert_by_name(pod_spec.setdefault("volumes", []), [volume(namespace, name)])


def ca_config_map(server: StatusServer, namespace: str, name: str, owner: fields.RawDict) -> fields.RawDict:
    """`<trainjob>-tls-config`: the CA the projected volume reads, in the TrainJob's namespace (a pod can
    mount ConfigMaps of its own namespace only), owned by the TrainJob. Labelled with the JobSet name, as
    the hostfile ConfigMap is, because the controller selects a TrainJob's children by it (Trainer's own
    has no label: its controller finds it by owner); without it every reconcile created it again."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ca_config_map_name(name),
            "namespace": namespace,
            "labels": {c.LABEL_JOBSET_NAME: name},
            "ownerReferences": [owner],
        },
        "data": {CA_CERT_KEY: server.ca_cert},
    }
