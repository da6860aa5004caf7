"""What an HTTPS + RBAC simulator is made of: its CA and serving certificate, the TLS context, the gate,
the review handlers and the bootstrap policy, set up together by the Simulator."""

from __future__ import annotations

import base64
import secrets
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path

from kubesim.auth.bootstrap import default_objects
from kubesim.auth.escalation import EscalationCheck
from kubesim.auth.gate import Gate
from kubesim.auth.legacy import LegacyTokens
from kubesim.auth.pki import CertificateAuthority, KeyPair
from kubesim.auth.reviews import handlers
from kubesim.errors import ApiError
from kubesim.server.types import SubresourceHandler
from kubesim.store import Store


class Security:
    """TLS (when `https`) and authentication + authorization (when `auth`) for one simulator."""

    def __init__(
        self,
        store: Store,
        *,
        https: bool,
        auth: bool,
        anonymous: bool = False,
        admin_token: str | None = None,
    ) -> None:
        self.store = store
        self.https = https
        self.ca = CertificateAuthority() if https else None
        self.gate = Gate(store, admin_token=admin_token, anonymous=anonymous) if auth else None
        #: the legacy token controller, filling service-account-token Secrets (with `auth`)
        self.legacy_tokens = (
            LegacyTokens(store, self.gate.signer, self.ca.certificate if self.ca else None)
            if self.gate
            else None
        )
        self._scratch = tempfile.TemporaryDirectory(prefix="kubesim-pki-") if https else None
        #: the CA certificate as a PEM file, for clients that take a path (requests' `verify=`)
        self.ca_path: Path | None = None
        if self.ca is not None:
            self.ca_path = self._dir / "ca.crt"
            self.ca_path.write_bytes(self.ca.certificate)

    @property
    def admin_token(self) -> str | None:
        return self.gate.admin_token if self.gate else None

    def tls_context(self, host: str) -> ssl.SSLContext | None:
        """The server side: our serving certificate; client certificates optional, checked against our CA."""
        if self.ca is None:
            return None
        pair = self.ca.serving(host)
        cert, key = self._write("apiserver", pair)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(cert, key)
        context.load_verify_locations(cadata=self.ca.certificate.decode())
        context.verify_mode = ssl.CERT_OPTIONAL
        context.set_alpn_protocols(["http/1.1"])
        return context

    def client_certificate(self, user: str, groups: tuple[str, ...] = ()) -> tuple[Path, Path]:
        """PEM files (certificate, key) of a client certificate for `user` in `groups`."""
        if self.ca is None:
            raise RuntimeError("kubesim: client certificates need https=True")
        return self._write(f"client-{secrets.token_hex(4)}", self.ca.client(user, groups))

    @property
    def _dir(self) -> Path:
        assert self._scratch is not None
        return Path(self._scratch.name)

    def _write(self, stem: str, pair: KeyPair) -> tuple[Path, Path]:
        cert, key = self._dir / f"{stem}.crt", self._dir / f"{stem}.key"
        cert.write_bytes(pair.certificate)
        key.write_bytes(pair.key)
        key.chmod(0o600)
        return cert, key

    def install(self, add_subresource: Callable[[str, str, SubresourceHandler], None]) -> None:
        """Register the review handlers, TokenRequest and the escalation check; create the bootstrap roles
        that are missing; start the legacy token controller."""
        if self.gate is None:
            return
        for (resource, name), handler in handlers(self.gate).items():
            add_subresource(resource, name, handler)
        # before validation, as the RBAC storage checks escalation before it validates
        self.store.add_admission(EscalationCheck(self.gate).admit, mutating=True)
        for obj in default_objects():
            try:
                self.store.create(obj)
            except ApiError as error:
                if error.code != 409:
                    raise
        assert self.legacy_tokens is not None
        self.legacy_tokens.start()

    def kubeconfig_cluster(self) -> dict[str, str]:
        if self.ca is None:
            return {}
        return {"certificate-authority-data": base64.b64encode(self.ca.certificate).decode()}

    def kubeconfig_user(self) -> dict[str, str]:
        return {"token": self.gate.admin_token} if self.gate else {}

    def close(self) -> None:
        if self.legacy_tokens is not None:
            self.legacy_tokens.stop()
        if self._scratch is not None:
            self._scratch.cleanup()
