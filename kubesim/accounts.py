"""The serviceaccount controller: every active namespace has a `default` ServiceAccount, recreated if deleted.

Pods that name no ServiceAccount run as `default`, and charts and tests expect to find it (`kubectl create
token default`), as in any cluster.
"""

from __future__ import annotations

import logging
from typing import Any

from kubesim.errors import ApiError
from kubesim.store import DELETED, Store, Subscriptions

log = logging.getLogger(__name__)
DEFAULT = "default"


class ServiceAccounts:
    """Creates the `default` ServiceAccount in each namespace that is not terminating."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._subscriptions = Subscriptions()

    def start(self) -> None:
        self._subscriptions = self.store.list_then_watch(
            ("namespaces", self._namespace_changed), ("serviceaccounts", self._account_changed)
        )

    def stop(self) -> None:
        self._subscriptions.cancel()

    def _namespace_changed(self, event_type: str, namespace: dict[str, Any]) -> None:
        if event_type != DELETED:
            self._ensure(namespace["metadata"]["name"])

    def _account_changed(self, event_type: str, account: dict[str, Any]) -> None:
        metadata = account["metadata"]
        if event_type == DELETED and metadata["name"] == DEFAULT:
            self._ensure(metadata["namespace"])

    def _ensure(self, namespace: str) -> None:
        try:
            current = self.store.get("namespaces", namespace)
            if current["metadata"].get("deletionTimestamp") or self.store.exists(
                "serviceaccounts", DEFAULT, namespace
            ):
                return
            account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT}}
            self.store.create(account, namespace)
        except ApiError as error:  # the namespace went away, or another event created it first
            log.debug("kubesim: no default ServiceAccount in %s: %s", namespace, error)
