"""The kubeconfig the simulator writes so kubectl and the official client find it."""

from __future__ import annotations

from pathlib import Path

import yaml


def kubeconfig(
    url: str,
    namespace: str = "default",
    name: str = "kubesim",
    *,
    cluster: dict[str, str] | None = None,
    user: dict[str, str] | None = None,
) -> dict[str, object]:
    """`cluster` adds e.g. `certificate-authority-data`; `user` the credentials (`token`, client cert)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url, **(cluster or {})}}],
        "users": [{"name": name, "user": dict(user or {})}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name,
        "preferences": {},
    }


def write_kubeconfig(
    path: Path, url: str, *, cluster: dict[str, str] | None = None, user: dict[str, str] | None = None
) -> Path:
    """Written owner-only when it carries credentials, as a kubeconfig with a token should be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(kubeconfig(url, cluster=cluster, user=user), sort_keys=False))
    if user:
        path.chmod(0o600)
    return path
