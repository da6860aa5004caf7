"""Webhook TLS: a private CA, a serving certificate for the Service's names, and the Secret holding them.

Pure (no I/O): `webhook_certs` reads and writes the cluster. Keys are ECDSA P-256, which the apiserver and
every TLS stack we serve with accept, and which is fast to generate. The apiserver checks the serving
certificate against the configuration's `caBundle` and the host it dials, so the certificate carries the
Service's DNS names as subject alternative names (Go ignores the common name).
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_COMMON_NAME = "argoml-webhooks-ca"
PEM_BEGIN = b"-----BEGIN CERTIFICATE-----"
CLOCK_SKEW = timedelta(minutes=5)


@dataclass(frozen=True)
class TlsBundle:
    """PEM bytes: `ca` (one or more CA certificates, newest first), the serving `cert` and its `key`."""

    ca: bytes
    cert: bytes
    key: bytes

    @property
    def ca_bundle(self) -> str:
        """The `caBundle` of a webhook configuration: the CA PEM, base64-encoded."""
        return base64.b64encode(self.ca).decode("ascii")

    def serving_certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert)


def issue(
    dns_names: Sequence[str], ip_addresses: Sequence[str] = (), *, now: datetime, days: int = 365
) -> TlsBundle:
    """A new CA and a serving certificate signed by it, both valid from `now` (less skew) for `days`."""
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    not_before, not_after = now - CLOCK_SKEW, now + timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_COMMON_NAME)])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(address)) for address in ip_addresses]
    common_name = dns_names[0] if dns_names else ip_addresses[0]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return TlsBundle(
        ca=ca_cert.public_bytes(serialization.Encoding.PEM),
        cert=cert.public_bytes(serialization.Encoding.PEM),
        key=key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def renewal_reasons(
    bundle: TlsBundle,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str],
    *,
    now: datetime,
    renew_before: timedelta,
) -> list[str]:
    """Why `bundle` cannot be kept: unreadable, expiring within `renew_before`, or missing a name."""
    try:
        cert = bundle.serving_certificate()
        cas = x509.load_pem_x509_certificates(bundle.ca)
    except ValueError as error:
        return [f"unreadable: {error}"]
    reasons = []
    if cert.not_valid_after_utc - renew_before <= now:
        reasons.append(f"expires {cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC")
    if not any(ca.subject == cert.issuer and ca.not_valid_after_utc > now for ca in cas):
        reasons.append("its CA is not in the bundle or has expired")
    try:
        alternative_names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [*reasons, "it has no subject alternative names"]
    have_dns = set(alternative_names.get_values_for_type(x509.DNSName))
    have_ips = {str(ip) for ip in alternative_names.get_values_for_type(x509.IPAddress)}
    missing = [name for name in dns_names if name not in have_dns]
    missing += [address for address in ip_addresses if str(ipaddress.ip_address(address)) not in have_ips]
    if missing:
        reasons.append(f"it does not name {', '.join(missing)}")
    return reasons


def with_previous_ca(bundle: TlsBundle, previous: TlsBundle | None, *, now: datetime) -> TlsBundle:
    """`bundle` whose CA PEM also trusts the previous bundle's newest CA while that is valid.

    Kubelets update a mounted Secret within a minute or so, and gunicorn serves the new certificate after
    a restart: in between, the apiserver must accept the old certificate as well as the new one.
    """
    if previous is None:
        return bundle
    try:
        old_ca = x509.load_pem_x509_certificates(previous.ca)[0]
    except (ValueError, IndexError):
        return bundle
    if old_ca.not_valid_after_utc <= now:
        return bundle
    return TlsBundle(bundle.ca + old_ca.public_bytes(serialization.Encoding.PEM), bundle.cert, bundle.key)


def secret_manifest(name: str, namespace: str, bundle: TlsBundle) -> dict[str, Any]:
    """A `kubernetes.io/tls` Secret, with the CA as `ca.crt` (the layout cert-manager uses too)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/name": "argoml"}},
        "type": "kubernetes.io/tls",
        "data": {
            "ca.crt": _b64(bundle.ca),
            "tls.crt": _b64(bundle.cert),
            "tls.key": _b64(bundle.key),
        },
    }


def bundle_from_secret(secret: dict[str, Any]) -> TlsBundle | None:
    """The bundle a Secret holds, or None when it lacks a part or a part is not base64."""
    data = secret.get("data")
    if not isinstance(data, dict):
        return None
    try:
        parts = [base64.b64decode(data[key], validate=True) for key in ("ca.crt", "tls.crt", "tls.key")]
    except (KeyError, TypeError, ValueError):
        return None
    if not all(part.startswith(PEM_BEGIN) for part in parts[:2]):
        return None
    return TlsBundle(*parts)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
