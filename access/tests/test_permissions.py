"""The namespace permission: lists, objects and request bodies never reach an ungranted namespace."""

from dataclasses import dataclass

import pytest
from rest_framework import viewsets
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory, force_authenticate

from access.models import NamespaceGrant, Role
from access.permissions import NamespaceScopedMixin

pytestmark = pytest.mark.django_db


@dataclass
class Resource:
    namespace: str
    name: str


RESOURCES = {"mine": Resource("team-a", "mine"), "theirs": Resource("team-b", "theirs")}


class ResourceViewSet(NamespaceScopedMixin, viewsets.ViewSet):
    """A stand-in for any namespaced API: retrieve/update/destroy check the object, create the body."""

    def get_object(self, pk):
        obj = RESOURCES[pk]
        self.check_object_permissions(self.request, obj)
        return obj

    def retrieve(self, request, pk=None):
        return Response({"name": self.get_object(pk).name})

    def partial_update(self, request, pk=None):
        return Response({"name": self.get_object(pk).name})

    def destroy(self, request, pk=None):
        self.get_object(pk)
        return Response(status=204)

    def create(self, request):
        return Response(request.data, status=201)


factory = APIRequestFactory()


def call(user, method, pk=None, data=None):
    actions = {"get": "retrieve", "patch": "partial_update", "delete": "destroy", "post": "create"}
    view = ResourceViewSet.as_view({method: actions[method]})
    path = f"/resources/{pk}/" if pk else "/resources/"
    request = getattr(factory, method)(path, data, format="json")
    if user is not None:
        force_authenticate(request, user=user)
    return view(request, pk=pk) if pk else view(request)


@pytest.fixture
def viewer(django_user_model):
    user = django_user_model.objects.create_user("viewer")
    NamespaceGrant.objects.create(user=user, namespace="team-a", role=Role.VIEWER)
    return user


@pytest.fixture
def editor(django_user_model):
    user = django_user_model.objects.create_user("editor")
    NamespaceGrant.objects.create(user=user, namespace="team-a", role=Role.EDITOR)
    return user


def test_anonymous_requests_are_refused():
    assert call(None, "get", "mine").status_code in (401, 403)


def test_a_viewer_reads_in_a_granted_namespace(viewer):
    assert call(viewer, "get", "mine").status_code == 200


def test_an_object_in_an_ungranted_namespace_is_not_found(editor):
    assert call(editor, "get", "theirs").status_code == 404
    assert call(editor, "delete", "theirs").status_code == 404


def test_a_viewer_may_not_change_or_delete(viewer):
    assert call(viewer, "patch", "mine", {"x": 1}).status_code == 403
    assert call(viewer, "delete", "mine").status_code == 403


def test_an_editor_may_change_and_delete(editor):
    assert call(editor, "patch", "mine", {"x": 1}).status_code == 200
    assert call(editor, "delete", "mine").status_code == 204


def test_creating_in_an_ungranted_namespace_is_refused(editor):
    response = call(editor, "post", data={"namespace": "team-b", "name": "x"})
    assert response.status_code == 403
    assert "team-b" in str(response.data["detail"])


def test_creating_through_a_manifest_namespace_is_checked_too(editor):
    response = call(editor, "post", data={"metadata": {"namespace": "team-b", "name": "x"}})
    assert response.status_code == 403


def test_a_viewer_may_not_create(viewer):
    assert call(viewer, "post", data={"namespace": "team-a"}).status_code == 403


def test_an_editor_creates_in_a_granted_namespace(editor):
    assert call(editor, "post", data={"metadata": {"namespace": "team-a"}}).status_code == 201


def test_disagreeing_namespaces_in_one_body_are_an_error(editor):
    response = call(editor, "post", data={"namespace": "team-a", "metadata": {"namespace": "team-b"}})
    assert response.status_code == 400
    assert "namespace" in response.data


def test_an_update_may_not_move_a_resource_to_another_namespace(editor):
    response = call(editor, "patch", "mine", {"namespace": "team-b"})
    assert response.status_code == 400


def test_the_namespaces_endpoint_lists_the_callers_reach(client, editor, django_user_model):
    NamespaceGrant.objects.create(user=editor, namespace="team-c", role=Role.VIEWER)
    client.force_login(editor)
    assert client.get("/api/namespaces/").json() == {
        "everywhere": False,
        "namespaces": [{"namespace": "team-a", "role": "editor"}, {"namespace": "team-c", "role": "viewer"}],
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"namespace": {}}, "namespace"),
        ({"namespace": ["team-a"]}, "namespace"),
        ({"metadata": {"namespace": {}}}, "metadata.namespace"),
        ({"namespace": "team-a", "metadata": {"namespace": 7}}, "metadata.namespace"),
    ],
)
def test_a_namespace_that_is_not_a_string_is_a_400_naming_the_field(body, field):
    from rest_framework.exceptions import ValidationError

    from access.permissions import namespace_in_body

    with pytest.raises(ValidationError) as raised:
        namespace_in_body(body)
    assert field in raised.value.detail


def test_the_namespace_of_a_body_is_the_one_it_names_in_either_place():
    from access.permissions import namespace_in_body

    assert namespace_in_body({"namespace": "team-a", "metadata": {"namespace": "team-a"}}) == "team-a"
    assert namespace_in_body({"metadata": {"namespace": "team-b"}}) == "team-b"
    assert namespace_in_body({"namespace": ""}) is None
