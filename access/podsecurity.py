"""The one Pod Security check of what tenants submit: a namespace's policy applied to pod views.

The validating webhook, the API's write actions and the dashboard's Submit page all call `check`; each
kind says where its pods are (`jobs.spec.pod_views`, `workflows.pods.workflow_pod_views`). Policies are
read from each process's memory (`kube.versioned`), so the webhook's hot path makes no query.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

import podsecurity
from kube import versioned


@dataclass(frozen=True)
class Policy:
    """What one namespace's pod templates must meet."""

    level: str
    service_accounts: frozenset[str]


def load_policies() -> dict[str, Policy]:
    """Every namespace's policy, as the admin set it (one query)."""
    from .models import NamespacePodSecurity, split_service_accounts  # models import kube.versioned too

    return {
        row.namespace: Policy(row.level, frozenset(split_service_accounts(row.service_accounts)))
        for row in NamespacePodSecurity.objects.all()
    }


def _read_version() -> str | None:
    from .models import podsecurity_version

    return podsecurity_version.read()


_process_cache = versioned.VersionedCache("pod security policies", load_policies, _read_version)


def policy_for(namespace: str) -> Policy:
    """The namespace's policy, or the default one (`POD_SECURITY_DEFAULT_LEVEL`, only `default`)."""
    policy = _process_cache.get().get(namespace)
    return policy or Policy(settings.POD_SECURITY_DEFAULT_LEVEL, frozenset())


def check(namespace: str, views: Iterable[podsecurity.PodView]) -> list[podsecurity.Violation]:
    """Every field of the pods in `views` that the namespace's policy refuses: its level's violations,
    then each service account it does not allow."""
    policy = policy_for(namespace)
    views = list(views)
    return [
        *podsecurity.check_views(policy.level, views),
        *podsecurity.check_service_accounts(views, policy.service_accounts, namespace),
    ]


def reset_process_cache(**options: Any) -> None:
    """Forget what this process holds; tests start each case from an empty cache. `options` go to the
    cache (`check_interval`, `clock`, and `load` / `read_version` for tests that hold policies without a
    database)."""
    global _process_cache
    options = {"load": load_policies, "read_version": _read_version, **options}
    _process_cache = versioned.VersionedCache("pod security policies", **options)
