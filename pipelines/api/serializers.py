"""Request and response shapes of the pipeline endpoints; the transpiler checks the documents themselves."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer, inline_serializer
from rest_framework import serializers

from kube import validators
from web.api import StrictCharField


@extend_schema_field(
    {
        "oneOf": [
            {"type": "object", "additionalProperties": True},
            {
                "type": "string",
                "description": "YAML (or JSON) text, as in a file given to manage.py transpile",
            },
        ]
    }
)
class DocumentField(serializers.Field):
    """A pipeline or configuration document: a JSON object, or YAML text parsed later with the transpiler,
    so a syntax error is reported with the line, like every other problem of the document."""

    default_error_messages = {"invalid": "Must be a JSON object or YAML text."}

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict | str):
            return data
        self.fail("invalid")

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "array", "items": {}},
            {"type": "object", "additionalProperties": True},
        ]
    }
)
class ParameterValueField(serializers.Field):
    """A pipeline parameter's value: any JSON value but null (a list for a parameter a map iterates on)."""

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_serializer(component_name="Transpile")
class TranspileRequestSerializer(serializers.Serializer):
    pipeline = DocumentField(help_text="The pipeline definition (see docs/pipelines.md).")
    config = DocumentField(help_text="The executor configuration: docker_image, limits, secrets, ...")
    parameters = serializers.DictField(
        child=ParameterValueField(),
        required=False,
        default=dict,
        help_text="Values of pipeline parameters, by name, declared or not; like --parameter NAME=VALUE.",
    )
    parameters_file = DocumentField(
        required=False,
        default=None,
        allow_null=True,
        help_text="What manage.py transpile --parameters-file reads: parameter values by name, as a JSON "
        "object or YAML text; `parameters` win over it.",
    )
    variables = serializers.DictField(
        child=StrictCharField(allow_blank=True),
        required=False,
        default=dict,
        help_text="Values of the configuration's ${var} placeholders (ARGOML_VAR_<var> or MAGNUS_VAR_<var> "
        "for the command).",
    )
    namespace = StrictCharField(
        max_length=63,
        required=False,
        validators=[validators.namespace_name],
        help_text="The namespace you mean to submit the Workflow to, if you name one: you need the editor "
        "role there (without it, in some namespace).",
    )


@extend_schema_serializer(component_name="Submit")
class SubmitRequestSerializer(TranspileRequestSerializer):
    namespace = StrictCharField(
        max_length=63,
        validators=[validators.namespace_name],
        help_text="Where to create the Workflow; you need the editor role there.",
    )


class TranspiledSerializer(serializers.Serializer):
    yaml = serializers.CharField(help_text="The Workflow as YAML, as manage.py transpile writes it.")
    workflow = serializers.JSONField(help_text="The same Workflow as a JSON object.")
    warnings = serializers.ListField(child=serializers.CharField())


class SubmittedSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The name the cluster generated from the pipeline's name.")
    namespace = serializers.CharField()
    uid = serializers.CharField()
    warnings = serializers.ListField(child=serializers.CharField())


class ProblemSerializer(serializers.Serializer):
    where = serializers.CharField(help_text="'step <path>', 'config', 'pipeline', '--parameter <name>' …")
    field = serializers.CharField(
        help_text="The field at fault, e.g. 'next' or 'mode_config.argo.cpu_limit'."
    )
    message = serializers.CharField()
    text = serializers.CharField(help_text="The whole line: '<where>: <field>: <message>'.")


# Only documents the 400 body (raised as InvalidPipeline); inline because a field named `errors` would
# shadow Serializer.errors.
ProblemsSerializer = inline_serializer(
    name="Problems",
    fields={"detail": serializers.CharField(), "errors": ProblemSerializer(many=True)},
)
