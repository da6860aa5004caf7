"""`manage.py argo_lint FILE... [--templates DIR] [--output json]`: lint Argo files as `argo lint --strict`.

Exit status: 0 when every document is valid, 1 when any is invalid (one ``FILE: message`` line per
problem), 2 when a file or the templates folder cannot be read or parsed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from workflows.lint import DocumentLoadError, TemplateIndex, lint_files, load_template_index

EXIT_INVALID = 1
EXIT_UNREADABLE = 2


class Command(BaseCommand):
    help = (
        "Lint Argo Workflows, WorkflowTemplates, ClusterWorkflowTemplates and CronWorkflows the way "
        "`argo lint --strict` does. WorkflowTemplates in the files, or in --templates DIR, resolve "
        "templateRefs."
    )
    requires_system_checks: list[str] = []  # reads files only: no database, no settings worth checking

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE", help="YAML files of one or more documents")
        parser.add_argument(
            "--templates",
            metavar="DIR",
            help="a folder of WorkflowTemplates and ClusterWorkflowTemplates that templateRefs may name",
        )
        parser.add_argument("--output", choices=("text", "json"), default="text")

    def handle(self, *args, files: list[str], templates: str | None, output: str, **options) -> None:
        try:
            index = _template_index(templates)
            results = lint_files(files, index)
        except DocumentLoadError as exc:
            self.stderr.write(str(exc))
            sys.exit(EXIT_UNREADABLE)
        invalid = any(not result.ok for file_results in results.values() for result in file_results)
        if output == "json":
            self.stdout.write(json.dumps(_as_json(results), indent=2))
        else:
            self._write_text(results)
        if invalid:
            sys.exit(EXIT_INVALID)

    def _write_text(self, results) -> None:
        documents = 0
        for path, file_results in results.items():
            for result in file_results:
                documents += result.linted
                for error in result.errors:
                    self.stdout.write(f"{path}: {error.message}")
        if all(result.ok for file_results in results.values() for result in file_results):
            self.stdout.write(f"no linting errors found ({documents} documents in {len(results)} files)")


def _template_index(directory: str | None) -> TemplateIndex | None:
    if directory is None:
        return None
    if not Path(directory).is_dir():
        raise DocumentLoadError(f"cannot read {directory}: not a directory")
    return load_template_index(directory)


def _as_json(results) -> dict:
    files = [
        {"file": path, "documents": [result.to_dict() for result in file_results]}
        for path, file_results in results.items()
    ]
    valid = all(document["valid"] for entry in files for document in entry["documents"])
    return {"valid": valid, "files": files}
