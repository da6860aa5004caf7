"""Reading YAML files that hold one or more Argo documents, the way Argo's own YAML reader sees them (dates
stay strings), through the bounded reader every user document goes through (`workflows.safeyaml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workflows import safeyaml


class DocumentLoadError(ValueError):
    """The input could not be read as YAML, or broke a limit of `workflows.safeyaml` (the message says)."""


def load_documents(text: str) -> list[Any]:
    """Every non-empty document of a (multi-document) YAML text, in order."""
    try:
        return safeyaml.load_documents(text)
    except safeyaml.YamlRefused as exc:
        raise DocumentLoadError(str(exc)) from exc


def load_file(path: str | Path) -> list[Any]:
    """Every non-empty document of a YAML file; DocumentLoadError if it cannot be read or parsed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DocumentLoadError(f"cannot read {path}: {exc}") from exc
    return load_documents(text)


def parse_yaml_fragment(text: str) -> list[Any]:
    """Parse an embedded YAML string (a resource manifest) with the same rules and limits as whole files."""
    return safeyaml.load_all(text)
