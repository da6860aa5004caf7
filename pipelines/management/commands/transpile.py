"""``manage.py transpile PIPELINE.yaml --config CONFIG.yaml``: write (or submit) the Argo Workflow.

Every problem with the pipeline, the configuration or the parameters is printed as ``step <name>: <field>:
<problem>`` and the command exits non-zero before anything is written or submitted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from kube import validators
from kube.config import cluster_configured
from pipelines.actions import SubmissionFailed, submit_workflow
from pipelines.rendering import workflow_yaml
from workflows.pipeline import (
    PipelineError,
    Problem,
    Transpiled,
    load_document,
    parse_parameter_assignments,
    read_parameters_file,
    transpile,
)

STDOUT = "-"
CONFIGURATION_EXIT_CODE = 2  # a missing setting, not a bad pipeline (1)


class Command(BaseCommand):
    help = "Transpile a pipeline definition into an Argo Workflow; write it, and optionally submit it."
    requires_system_checks: list[str] = []  # pure file work; a broken database must not stop it

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("pipeline", help="the pipeline definition (YAML)")
        parser.add_argument("--config", required=True, help="the executor configuration (YAML)")
        parser.add_argument(
            "--parameter",
            "-p",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="set a pipeline parameter (repeatable); list parameters take JSON, e.g. regions='[\"eu\"]'",
        )
        parser.add_argument(
            "--parameters-file",
            metavar="FILE",
            help="a YAML mapping of parameter values, as Magnus reads it (--parameter wins over it)",
        )
        parser.add_argument(
            "--output",
            "-o",
            help="where to write the Workflow (default: output_file of the config, or nothing with --submit; "
            "'-': stdout)",
        )
        parser.add_argument("--submit", action="store_true", help="also create the Workflow in the cluster")
        parser.add_argument(
            "--namespace",
            "-n",
            type=validators.namespace_argument,
            help="the namespace to submit to (with --submit)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["submit"] != bool(options["namespace"]):
            raise CommandError("--submit and --namespace go together")
        if options["submit"] and not cluster_configured():
            raise CommandError(
                "--submit needs a cluster: set KUBECONFIG (`make run` prints it) or KUBE_IN_CLUSTER=true",
                returncode=CONFIGURATION_EXIT_CODE,
            )
        try:
            parameters: dict[str, str] = {}
            if options["parameters_file"]:
                path = options["parameters_file"]
                document = load_document(_read(path, "--parameters-file"), "--parameters-file")
                parameters = read_parameters_file(document)
            parameters.update(parse_parameter_assignments(options["parameter"]))
            result = transpile(
                load_document(_read(options["pipeline"], "pipeline"), "pipeline"),
                load_document(_read(options["config"], "config"), "config"),
                parameters=parameters,
                environ=os.environ,
            )
        except PipelineError as error:
            for problem in error.problems:
                self.stderr.write(str(problem))
            count = error.count
            raise CommandError(
                f"{count} problem{'s' if count > 1 else ''} found; nothing was written"
            ) from error
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        # Submitting writes no file unless --output asks for one: the working directory stays as it was.
        output = options["output"] or (None if options["submit"] else result.output_file)
        if output is not None:
            _refuse_to_overwrite_inputs(output, options["pipeline"], options["config"])
            self._write(result, output)
        if options["submit"]:
            self._submit(result, options["namespace"])

    def _write(self, result: Transpiled, output: str) -> None:
        text = workflow_yaml(result.workflow)
        if output == STDOUT:
            self.stdout.write(text, ending="")
            return
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as error:
            raise CommandError(f"cannot write {output}: {error.strerror}") from error
        self.stderr.write(f"wrote the workflow to {output}")

    def _submit(self, result: Transpiled, namespace: str) -> None:
        try:
            created = submit_workflow(result.workflow, namespace)
        except PipelineError as error:
            raise CommandError(f"not submitted: {error}") from error
        except SubmissionFailed as error:
            raise CommandError(str(error)) from error
        name = created.get("metadata", {}).get("name", "?")
        self.stderr.write(f"submitted workflow {name} in namespace {namespace}")


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise PipelineError([Problem(what, path, f"cannot be read: {error.strerror}")]) from error


def _refuse_to_overwrite_inputs(output: str, *inputs: str) -> None:
    """The default output_file (pipeline.yaml) is a likely name for the definition itself: never clobber."""
    if output == STDOUT:
        return
    target = Path(output).resolve()
    for path in inputs:
        if Path(path).resolve() == target:
            raise CommandError(
                f"{output} is one of the input files; set output_file in the config or pass --output"
            )
