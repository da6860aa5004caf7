"""REST API pieces every app's mirror endpoints share: the viewset bases (list, read, submit a manifest and
delete in the cluster), history rows, list filters, list pages with no COUNT(*), and the answers the API
gives when the cluster refuses or does not take a request."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from django.core.validators import RegexValidator
from django.db.models import QuerySet
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
    extend_schema_view,
)
from rest_framework import exceptions, mixins, serializers, status, viewsets
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

import limits
from kube import names, validators
from kube.errors import AlreadyExists, ApiError, ClusterNotConfigured, Invalid
from kube.models import HISTORY_FIELDS, JSON_COLUMNS
from workflows import spelling


# A row a process wrote (the mirror, a controller, the progress endpoint): every field in `Meta.fields` is
# read only. A comment, not a docstring: drf-spectacular would publish a docstring as every subclass's
# description.
class ReadOnlyModelSerializer(serializers.ModelSerializer):
    def get_extra_kwargs(self) -> dict[str, Any]:
        extra = super().get_extra_kwargs()
        for name in self.Meta.fields:
            extra[name] = {**extra.get(name, {}), "read_only": True}
        return extra


#: What a mirrored resource's detail adds to its list row: the object as the cluster holds it.
DETAIL_FIELDS = ("labels", "generation", "observed_generation", "spec", "status", "conditions")


# A MirrorHistory row (read-only); subclasses name the model in `class Meta(HistorySerializer.Meta)`.
class HistorySerializer(ReadOnlyModelSerializer):
    class Meta:
        fields = HISTORY_FIELDS


#: The columns of a pod's mirror row (jobs.models.ObservedPod) that the API shows, after its slot's.
POD_FIELDS = ("pod_name", "uid", "phase", "exit_code", "restarts", "node", "pod_ip", "message", "created_at",
              "deleted_at")  # fmt: skip


# A pod of a job (jobs.models.ObservedPod); subclasses name the model and its fields, `(*slot, *POD_FIELDS)`.
class ObservedPodSerializer(ReadOnlyModelSerializer):
    pod_name = serializers.CharField(source="name", read_only=True)


#: Any text without a NUL character: what DRF's CharField accepts.
NO_NUL = "^[^\\u0000]*$"


class CharFieldRefusesNul(OpenApiSerializerFieldExtension):
    """The schema of a request's CharField says what DRF refuses in every one of them: a NUL character
    (ProhibitNullCharactersValidator), unless the field has a pattern of its own. Fields that say their own
    schema (extend_schema_field) keep it."""

    target_class = "rest_framework.fields.CharField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: str) -> Any:
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        # A validator's pattern (a Kubernetes name's) is added after this and already excludes a NUL.
        patterned = any(isinstance(v, RegexValidator) for v in self.target.validators)
        plain = isinstance(schema, dict) and schema.get("type") == "string"
        if (
            direction == "request"
            and plain
            and not patterned
            and not {"pattern", "enum", "format"} & set(schema)
        ):
            schema["pattern"] = NO_NUL
        return schema


class StrictCharField(serializers.CharField):
    """A string as the schema says: DRF's CharField would take 7 or 1.5 from JSON and turn them into text."""

    default_error_messages = {"invalid": "Must be a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


#: set on a request body's component by `ClosedSerializer`; `web.openapi.close_marked_bodies` turns it
#: into `additionalProperties: false`, so the schema promises what the serializer checks
CLOSED = "x-closed"


@extend_schema_serializer(extensions={CLOSED: True})
class ClosedSerializer(serializers.Serializer):
    """A request body that names each field it takes and refuses any other, naming it (and the field the
    user likely meant), as Kubernetes' strict field validation does: DRF would drop a misspelt field
    without a word and answer as if it had not been sent."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            known = sorted(name for name, field in self.fields.items() if not field.read_only)
            unknown = sorted(str(key) for key in data if key not in self.fields)
            if unknown:
                problems = {key: [unknown_field_message(key, known)] for key in unknown}
                raise exceptions.ValidationError(problems)
        return super().to_internal_value(data)


def unknown_field_message(field: str, known: list[str]) -> str:
    hint = spelling.did_you_mean(field, known) or f"expected one of {', '.join(known)}."
    return f"Unknown field; {hint}"


def name_field(name_format: names.NameFormat, **options: Any) -> StrictCharField:
    """A Kubernetes name of `name_format` (a namespace is a DNS-1123 label; names follow their kind's rule):
    checked in the apiserver's words, its pattern and length stated in the schema."""
    return StrictCharField(
        max_length=name_format.max_length,
        validators=[validators.KubernetesNameValidator(name_format)],
        **options,
    )


class ManifestMetadataSerializer(serializers.Serializer):
    """A manifest's `metadata` as the API takes it: a name and a namespace (the API checks access there),
    labels and annotations. Subclasses narrow `name` to their kind's rule."""

    name = name_field(names.NameFormat.SUBDOMAIN)
    namespace = name_field(names.NameFormat.LABEL)
    labels = serializers.DictField(child=StrictCharField(allow_blank=True, max_length=63), required=False)
    annotations = serializers.DictField(child=StrictCharField(allow_blank=True), required=False)


class Problem(Protocol):
    """A field at fault and what is wrong with it (each app's FieldError)."""

    path: str
    message: str


class ManifestSerializer(serializers.Serializer):
    """A manifest as `kubectl apply` takes it. The schema states the envelope (kind, apiVersion, `metadata`
    per `metadata_serializer`); `check` is the kind's own validation, as the admission webhook runs it.
    Errors are keyed by dotted path (`metadata.name`, `spec.tfReplicaSpecs.Worker.replicas`) and come
    together, so one answer names every field at fault."""

    metadata_serializer: type[serializers.Serializer] = ManifestMetadataSerializer

    def check(self, manifest: dict[str, Any]) -> list[Problem]:
        raise NotImplementedError

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        manifest = dict(self.initial_data)
        problems: dict[str, list[str]] = {}
        for error in self.check(manifest):
            problems.setdefault(error.path or "non_field_errors", []).append(error.message)
        metadata = self.metadata_serializer(data=manifest.get("metadata"))
        if not metadata.is_valid():
            for path, messages in _dotted(metadata.errors, "metadata"):
                problems.setdefault(path, messages)  # the kind's own check words it better, when it has
        if problems:
            raise serializers.ValidationError(problems)
        return manifest


def metadata_field(serializer: type[serializers.Serializer]) -> serializers.DictField:
    """`metadata` as the schema shows it (`serializer`'s fields); checked in ManifestSerializer.validate,
    so its errors join the kind's under dotted paths instead of stopping them."""
    field_class = type(f"{serializer.__name__}Field", (serializers.DictField,), {})
    return extend_schema_field(serializer)(field_class)()


def _dotted(errors: Any, prefix: str) -> Iterator[tuple[str, list[str]]]:
    if isinstance(errors, dict):
        for key, value in errors.items():
            yield from _dotted(value, f"{prefix}.{key}")
    else:
        yield prefix, [str(message) for message in errors]


def query_values(request: Request) -> dict[str, str]:
    """The query parameters as a plain dict (the last value of each): given a QueryDict, DRF would read
    `?phase=` as if `phase` were absent, so an empty value would pass where the schema forbids it."""
    return {key: str(value) for key, value in request.query_params.items()}


class MirrorFilterSet(serializers.Serializer):
    """Query parameters of a mirror's list, checked like any other input: `?namespace=&name=` (exact), and
    deleted resources only with `deleted=true`. Subclasses add fields named like the model's columns."""

    namespace = name_field(names.NameFormat.LABEL, required=False)
    name = name_field(names.NameFormat.SUBDOMAIN, required=False)
    deleted = serializers.BooleanField(required=False, default=False)

    @classmethod
    def filter(cls, request: Request, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """`queryset` narrowed by the request's query parameters; a bad value is a 400 naming it."""
        params = cls(data=query_values(request))
        params.is_valid(raise_exception=True)
        values = dict(params.validated_data)
        queryset = queryset.filter(deleted_at__isnull=not values.pop("deleted"))
        return queryset.filter(**values)


class NewestFirst(CursorPagination):
    """Stable pages over a growing table, with no COUNT(*): newest first (the id breaks ties)."""

    ordering = "-id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int:
        """`?page_size=` as the schema states it: a whole number of at least 1 (above the maximum reads as
        the maximum); anything else is a 400 naming it, not silently the default."""
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise exceptions.ValidationError(
                {self.page_size_query_param: ["Must be a whole number, at least 1."]}
            )
        return min(value, self.max_page_size)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {**parameter["schema"], "minimum": 1}
        return parameters


# The answer of an operation that calls the cluster and may find it unreachable, or none configured (schema
# only; the body is the Error component, added by web.openapi).
CLUSTER_UNAVAILABLE = OpenApiResponse(
    description="The cluster did not accept the request, could not be reached, or none is configured; try "
    "again later."
)

#: The OpenAPI extension of an operation whose body carries a document checked beyond what the schema says.
DOCUMENT_BODY = "x-document-body"


def document_body(why: str) -> dict[str, str]:
    """`extend_schema(extensions=...)` of such an operation: `why` names the document, what checks it and
    where it is described. A body the schema accepts may then be a 400 naming the field of the document at
    fault, so the contract test does not hold it to "schema-valid is accepted" (every other check runs)."""
    return {DOCUMENT_BODY: why}


class ClusterUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The cluster did not accept the request; try again later."
    default_code = "cluster_unavailable"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler (REST_FRAMEWORK's EXCEPTION_HANDLER), with no configured cluster answered as an
    unreachable one: 503 with the sentence that says so, from every operation that needs the cluster,
    whichever view it is and wherever it first asks for a client."""
    if isinstance(exc, ClusterNotConfigured):
        exc = ClusterUnavailable(str(exc))
    return drf_exception_handler(exc, context)


def submit_refusal(error: ApiError) -> exceptions.APIException:
    """What the API answers when the cluster refuses a submitted manifest: a taken name or the fields the
    apiserver (or an admission webhook) named are 400s the user can fix; anything else is a 503."""
    if isinstance(error, AlreadyExists):
        return exceptions.ValidationError({"metadata.name": [str(error)]})
    if isinstance(error, Invalid):
        # An object refused for 50,000 fields is answered with the first PROBLEMS_LISTED, and a count.
        listed = error.causes[: limits.PROBLEMS_LISTED]
        causes = {cause.get("field") or "non_field_errors": [cause.get("message")] for cause in listed}
        unlisted = len(error.causes) - len(listed)
        if unlisted:
            causes["non_field_errors"] = [f"and {unlisted} more problems, not listed"]
        return exceptions.ValidationError(causes or {"non_field_errors": [str(error)]})
    return ClusterUnavailable(str(error))


class DeleteInClusterMixin:
    """DELETE deletes the resource from the cluster and answers 202; the row stays (marked deleted once the
    mirror sees it go), so deleting it again changes nothing. Viewsets say how in `delete_in_cluster`."""

    def delete_in_cluster(self, row: Any) -> None:
        raise NotImplementedError

    @extend_schema(responses={202: None, 503: CLUSTER_UNAVAILABLE})
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        row = self.get_object()  # type: ignore[attr-defined]
        if row.deleted_at is None:
            try:
                self.delete_in_cluster(row)
            except ApiError as error:
                raise ClusterUnavailable(str(error)) from error
        return Response(status=status.HTTP_202_ACCEPTED)


class MirrorViewSet(
    DeleteInClusterMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """A mirror's endpoints: the list (`filterset`'s query parameters, newest first, the JSON columns left in
    the database), one resource with its history (`detail_serializer_class`), and DELETE in the cluster.
    Subclasses list `access.permissions.NamespaceScopedMixin` first, which scopes every queryset to what the
    user may read, and name `queryset`, `serializer_class` (the list's) and `filterset`, whose fields the
    schema states as the list's parameters."""

    pagination_class = NewestFirst
    filterset: type[MirrorFilterSet]
    detail_serializer_class: type[serializers.BaseSerializer]
    #: Columns the list never shows; a model with more JSON columns adds them.
    list_deferred: tuple[str, ...] = JSON_COLUMNS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "filterset" in cls.__dict__:
            extend_schema_view(list=extend_schema(parameters=[cls.filterset]))(cls)

    def scope_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """The rows the user may read: NamespaceScopedMixin's, which a subclass lists before this base."""
        raise NotImplementedError

    def get_queryset(self) -> QuerySet[Any]:
        queryset = self.scope_queryset(super().get_queryset())
        if self.action == "list":
            return self.filterset.filter(self.request, queryset.defer(*self.list_deferred))
        return self.detail_queryset(queryset)

    def detail_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """What one resource's page (and each action on it) reads; subclasses prefetch their children."""
        return queryset.prefetch_related("history")

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        return super().get_serializer_class() if self.action == "list" else self.detail_serializer_class


def submit_schema(manifest_serializer: type[ManifestSerializer], document: str) -> Any:
    """The schema of a ManifestViewSet's POST: `manifest_serializer` in and out (202), 503 when the cluster
    does not take it; `document` says what checks the manifest's spec beyond the schema (`document_body`)."""
    return extend_schema(
        request=manifest_serializer,
        responses={202: manifest_serializer, 503: CLUSTER_UNAVAILABLE},
        extensions=document_body(document),
    )


class ManifestViewSet(MirrorViewSet):
    """A mirror whose POST submits a manifest to the cluster: checked by `manifest_serializer_class` (the
    kind's own validation, as its admission webhook runs it), then `submit`; 202 with the object as the
    cluster stored it (the row appears once the controller sees it). A refusal the user can fix is a 400
    naming the field (`submit_refusal`). Subclasses take JSON and YAML bodies only (`parser_classes =
    web.bodies.DOCUMENT_PARSERS`: form encodings cannot carry a manifest); the schema states the
    manifest in and out and what checks its spec beyond the schema (`submitted_document`)."""

    manifest_serializer_class: type[ManifestSerializer]
    #: What the manifest's spec is and what checks it (`document_body`).
    submitted_document: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "manifest_serializer_class" in cls.__dict__:
            schema = submit_schema(cls.manifest_serializer_class, cls.submitted_document)
            extend_schema_view(create=schema)(cls)

    def submit(self, manifest: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        return self.manifest_serializer_class if self.action == "create" else super().get_serializer_class()

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.manifest_serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            created = self.submit(serializer.validated_data)
        except ApiError as error:
            raise submit_refusal(error) from error
        return Response(created, status=status.HTTP_202_ACCEPTED)
