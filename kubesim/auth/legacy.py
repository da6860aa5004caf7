"""The legacy token controller (kube-controller-manager's serviceaccount-token controller): a Secret of type
`kubernetes.io/service-account-token` naming a ServiceAccount in `kubernetes.io/service-account.name` gets
`token`, `ca.crt` and `namespace` filled in and the account's uid annotated; one whose account is gone is
deleted, and so are an account's token Secrets when the account is deleted."""

from __future__ import annotations

import base64
import logging
from typing import Any

from kubesim.auth.tokens import TokenSigner
from kubesim.errors import ApiError
from kubesim.store import DELETED, Store, Subscriptions

log = logging.getLogger(__name__)

TOKEN_TYPE = "kubernetes.io/service-account-token"  # noqa: S105 (a Secret type, not a password)
NAME_ANNOTATION = "kubernetes.io/service-account.name"
UID_ANNOTATION = "kubernetes.io/service-account.uid"


def _b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


def missing_data(secret: dict[str, Any], ca: bytes | None) -> list[str]:
    """The keys the controller still has to fill (it never replaces what is there)."""
    data = secret.get("data") or {}
    wanted = ["token", "namespace"] + (["ca.crt"] if ca else [])
    return [key for key in wanted if not data.get(key)]


def references_account(secret: dict[str, Any], account: dict[str, Any] | None) -> bool:
    """Whether the account a token Secret names exists (and is the one its uid annotation recorded)."""
    if account is None:
        return False
    recorded = (secret["metadata"].get("annotations") or {}).get(UID_ANNOTATION)
    return not recorded or recorded == account["metadata"]["uid"]


class LegacyTokens:
    """Fills service-account-token Secrets with tokens `signer` issues; `ca` is the cluster CA (PEM)."""

    def __init__(self, store: Store, signer: TokenSigner, ca: bytes | None) -> None:
        self.store = store
        self.signer = signer
        self.ca = ca
        self._subscriptions = Subscriptions()

    def start(self) -> None:
        self._subscriptions = self.store.list_then_watch(
            ("secrets", self._secret_changed), ("serviceaccounts", self._account_changed)
        )

    def stop(self) -> None:
        self._subscriptions.cancel()

    def _account(self, name: str, namespace: str) -> dict[str, Any] | None:
        return self.store.get_or_none("serviceaccounts", name, namespace)

    def _secret_changed(self, event_type: str, secret: dict[str, Any]) -> None:
        metadata = secret["metadata"]
        if event_type == DELETED or secret.get("type") != TOKEN_TYPE or metadata.get("deletionTimestamp"):
            return
        name = (metadata.get("annotations") or {}).get(NAME_ANNOTATION)
        if not name:
            return
        namespace = metadata["namespace"]
        account = self._account(name, namespace)
        try:
            if account is None or not references_account(secret, account):
                self.store.delete("secrets", metadata["name"], namespace)
            elif missing_data(secret, self.ca) or UID_ANNOTATION not in (metadata.get("annotations") or {}):
                self.store.mutate(
                    "secrets",
                    metadata["name"],
                    lambda current: self._filled(current, account),
                    namespace=namespace,
                    field_manager="kube-controller-manager",
                )
        except ApiError as error:  # deleted or changed meanwhile: the next event brings it back here
            log.debug("kubesim: token secret %s/%s: %s", namespace, metadata["name"], error)

    def _filled(self, secret: dict[str, Any], account: dict[str, Any]) -> dict[str, Any] | None:
        missing = missing_data(secret, self.ca)
        annotations = secret["metadata"].setdefault("annotations", {})
        if not missing and annotations.get(UID_ANNOTATION):
            return None
        uid = account["metadata"]["uid"]
        annotations[UID_ANNOTATION] = uid
        namespace, secret_name = secret["metadata"]["namespace"], secret["metadata"]["name"]
        values = {
            "token": lambda: self.signer.issue_legacy(
                namespace, account["metadata"]["name"], uid, secret_name
            ),
            "namespace": lambda: namespace,
            "ca.crt": lambda: self.ca or b"",
        }
        data = secret.setdefault("data", {})
        for key in missing:
            data[key] = _b64(values[key]())
        return secret

    def _account_changed(self, event_type: str, account: dict[str, Any]) -> None:
        if event_type != DELETED:
            return
        metadata = account["metadata"]
        for secret in self.store.list("secrets", metadata["namespace"])["items"]:
            if (
                secret.get("type") == TOKEN_TYPE
                and (secret["metadata"].get("annotations") or {}).get(NAME_ANNOTATION) == metadata["name"]
            ):
                self._secret_changed("MODIFIED", secret)
