"""Reading the YAML documents a management command is given (a file, or - for stdin)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import CommandError


def read_yaml_documents(file: str) -> list[Any]:
    """The file's non-empty YAML documents (JSON is YAML too); a CommandError naming the file when it cannot
    be read or parsed. What the documents must be is the caller's to check."""
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text()
    except OSError as error:
        raise CommandError(f"{file}: {error.strerror}") from None
    try:
        return [document for document in yaml.safe_load_all(text) if document is not None]
    except yaml.YAMLError as error:
        raise CommandError(f"{file}: not valid YAML: {error}") from None
