"""/api/tensorboards/: list and read the mirror of TensorBoards; spawn, open and stop them in the cluster.

POST `{namespace, workflow}` answers 201 with the new instance or 200 with the one the workflow already
has; errors are specific (404 source not found, 422 no readable `tensorboard` artifacts, 409 name taken).
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import exceptions, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from access.models import Role
from access.permissions import NamespacePermission, NamespaceScopedMixin
from access.scopes import request_scope
from kube.client import get_client
from kube.errors import ApiError, InvalidName, NotFound
from kube.models import JSON_COLUMNS
from tensorboard import actions
from tensorboard.conf import conf_from_settings
from tensorboard.errors import SpawnError
from tensorboard.manifests import url
from tensorboard.models import Tensorboard
from tensorboard.status import PENDING, last_access
from web.api import CLUSTER_UNAVAILABLE, ClusterUnavailable, MirrorViewSet
from web.bodies import DOCUMENT_PARSERS

from .filters import TensorboardFilterSet
from .serializers import (
    SPAWN_REQUEST,
    SpawnedSerializer,
    SpawnSerializer,
    TensorboardDetailSerializer,
    TensorboardSerializer,
)

SpawnErrorSerializer = inline_serializer(
    name="SpawnError",
    fields={"code": serializers.CharField(), "detail": serializers.CharField()},
)


def spawn_error(description: str) -> OpenApiResponse:
    return OpenApiResponse(SpawnErrorSerializer, description=description)


class OpenPermission(NamespacePermission):
    """Opening an instance is reading it: a viewer may open what they may see."""

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        namespace = getattr(obj, "namespace", None)
        if namespace is None or not request_scope(request).can_read(namespace):
            raise exceptions.NotFound()
        return request_scope(request).allows(namespace, Role.VIEWER)


class TensorboardViewSet(NamespaceScopedMixin, MirrorViewSet):
    """TensorBoards as the cluster last reported them. POST spawns one for a workflow (idempotent); DELETE
    stops it; POST …/open/ records that it was opened (it is culled after idleTimeout without that)."""

    queryset = Tensorboard.objects.all()
    serializer_class = TensorboardSerializer
    detail_serializer_class = TensorboardDetailSerializer
    filterset = TensorboardFilterSet
    # A list shows the logdirs, which the spec holds.
    list_deferred = tuple(column for column in JSON_COLUMNS if column != "spec")
    # `logdirs` is a list of objects, which form encodings cannot carry: JSON only, as the schema says.
    parser_classes = DOCUMENT_PARSERS

    def get_serializer_class(self) -> type[Any]:
        return SpawnSerializer if self.action == "create" else super().get_serializer_class()

    @extend_schema(
        request=SPAWN_REQUEST,
        responses={
            201: SpawnedSerializer,
            200: SpawnedSerializer,
            404: spawn_error("The source was not found in the namespace."),
            409: spawn_error("The name is taken by another TensorBoard."),
            422: spawn_error("The source has no usable `tensorboard` artifacts."),
            503: CLUSTER_UNAVAILABLE,
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = SpawnSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        values = serializer.validated_data
        conf = conf_from_settings()
        common = {
            "namespace": values["namespace"],
            "now": timezone.now(),
            "idle_timeout": values.get("idleTimeout"),
        }
        try:
            if "logdirs" in values:
                spawned = actions.spawn_logdirs(
                    get_client(), conf, name=values["name"], entries=values["logdirs"], **common
                )
            else:
                spawned = actions.spawn(
                    get_client(), conf, kind=values["kind"], source=values["workflow"], **common
                )
        except SpawnError as error:
            return Response(error.as_dict(), status=error.status)
        except InvalidName as error:
            # The serializer refuses bad names first; this is kube's own guard, kept as a 400 too.
            raise exceptions.ValidationError({error.field: error.problems}) from error
        except ApiError as error:
            raise ClusterUnavailable(str(error)) from error
        body = spawned_response(spawned, conf)
        return Response(body, status=status.HTTP_201_CREATED if spawned.created else status.HTTP_200_OK)

    def delete_in_cluster(self, tensorboard: Tensorboard) -> None:
        actions.stop(get_client(), tensorboard.namespace, tensorboard.name, tensorboard.uid)

    @extend_schema(request=None, responses={200: SpawnedSerializer, 503: CLUSTER_UNAVAILABLE})
    @action(detail=True, methods=["post"], permission_classes=[OpenPermission])
    def open(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Record an opening (lastAccess) and answer where the instance is served."""
        tensorboard = self.get_object()
        if tensorboard.deleted_at is not None:
            raise exceptions.NotFound("This TensorBoard was deleted; spawn it again.")
        try:
            obj = actions.open_tensorboard(
                get_client(), tensorboard.namespace, tensorboard.name, timezone.now()
            )
        except NotFound:
            raise exceptions.NotFound("This TensorBoard is being deleted; spawn it again.") from None
        except ApiError as error:
            raise ClusterUnavailable(str(error)) from error
        return Response(spawned_response(actions.Spawned(obj, False, []), conf_from_settings()))


def spawned_response(spawned: actions.Spawned, conf: Any) -> dict[str, Any]:
    """The instance as the cluster holds it (the row may not exist yet), with the URL it is served at."""
    obj = spawned.tensorboard
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    reference = spec.get("workflowRef") or {}
    obj_status = obj.get("status") or {}
    row_id = Tensorboard.objects.filter(uid=metadata.get("uid")).values_list("id", flat=True).first()
    return {
        "id": row_id,
        "uid": metadata.get("uid"),
        "namespace": metadata.get("namespace"),
        "name": metadata.get("name"),
        "phase": obj_status.get("phase") or PENDING,
        "url": obj_status.get("url") or url(conf, metadata["namespace"], metadata["name"]),
        "source_kind": reference.get("kind") or ("Workflow" if reference else ""),
        "source_name": reference.get("name") or "",
        "logdirs": spec.get("logdirs") or [],
        "last_access": last_access(obj),
        "created": spawned.created,
        "warnings": spawned.warnings,
    }
