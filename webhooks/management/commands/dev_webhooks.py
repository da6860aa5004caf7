"""`manage.py dev_webhooks --url https://127.0.0.1:8443`: register the admission webhooks with a development
cluster (the simulator under `make run`), served by a listener outside it at `--url`.

It creates the webhooks' namespace when missing (the Secret lives there, and the configurations exclude
it), then does what `webhook_certs --url` does: a dev CA and a certificate for the URL's host, written to
`--write-dir` for the listener, and our configurations with that CA, pointing at the URL. Never run
against a production cluster: there the chart's Job runs `webhook_certs` for the in-cluster Service.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kube.client import get_client
from kube.errors import AlreadyExists
from kube.resources import NAMESPACE
from webhooks.configurations import DEFAULT_NAMESPACE


class Command(BaseCommand):
    help = "Register our admission webhooks with a development cluster, served at --url with a dev CA."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", required=True, help="The listener's https:// base URL.")
        parser.add_argument(
            "--write-dir", type=Path, required=True, help="Where ca.crt, tls.crt, tls.key go."
        )
        parser.add_argument(
            "--dns-name",
            action="append",
            default=[],
            help="A DNS name the certificate also carries (the Service pods reach the listener by).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        host = urlsplit(options["url"]).hostname or ""
        if not options["url"].startswith("https://") or not host:
            raise CommandError(f"--url must be an https:// URL with a host, not {options['url']!r}")
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DEFAULT_NAMESPACE}}
        with contextlib.suppress(AlreadyExists):  # a later run finds it
            get_client().create(NAMESPACE, namespace)
        call_command(
            "webhook_certs",
            url=options["url"],
            ip=[host] if host.replace(".", "").isdigit() else [],
            dns_name=options["dns_name"],
            write_dir=options["write_dir"],
            stdout=self.stdout,
        )
