"""`manage.py dev_artifacts --credentials FILE --namespace NS…`: give each dev namespace the Secret the
TensorBoard fetcher reads its S3 credentials from (TENSORBOARD_S3_CREDENTIALS_SECRET, keys
TENSORBOARD_S3_ACCESS_KEY_KEY and TENSORBOARD_S3_SECRET_KEY_KEY), holding the dev stack's artifact
repository's keys. `make run` runs it against the simulator; never run it against a production cluster.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kube.client import get_client
from kube.errors import AlreadyExists
from kube.resources import SECRET


def read_credentials(path: Path) -> tuple[str, str]:
    """(access key, secret key) of a `accesskey: …` / `secretkey: …` file, as the dev stack writes it."""
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        name, _, value = line.partition(":")
        found[name.strip()] = value.strip()
    if not found.get("accesskey") or not found.get("secretkey"):
        raise CommandError(f"{path}: needs `accesskey: …` and `secretkey: …` lines.")
    return found["accesskey"], found["secretkey"]


class Command(BaseCommand):
    help = "Store the dev artifact repository's S3 keys as the TensorBoard fetcher's Secret in namespaces."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--credentials", type=Path, required=True, help="accesskey/secretkey file")
        parser.add_argument("--namespace", action="append", required=True, dest="namespaces")

    def handle(self, *args: Any, credentials: Path, namespaces: list[str], **options: Any) -> None:
        access_key, secret_key = read_credentials(credentials)
        client = get_client()
        name = settings.TENSORBOARD_S3_CREDENTIALS_SECRET
        data = {
            settings.TENSORBOARD_S3_ACCESS_KEY_KEY: access_key,
            settings.TENSORBOARD_S3_SECRET_KEY_KEY: secret_key,
        }
        for namespace in namespaces:
            body = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {"app.kubernetes.io/managed-by": "argoml-devstack"},
                },
                "type": "Opaque",
                "stringData": data,
            }
            try:
                client.create(SECRET, body, namespace)
            except AlreadyExists:  # from an earlier run, or with other keys: these are the ones served now
                encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
                client.patch(SECRET, name, {"data": encoded}, namespace=namespace)
            self.stdout.write(f"Secret {namespace}/{name}: the dev artifact repository's keys")
