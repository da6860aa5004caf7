"""`manage.py webhook_certs`: TLS for the admission webhooks, without cert-manager.

Creates a CA and a serving certificate for the webhook Service's DNS names, stores them in a
`kubernetes.io/tls` Secret, and writes our Validating/MutatingWebhookConfigurations (as declared in
webhooks/configurations.py) with that CA as their `caBundle`. Run it again at any time: a certificate
that is still good is kept; one that expires within `--renew-before-days` (or lacks a name) is replaced,
and the bundle keeps trusting the old CA until the web Pods serve the new certificate.
"""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from kube.client import KubeClient, get_client
from kube.errors import ApiError, NotFound
from kube.resources import (
    MUTATING_WEBHOOK_CONFIGURATION,
    SECRET,
    VALIDATING_WEBHOOK_CONFIGURATION,
    ResourceType,
)
from webhooks import certs
from webhooks.configurations import (
    DEFAULT_NAMESPACE,
    DEFAULT_SECRET,
    DEFAULT_SERVICE,
    Target,
    configurations,
    service_dns_names,
)

CONFIGURATION_TYPES = {
    "ValidatingWebhookConfiguration": VALIDATING_WEBHOOK_CONFIGURATION,
    "MutatingWebhookConfiguration": MUTATING_WEBHOOK_CONFIGURATION,
}


class Command(BaseCommand):
    help = "Issue the webhook's TLS certificate into a Secret; write its CA into our webhook configurations."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--namespace", default=DEFAULT_NAMESPACE, help="Where the web Pods and Secret live."
        )
        parser.add_argument(
            "--service", default=DEFAULT_SERVICE, help="The Service in front of the web Pods."
        )
        parser.add_argument("--secret", default=DEFAULT_SECRET, help="The kubernetes.io/tls Secret to write.")
        parser.add_argument(
            "--url",
            default="",
            help="Reach the webhooks at this https:// base URL instead of the Service (a server outside the "
            "cluster, e.g. in development); its host goes into the certificate.",
        )
        parser.add_argument("--dns-name", action="append", default=[], help="An extra DNS name to certify.")
        parser.add_argument("--ip", action="append", default=[], help="An extra IP address to certify.")
        parser.add_argument("--days", type=int, default=365, help="Validity of a new certificate.")
        parser.add_argument("--renew-before-days", type=int, default=30, help="Renew when expiring sooner.")
        parser.add_argument("--force", action="store_true", help="Issue a new CA and certificate regardless.")
        parser.add_argument(
            "--write-dir", type=Path, default=None, help="Also write ca.crt, tls.crt and tls.key here."
        )
        parser.add_argument(
            "--skip-configurations",
            action="store_true",
            help="Only the Secret; leave the configurations alone.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["days"] < 1 or options["renew_before_days"] < 0:
            raise CommandError("--days must be at least 1 and --renew-before-days at least 0")
        if options["url"] and not options["url"].startswith("https://"):
            raise CommandError(
                f"--url must start with https:// (webhooks are called over TLS): {options['url']!r}"
            )
        target = Target(namespace=options["namespace"], service=options["service"], url=options["url"])
        dns_names, ip_addresses = _subject_names(target, options["dns_name"], options["ip"])
        client = get_client()
        try:
            bundle = self._ensure_secret(client, target, options, dns_names, ip_addresses)
            if not options["skip_configurations"]:
                for configuration in configurations(target, bundle.ca_bundle):
                    self._write_configuration(client, configuration)
        except ApiError as error:
            raise CommandError(f"the cluster refused: {error}") from error
        if options["write_dir"] is not None:
            _write_files(options["write_dir"], bundle)
            self.stdout.write(f"wrote ca.crt, tls.crt and tls.key into {options['write_dir']}")

    def _ensure_secret(
        self,
        client: KubeClient,
        target: Target,
        options: dict[str, Any],
        dns_names: list[str],
        ip_addresses: list[str],
    ) -> certs.TlsBundle:
        """The bundle in the Secret, issued anew (and stored) unless the existing one is still good."""
        now = datetime.now(UTC)
        name, namespace = options["secret"], target.namespace
        try:
            secret: dict[str, Any] | None = client.get(SECRET, name, namespace)
        except NotFound:
            secret = None
        existing = certs.bundle_from_secret(secret) if secret else None
        if existing is not None and not options["force"]:
            reasons = certs.renewal_reasons(
                existing,
                dns_names,
                ip_addresses,
                now=now,
                renew_before=timedelta(days=options["renew_before_days"]),
            )
            if not reasons:
                expires = existing.serving_certificate().not_valid_after_utc
                self.stdout.write(f"Secret {namespace}/{name}: kept (valid until {expires:%Y-%m-%d})")
                return existing
            self.stdout.write(f"Secret {namespace}/{name}: renewing, the certificate {'; '.join(reasons)}")
        issued = certs.issue(dns_names, ip_addresses, now=now, days=options["days"])
        bundle = certs.with_previous_ca(issued, existing, now=now)
        manifest = certs.secret_manifest(name, namespace, bundle)
        if secret is None:
            client.create(SECRET, manifest, namespace)
            verb = "created"
        else:
            manifest["metadata"]["resourceVersion"] = secret["metadata"]["resourceVersion"]
            client.replace(SECRET, manifest)
            verb = "replaced"
        subjects = ", ".join(dns_names + ip_addresses)
        self.stdout.write(f"Secret {namespace}/{name}: {verb} with a new CA and certificate for {subjects}")
        return bundle

    def _write_configuration(self, client: KubeClient, configuration: dict[str, Any]) -> None:
        """Create the configuration, or replace the one in the cluster (its metadata kept)."""
        rtype: ResourceType = CONFIGURATION_TYPES[configuration["kind"]]
        name = configuration["metadata"]["name"]
        try:
            current = client.get(rtype, name)
        except NotFound:
            client.create(rtype, configuration)
            self.stdout.write(f"{configuration['kind']} {name}: created")
            return
        if _includes(current.get("webhooks"), configuration["webhooks"]):
            self.stdout.write(f"{configuration['kind']} {name}: unchanged")
            return
        metadata = {**current["metadata"], **configuration["metadata"]}
        client.replace(rtype, {**configuration, "metadata": metadata})
        self.stdout.write(f"{configuration['kind']} {name}: updated")


def _includes(current: object, desired: object) -> bool:
    """Whether `current` says all that `desired` says (the apiserver adds defaults, e.g. objectSelector)."""
    if isinstance(desired, dict):
        return isinstance(current, dict) and all(_includes(current.get(k), v) for k, v in desired.items())
    if isinstance(desired, list):
        return (
            isinstance(current, list)
            and len(current) == len(desired)
            and all(_includes(c, d) for c, d in zip(current, desired, strict=True))
        )
    return current == desired


def _subject_names(target: Target, extra_dns: list[str], extra_ips: list[str]) -> tuple[list[str], list[str]]:
    """The DNS names and IP addresses the certificate must carry for `target`."""
    dns_names = [] if target.url else service_dns_names(target)
    ip_addresses = list(extra_ips)
    if target.url:
        if _is_ip(target.host):
            ip_addresses.insert(0, target.host)
        else:
            dns_names.append(target.host)
    dns_names += [name for name in extra_dns if name not in dns_names]
    for address in ip_addresses:
        if not _is_ip(address):
            raise CommandError(f"--ip {address!r} is not an IP address")
    return dns_names, ip_addresses


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _write_files(directory: Path, bundle: certs.TlsBundle) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for file_name, content, mode in (
        ("ca.crt", bundle.ca, 0o644),
        ("tls.crt", bundle.cert, 0o644),
        ("tls.key", bundle.key, 0o600),
    ):
        path = directory / file_name
        path.write_bytes(content)
        path.chmod(mode)
