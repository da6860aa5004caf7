"""The clusterrole-aggregation controller: an aggregated ClusterRole's `rules` follow the roles it selects."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kubesim.auth.rbac import aggregated_rules
from kubesim.errors import ApiError
from kubesim.store import Store, Subscription

log = logging.getLogger(__name__)


class Aggregator:
    """On every ClusterRole change, rewrites each aggregating ClusterRole whose rules no longer match."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._subscription: Subscription | None = None

    def start(self) -> None:
        self._subscription = self.store.subscribe(
            self._changed, resource="clusterroles.rbac.authorization.k8s.io"
        )
        self.sync()

    def stop(self) -> None:
        if self._subscription is not None:
            self._subscription.cancel()
            self._subscription = None

    def _changed(self, _event_type: str, _role: dict[str, Any]) -> None:
        self.sync()

    def sync(self) -> None:
        roles = self.store.list("clusterroles.rbac.authorization.k8s.io")["items"]
        for role in roles:
            wanted = aggregated_rules(role, roles)
            if wanted is None or wanted == (role.get("rules") or []):
                continue
            name = role["metadata"]["name"]
            try:
                self.store.mutate("clusterroles.rbac.authorization.k8s.io", name, _filler(wanted))
            except ApiError as error:  # deleted meanwhile: the next event recomputes
                log.debug("kubesim: could not aggregate ClusterRole %s: %s", name, error)


def _filler(rules: list[dict[str, Any]]) -> Callable[[dict[str, Any]], None]:
    def fill(obj: dict[str, Any]) -> None:
        obj["rules"] = rules

    return fill
