"""The kubeconfig the simulator writes so kubectl and the official client find it."""

from __future__ import annotations

from pathlib import Path

import yaml


def kubeconfig(url: str, namespace: str = "default", name: str = "kubesim") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name,
        "preferences": {},
    }


def write_kubeconfig(path: Path, url: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(kubeconfig(url), sort_keys=False))
    return path
