"""Transpile what an API caller sends: documents as objects or YAML text, parameters as JSON values, and
``${var}`` values given in the request. Pure: no Django, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workflows.pipeline import (
    PipelineError,
    Problem,
    Transpiled,
    argument_text,
    load_document,
    read_parameters_file,
    transpile,
)
from workflows.pipeline.config import ENVIRONMENT_PREFIX

PARAMETERS_FILE = "parameters_file"


def transpile_documents(
    pipeline: Any,
    config: Any,
    *,
    parameters: Mapping[str, Any] | None = None,
    parameters_file: Any = None,
    variables: Mapping[str, str] | None = None,
) -> Transpiled:
    """Like the command, but for request bodies; raises PipelineError listing every problem found.

    YAML syntax errors in every document are reported together. ``parameters_file`` is what the command's
    ``--parameters-file`` reads (an object or YAML text); ``parameters`` win over it, as ``--parameter``
    does. ``variables`` fill the configuration's ``${var}`` placeholders; the web server's own environment
    is never read, because it belongs to the platform, not to the caller.
    """
    documents: dict[str, Any] = {}
    problems: list[Problem] = []
    for what, document in (("pipeline", pipeline), ("config", config), (PARAMETERS_FILE, parameters_file)):
        try:
            documents[what] = load_document(document, what) if isinstance(document, str) else document
        except PipelineError as error:
            problems.extend(error.problems)
    if problems:
        raise PipelineError(problems)
    values = read_parameters_file(documents[PARAMETERS_FILE], PARAMETERS_FILE)
    values.update((name, argument_text(value)) for name, value in (parameters or {}).items())
    return transpile(
        documents["pipeline"],
        documents["config"],
        parameters=values,
        environ={f"{ENVIRONMENT_PREFIX}{name}": value for name, value in (variables or {}).items()},
    )
