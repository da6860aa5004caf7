"""The identity of one reconcile: (kind, namespace, name), validated once at the queue's door."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A kind, optionally qualified by its API group (`TFJob`, `TFJob.kubeflow.org`).
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


@dataclass(frozen=True, slots=True)
class ObjectKey:
    """One object to reconcile. `namespace` is "" for cluster-scoped kinds.

    Within a kind, the Redis member is "namespace/name": Kubernetes forbids "/" in both, so it splits back
    unambiguously.
    """

    kind: str
    namespace: str
    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not _KIND.match(self.kind):
            raise ValueError(
                f"kind: {self.kind!r} is not a Kubernetes kind (letters and digits, e.g. 'TFJob', "
                "optionally with its group: 'TFJob.kubeflow.org')."
            )
        if not isinstance(self.namespace, str) or "/" in self.namespace:
            raise ValueError(
                f"namespace: {self.namespace!r} must be a string without '/' ('' if cluster-scoped)."
            )
        if not isinstance(self.name, str) or not self.name or "/" in self.name:
            raise ValueError(f"name: {self.name!r} must be a non-empty string without '/'.")

    @property
    def member(self) -> str:
        """How the key is stored inside its kind's Redis sets."""
        return f"{self.namespace}/{self.name}"

    @property
    def controller(self) -> str:
        """The controller (and workqueue) name in metrics and logs, as controller-runtime names it."""
        return self.kind.lower()

    @classmethod
    def from_member(cls, kind: str, member: str) -> ObjectKey:
        namespace, _, name = member.partition("/")
        return cls(kind, namespace, name)

    def __str__(self) -> str:
        return f"{self.kind}/{self.member}"
