"""ServiceAccount tokens as the apiserver issues them (TokenRequest): RS256-signed JWTs with audiences,
expiry and the `kubernetes.io` claims, verified on every request and by TokenReview; and the legacy tokens
the token controller puts in `kubernetes.io/service-account-token` Secrets (issuer
`kubernetes/serviceaccount`, no expiry, no audience, valid while their Secret holds them)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

ISSUER = "https://kubernetes.default.svc.cluster.local"
LEGACY_ISSUER = "kubernetes/serviceaccount"
_LEGACY_CLAIM = "kubernetes.io/serviceaccount/"
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600


class TokenError(Exception):
    """Why a token does not authenticate (never shown to the client: it gets a bare 401)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Claims:
    """A verified token's claims, as TokenReview and the authenticator read them."""

    namespace: str
    service_account: str
    service_account_uid: str
    audiences: tuple[str, ...]
    expires: int
    bound_kind: str = ""
    bound_name: str = ""
    bound_uid: str = ""
    #: a legacy Secret-based token (bound_name is its Secret): it lives as long as the Secret holds it
    legacy: bool = False


class TokenSigner:
    """Signs and verifies tokens with one RSA key made for this simulator."""

    def __init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = self._key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self.key_id = _b64(hashlib.sha256(public).digest())

    def issue(
        self,
        claims: Claims,
        now: int,
        bound: dict[str, Any] | None = None,
    ) -> str:
        payload: dict[str, Any] = {
            "aud": list(claims.audiences),
            "exp": claims.expires,
            "iat": now,
            "nbf": now,
            "iss": ISSUER,
            "jti": secrets.token_hex(16),
            "sub": f"system:serviceaccount:{claims.namespace}:{claims.service_account}",
            "kubernetes.io": {
                "namespace": claims.namespace,
                "serviceaccount": {"name": claims.service_account, "uid": claims.service_account_uid},
                **(bound or {}),
            },
        }
        return self._sign(payload)

    def issue_legacy(self, namespace: str, account: str, account_uid: str, secret: str) -> str:
        """A token as the legacy token controller writes into a service-account-token Secret."""
        payload = {
            "iss": LEGACY_ISSUER,
            "sub": f"system:serviceaccount:{namespace}:{account}",
            f"{_LEGACY_CLAIM}namespace": namespace,
            f"{_LEGACY_CLAIM}secret.name": secret,
            f"{_LEGACY_CLAIM}service-account.name": account,
            f"{_LEGACY_CLAIM}service-account.uid": account_uid,
        }
        return self._sign(payload)

    def _sign(self, payload: dict[str, Any]) -> str:
        header = {"alg": "RS256", "kid": self.key_id}
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}"
        signature = self._key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{_b64(signature)}"

    def verify(self, token: str, now: int, audiences: tuple[str, ...]) -> Claims:
        """The token's claims if this signer signed it, it is within its lifetime and shares an audience."""
        parts = token.split(".")
        if len(parts) != 3:
            raise TokenError("not a JWT")
        try:
            header, payload = json.loads(_unb64(parts[0])), json.loads(_unb64(parts[1]))
            signature = _unb64(parts[2])
        except ValueError as error:
            raise TokenError(f"malformed token: {error}") from None
        if not isinstance(header, dict) or header.get("alg") != "RS256" or not isinstance(payload, dict):
            raise TokenError("unsupported token")
        try:
            self._key.public_key().verify(
                signature, f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except InvalidSignature:
            raise TokenError("invalid signature") from None
        if payload.get("iss") == LEGACY_ISSUER:
            return Claims(
                namespace=str(payload.get(f"{_LEGACY_CLAIM}namespace", "")),
                service_account=str(payload.get(f"{_LEGACY_CLAIM}service-account.name", "")),
                service_account_uid=str(payload.get(f"{_LEGACY_CLAIM}service-account.uid", "")),
                audiences=(),
                expires=0,
                bound_kind="secret",
                bound_name=str(payload.get(f"{_LEGACY_CLAIM}secret.name", "")),
                legacy=True,
            )
        if payload.get("iss") != ISSUER:
            raise TokenError("wrong issuer")
        if not isinstance(payload.get("exp"), int) or payload["exp"] <= now:
            raise TokenError("token has expired")
        if int(payload.get("nbf") or 0) > now + 60:
            raise TokenError("token not yet valid")
        token_audiences = tuple(payload.get("aud") or ())
        if not set(token_audiences) & set(audiences):
            raise TokenError("token audiences do not match")
        private = payload.get("kubernetes.io") or {}
        account = private.get("serviceaccount") or {}
        bound = next(((k, v) for k, v in private.items() if k in ("pod", "secret", "node")), None)
        return Claims(
            namespace=str(private.get("namespace", "")),
            service_account=str(account.get("name", "")),
            service_account_uid=str(account.get("uid", "")),
            audiences=token_audiences,
            expires=int(payload["exp"]),
            bound_kind=bound[0] if bound else "",
            bound_name=str(bound[1].get("name", "")) if bound else "",
            bound_uid=str(bound[1].get("uid", "")) if bound else "",
        )
