"""``POST /api/pipelines/transpile`` and ``POST /api/pipelines/submit``: thin verbs over the transpiler and
the one submit action.

Who may: both need the editor role in some namespace, decided from the caller's grants before the body is
read (`EditorSomewhere`), and in the namespace the body names, if it names one (`NamespacePermission`).
Transpiling creates nothing, but it is work done for the caller (up to `workflow_bytes` of Workflow, and
the YAML of it): a user who can submit nothing anywhere has no use for it."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from access.permissions import EditorSomewhere, NamespacePermission
from web.api import ClusterUnavailable, document_body
from web.bodies import DOCUMENT_PARSERS
from workflows.pipeline import PipelineError, Problem, Transpiled

from ..actions import SubmissionFailed, submit_workflow
from ..documents import transpile_documents
from ..rendering import workflow_yaml
from .problems import InvalidPipeline, request_problems
from .serializers import (
    ProblemsSerializer,
    SubmitRequestSerializer,
    SubmittedSerializer,
    TranspiledSerializer,
    TranspileRequestSerializer,
)

EXAMPLE_REQUEST = OpenApiExample(
    "A one-step pipeline",
    value={
        "pipeline": "dag:\n  start_at: train\n  steps:\n    train: {type: task, command: python train.py, "
        "next: done}\n    done: {type: success}\n",
        "config": {"docker_image": "registry.example.com/churn:${tag}", "cpu_limit": "500m"},
        "parameters": {},
        "variables": {"tag": "2024.06.1"},
    },
    request_only=True,
)
# Why a body this schema accepts may still be a 400 (the contract test reads it from the schema).
DOCUMENTS = document_body(
    "`pipeline`, `config` and `parameters_file` are documents (JSON objects, or YAML text read with the "
    "bounded reader), checked by the transpiler as `manage.py transpile` checks files (docs/pipelines.md): "
    "a pipeline that does not transpile, a configuration without a `docker_image`, or a parameter a map step "
    "needs as a list are a 400 listing every problem."
)
INVALID = OpenApiResponse(
    ProblemsSerializer,
    description="Every problem of the request, the pipeline and the configuration, one per entry.",
)
NOT_AN_EDITOR = OpenApiResponse(
    description="You are an editor of no namespace, or not of the namespace the body names."
)
# Checked in this order: the grants alone (before the body is read), then a namespace the body names.
EDITORS = [EditorSomewhere, NamespacePermission]


class PipelineViewSet(viewsets.ViewSet):
    """Pipelines are not stored: they are transpiled on request; a submitted one lives on as a Workflow."""

    parser_classes = DOCUMENT_PARSERS  # JSON or YAML; its documents are objects or YAML text: no forms

    def handle_exception(self, exc: Exception) -> Response:
        """Every 400 in the pipelines' one shape: a body that is not JSON, or that the permission check
        cannot read (a namespace that is not a string), is a problem of the request like any other."""
        if isinstance(exc, exceptions.ValidationError | exceptions.ParseError):
            detail = exc.detail if isinstance(exc.detail, dict | list) else [exc.detail]
            exc = InvalidPipeline(request_problems(detail), "The request is invalid; nothing was transpiled")
        return super().handle_exception(exc)

    @extend_schema(
        operation_id="pipelines_transpile",
        tags=["pipelines"],
        request=TranspileRequestSerializer,
        responses={200: TranspiledSerializer, 400: INVALID, 403: NOT_AN_EDITOR},
        examples=[EXAMPLE_REQUEST],
        extensions=DOCUMENTS,
    )
    @action(detail=False, methods=["post"], permission_classes=EDITORS)
    def transpile(self, request: Request) -> Response:
        """Transpile a pipeline into an Argo Workflow; nothing is created in the cluster."""
        _, result = _transpile(request, TranspileRequestSerializer)
        data = {
            "yaml": workflow_yaml(result.workflow),
            "workflow": result.workflow,
            "warnings": result.warnings,
        }
        return Response(TranspiledSerializer(data).data)

    @extend_schema(
        operation_id="pipelines_submit",
        tags=["pipelines"],
        request=SubmitRequestSerializer,
        responses={
            201: SubmittedSerializer,
            400: OpenApiResponse(
                ProblemsSerializer,
                description="The request is invalid, the namespace's pod security refuses the Workflow "
                "(each error names the Workflow's field), or the cluster refused.",
            ),
            403: NOT_AN_EDITOR,
            503: OpenApiResponse(description="The cluster could not be reached, or none is configured."),
        },
        extensions=DOCUMENTS,
        examples=[
            OpenApiExample(
                "Submit", value={**EXAMPLE_REQUEST.value, "namespace": "team-a"}, request_only=True
            )
        ],
    )
    @action(detail=False, methods=["post"], permission_classes=EDITORS)
    def submit(self, request: Request) -> Response:
        """Transpile a pipeline and create its Workflow in a namespace where you are an editor."""
        validated, result = _transpile(request, SubmitRequestSerializer)
        namespace = validated["namespace"]
        try:
            created = submit_workflow(result.workflow, namespace)
        except PipelineError as error:
            raise InvalidPipeline(
                error.problems, "The namespace's pod security refuses the Workflow"
            ) from error
        except SubmissionFailed as error:
            if error.refused:
                raise InvalidPipeline([Problem("cluster", "", error.reason)], str(error)) from error
            raise ClusterUnavailable(str(error)) from error
        metadata = created["metadata"]
        data = {
            "name": metadata["name"],
            "namespace": namespace,
            "uid": metadata["uid"],
            "warnings": result.warnings,
        }
        return Response(SubmittedSerializer(data).data, status=status.HTTP_201_CREATED)


def _transpile(request: Request, serializer_class: type[serializers.Serializer]) -> tuple[dict, Transpiled]:
    """The checked request body and its Workflow, or InvalidPipeline with every problem of both."""
    serializer = serializer_class(data=request.data)
    if not serializer.is_valid():
        raise InvalidPipeline(
            request_problems(serializer.errors), "The request is invalid; nothing was transpiled"
        )
    validated = serializer.validated_data
    try:
        result = transpile_documents(
            validated["pipeline"],
            validated["config"],
            parameters=validated["parameters"],
            parameters_file=validated["parameters_file"],
            variables=validated["variables"],
        )
    except PipelineError as error:
        raise InvalidPipeline(error.problems, count=error.count) from error
    return validated, result
