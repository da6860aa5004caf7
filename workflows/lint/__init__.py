"""An Argo Workflows linter in pure Python: what ``argo lint --strict`` reports, with Argo's own wording.

    from workflows.lint import TemplateIndex, lint_document, lint_documents, load_documents

    index = TemplateIndex.from_documents(load_documents(templates_yaml))
    result = lint_document(workflow_dict, index)
    if not result.ok:
        for error in result.errors:
            print(error.path, error.message)

Everything here is free of I/O except the file helpers (load_file, lint_files, load_template_index).
"""

from workflows.lint.api import (
    API_VERSION,
    LINTED_KINDS,
    lint_document,
    lint_documents,
    lint_files,
    load_template_index,
    warm_up,
)
from workflows.lint.errors import LintError, LintResult
from workflows.lint.loader import DocumentLoadError, load_documents, load_file
from workflows.lint.model import TemplateIndex

__all__ = [
    "API_VERSION",
    "LINTED_KINDS",
    "DocumentLoadError",
    "LintError",
    "LintResult",
    "TemplateIndex",
    "lint_document",
    "lint_documents",
    "lint_files",
    "load_documents",
    "load_file",
    "load_template_index",
    "warm_up",
]
