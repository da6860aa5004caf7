"""Reading the YAML documents a management command is given (a file, or - for stdin)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from workflows import safeyaml

#: The exit code of a command given a document it will not read (as argparse uses 2 for bad usage).
BAD_INPUT = 2


def read_yaml_documents(file: str) -> list[Any]:
    """The file's non-empty YAML documents (JSON is YAML too), read with the bounded reader; a CommandError
    naming the file when it cannot be read, and one that exits 2 naming the problem (a syntax error or the
    limit broken) when it cannot be parsed. What the documents must be is the caller's to check."""
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text()
    except OSError as error:
        raise CommandError(f"{file}: {error.strerror}") from None
    try:
        return safeyaml.load_documents(text)
    except safeyaml.YamlRefused as error:
        raise CommandError(f"{file}: {error}", returncode=BAD_INPUT) from None
