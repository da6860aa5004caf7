"""A small HTTPS admission webhook server for tests, with a throw-away CA made by `cryptography`.

`server.answer(path, decide)` registers `decide(request) -> response fields` for a path; every
AdmissionReview request received is kept in `server.reviews`.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

Decide = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Certificates:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca_pem).decode()


def make_certificates(*dns_names: str) -> Certificates:
    """A CA and a server certificate it signed for `dns_names` and 127.0.0.1."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesim test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0] if dns_names else "localhost")])
        )
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return Certificates(
        ca.public_bytes(serialization.Encoding.PEM),
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )


@dataclass
class WebhookServer:
    port: int
    certificates: Certificates
    routes: dict[str, Decide] = field(default_factory=dict)
    reviews: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    @property
    def ca_bundle(self) -> str:
        return self.certificates.ca_bundle

    def answer(self, path: str, decide: Decide) -> None:
        self.routes[path] = decide

    def requests_to(self, path: str) -> list[dict[str, Any]]:
        return [request for where, request in self.reviews if where == path]


def patch_response(operations: list[dict[str, Any]]) -> dict[str, Any]:
    """Response fields of a mutating webhook that allows the request with a JSON Patch."""
    encoded = base64.b64encode(json.dumps(operations).encode()).decode()
    return {"allowed": True, "patchType": "JSONPatch", "patch": encoded}


@contextmanager
def running_webhook_server(certificates: Certificates) -> Iterator[WebhookServer]:
    state = WebhookServer(0, certificates)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            path = self.path.split("?")[0]
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            request = review["request"]
            state.reviews.append((path, request))
            decide = state.routes.get(path)
            if decide is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            response = {"uid": request["uid"], **decide(request)}
            body = json.dumps(
                {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as scratch:
        cert_path, key_path = Path(scratch) / "tls.crt", Path(scratch) / "tls.key"
        cert_path.write_bytes(certificates.cert_pem)
        key_path.write_bytes(certificates.key_pem)
        context.load_cert_chain(cert_path, key_path)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
