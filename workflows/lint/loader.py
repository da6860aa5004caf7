"""Reading YAML files that hold one or more Argo documents, the way Argo's own YAML reader sees them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _ArgoYamlLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """A safe loader that keeps dates as strings.

    Kubernetes' YAML reader turns ``2024-01-01`` into the string it reads, never into a date, so a date-like
    value in a string field must not change type here either.
    """

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
    }


class DocumentLoadError(ValueError):
    """The input could not be read as YAML."""


def load_documents(text: str) -> list[Any]:
    """Every non-empty document of a (multi-document) YAML text, in order."""
    try:
        return [doc for doc in yaml.load_all(text, Loader=_ArgoYamlLoader) if doc is not None]
    except yaml.YAMLError as exc:
        raise DocumentLoadError(f"invalid YAML: {exc}") from exc


def load_file(path: str | Path) -> list[Any]:
    """Every non-empty document of a YAML file; DocumentLoadError if it cannot be read or parsed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DocumentLoadError(f"cannot read {path}: {exc}") from exc
    return load_documents(text)


def parse_yaml_fragment(text: str) -> list[Any]:
    """Parse an embedded YAML string (a resource manifest) with the same rules as whole files."""
    return list(yaml.load_all(text, Loader=_ArgoYamlLoader))
