"""Transpile what an API caller sends: documents as objects or YAML text, parameters as JSON values, and
``${var}`` values given in the request. Pure: no Django, no I/O."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from workflows.pipeline import PipelineError, Problem, Transpiled, load_document, transpile
from workflows.pipeline.config import ENVIRONMENT_PREFIX


def transpile_documents(
    pipeline: Any,
    config: Any,
    *,
    parameters: Mapping[str, Any] | None = None,
    variables: Mapping[str, str] | None = None,
) -> Transpiled:
    """Like the command, but for request bodies; raises PipelineError listing every problem found.

    YAML syntax errors in both documents are reported together. ``variables`` fill the configuration's
    ``${var}`` placeholders; the web server's own environment is never read, because it belongs to the
    platform, not to the caller.
    """
    documents: dict[str, Any] = {}
    problems: list[Problem] = []
    for what, document in (("pipeline", pipeline), ("config", config)):
        try:
            documents[what] = load_document(document, what) if isinstance(document, str) else document
        except PipelineError as error:
            problems.extend(error.problems)
    if problems:
        raise PipelineError(problems)
    return transpile(
        documents["pipeline"],
        documents["config"],
        parameters={name: parameter_text(value) for name, value in (parameters or {}).items()},
        environ={f"{ENVIRONMENT_PREFIX}{name}": value for name, value in (variables or {}).items()},
    )


def parameter_text(value: Any) -> str:
    """A JSON value as the text an Argo parameter holds: as it would be typed after ``--parameter name=``.

    Strings stay as they are, flags become ``true``/``false`` and lists or mappings JSON, so a map step can
    iterate on ``["eu", "us"]`` sent as a real JSON list.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value)
