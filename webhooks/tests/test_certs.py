"""TLS for the webhooks: the certificates we issue, and `webhook_certs` against a cluster (kubesim)."""

from __future__ import annotations

import base64
import http.client
import ssl
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from cryptography import x509
from django.core.management import call_command
from django.core.management.base import CommandError

from kube.client import get_client, reset_client
from kube.resources import MUTATING_WEBHOOK_CONFIGURATION, NAMESPACE, SECRET, VALIDATING_WEBHOOK_CONFIGURATION
from kubesim.testing import running_simulator
from webhooks import certs
from webhooks.configurations import Target, service_dns_names

NOW = datetime(2026, 1, 1, tzinfo=UTC)
NAMES = service_dns_names(Target())


@pytest.fixture(scope="module")
def bundle() -> certs.TlsBundle:
    return certs.issue(NAMES, ["127.0.0.1"], now=NOW, days=365)


def test_the_serving_certificate_names_the_service_for_server_auth(bundle):
    cert = bundle.serving_certificate()
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [
        "argoml-webhooks",
        "argoml-webhooks.argoml",
        "argoml-webhooks.argoml.svc",
        "argoml-webhooks.argoml.svc.cluster.local",
    ]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]
    assert cert.not_valid_after_utc == NOW + timedelta(days=365)


def test_the_certificate_is_signed_by_the_ca_in_the_bundle(bundle):
    ca = x509.load_pem_x509_certificate(bundle.ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    bundle.serving_certificate().verify_directly_issued_by(ca)
    assert base64.b64decode(bundle.ca_bundle) == bundle.ca


def test_a_good_certificate_is_kept_and_an_expiring_or_misnamed_one_is_renewed(bundle):
    month = timedelta(days=30)
    assert certs.renewal_reasons(bundle, NAMES, ["127.0.0.1"], now=NOW, renew_before=month) == []
    late = NOW + timedelta(days=340)
    assert certs.renewal_reasons(bundle, NAMES, [], now=late, renew_before=month) == [
        "expires 2027-01-01 00:00 UTC"
    ]
    assert certs.renewal_reasons(bundle, ["webhooks.example.com"], [], now=NOW, renew_before=month) == [
        "it does not name webhooks.example.com"
    ]
    broken = certs.TlsBundle(b"nope", b"nope", b"nope")
    assert certs.renewal_reasons(broken, NAMES, [], now=NOW, renew_before=month)[0].startswith("unreadable")


def test_a_renewed_bundle_trusts_the_previous_ca_until_it_expires(bundle):
    renewed = certs.issue(NAMES, now=NOW + timedelta(days=300))
    both = certs.with_previous_ca(renewed, bundle, now=NOW + timedelta(days=300))
    assert len(x509.load_pem_x509_certificates(both.ca)) == 2
    assert both.ca.startswith(renewed.ca)
    expired = certs.with_previous_ca(renewed, bundle, now=NOW + timedelta(days=400))
    assert expired.ca == renewed.ca


def test_a_secret_round_trips_the_bundle(bundle):
    secret = certs.secret_manifest("tls", "argoml", bundle)
    assert secret["type"] == "kubernetes.io/tls"
    assert sorted(secret["data"]) == ["ca.crt", "tls.crt", "tls.key"]
    assert certs.bundle_from_secret(secret) == bundle
    assert certs.bundle_from_secret({"data": {"tls.crt": "not base64!"}}) is None


def test_a_certificate_needs_a_name():
    with pytest.raises(ValueError, match="at least one DNS name or IP address"):
        certs.issue([], now=NOW)


def test_python_tls_serves_with_it_and_a_client_trusting_the_ca_connects(tmp_path):
    fresh = certs.issue(["localhost"], ["127.0.0.1"], now=datetime.now(UTC))
    (tmp_path / "tls.crt").write_bytes(fresh.cert)
    (tmp_path / "tls.key").write_bytes(fresh.key)

    class Hello(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"hello")

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Hello)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client_context = ssl.create_default_context(cadata=fresh.ca.decode())
        connection = http.client.HTTPSConnection("127.0.0.1", server.server_port, context=client_context)
        connection.request("GET", "/")
        assert connection.getresponse().read() == b"hello"
    finally:
        server.shutdown()
        server.server_close()


# -- webhook_certs against a cluster --------------------------------------------------------------


@pytest.fixture
def cluster(settings):
    with running_simulator() as simulator:
        settings.KUBECONFIG = str(simulator.kubeconfig_path)
        settings.KUBE_IN_CLUSTER = False
        reset_client()
        get_client().create(
            NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argoml"}}
        )
        yield simulator
    reset_client()


def test_webhook_certs_stores_the_secret_and_writes_the_ca_bundle_into_both_configurations(cluster, capsys):
    call_command("webhook_certs")
    client = get_client()
    secret = client.get(SECRET, "argoml-webhook-tls", "argoml")
    bundle = certs.bundle_from_secret(secret)
    assert bundle is not None
    assert (
        certs.renewal_reasons(bundle, NAMES, [], now=datetime.now(UTC), renew_before=timedelta(days=30)) == []
    )
    for rtype in (VALIDATING_WEBHOOK_CONFIGURATION, MUTATING_WEBHOOK_CONFIGURATION):
        configuration = client.get(rtype, "argoml")
        assert {webhook["clientConfig"]["caBundle"] for webhook in configuration["webhooks"]} == {
            bundle.ca_bundle
        }
    output = capsys.readouterr().out
    assert "Secret argoml/argoml-webhook-tls: created with a new CA" in output
    assert "ValidatingWebhookConfiguration argoml: created" in output


def test_webhook_certs_run_again_keeps_a_good_certificate_and_changes_nothing(cluster, capsys):
    call_command("webhook_certs")
    first = get_client().get(SECRET, "argoml-webhook-tls", "argoml")
    capsys.readouterr()
    call_command("webhook_certs")
    assert get_client().get(SECRET, "argoml-webhook-tls", "argoml")["data"] == first["data"]
    output = capsys.readouterr().out
    assert "Secret argoml/argoml-webhook-tls: kept (valid until" in output
    assert "MutatingWebhookConfiguration argoml: unchanged" in output


def test_webhook_certs_force_renews_and_the_bundle_still_trusts_the_old_ca(cluster, capsys):
    call_command("webhook_certs")
    old = certs.bundle_from_secret(get_client().get(SECRET, "argoml-webhook-tls", "argoml"))
    call_command("webhook_certs", force=True)
    new = certs.bundle_from_secret(get_client().get(SECRET, "argoml-webhook-tls", "argoml"))
    assert new.cert != old.cert
    assert new.ca.endswith(old.ca)
    configuration = get_client().get(VALIDATING_WEBHOOK_CONFIGURATION, "argoml")
    assert configuration["webhooks"][0]["clientConfig"]["caBundle"] == new.ca_bundle
    assert "ValidatingWebhookConfiguration argoml: updated" in capsys.readouterr().out


def test_webhook_certs_for_a_url_certifies_its_host_and_writes_the_files(cluster, tmp_path):
    call_command("webhook_certs", url="https://127.0.0.1:9443", write_dir=tmp_path)
    bundle = certs.TlsBundle(
        *(tmp_path.joinpath(name).read_bytes() for name in ("ca.crt", "tls.crt", "tls.key"))
    )
    assert (
        certs.renewal_reasons(bundle, [], ["127.0.0.1"], now=datetime.now(UTC), renew_before=timedelta(0))
        == []
    )
    assert oct(tmp_path.joinpath("tls.key").stat().st_mode & 0o777) == "0o600"
    configuration = get_client().get(MUTATING_WEBHOOK_CONFIGURATION, "argoml")
    assert configuration["webhooks"][0]["clientConfig"]["url"] == "https://127.0.0.1:9443/webhooks/mutate"


def test_webhook_certs_refuses_a_plain_http_url(cluster):
    with pytest.raises(CommandError, match="must start with https://"):
        call_command("webhook_certs", url="http://127.0.0.1:9443")
