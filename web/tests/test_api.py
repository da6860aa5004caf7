"""The shared REST answers: a refused manifest, and DELETE as a deletion in the cluster."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from rest_framework import exceptions

from kube.errors import AlreadyExists, Invalid, ServerError
from web.api import ClusterUnavailable, DeleteInClusterMixin, submit_refusal


def test_a_taken_name_is_a_400_on_metadata_name():
    answer = submit_refusal(AlreadyExists('sweeps.argoml.io "a" already exists'))
    assert isinstance(answer, exceptions.ValidationError)
    assert answer.detail == {"metadata.name": ['sweeps.argoml.io "a" already exists']}


def test_an_invalid_manifest_is_a_400_naming_every_field_the_apiserver_named():
    body = {"details": {"causes": [{"field": "spec.x", "message": "bad"}, {"message": "also bad"}]}}
    answer = submit_refusal(Invalid("invalid", body=body))
    assert isinstance(answer, exceptions.ValidationError)
    assert answer.detail == {"spec.x": ["bad"], "non_field_errors": ["also bad"]}


def test_an_invalid_manifest_without_causes_is_a_400_with_the_message():
    answer = submit_refusal(Invalid("the object is invalid"))
    assert answer.detail == {"non_field_errors": ["the object is invalid"]}


def test_any_other_refusal_is_a_503():
    answer = submit_refusal(ServerError("etcd is down"))
    assert isinstance(answer, ClusterUnavailable)
    assert (answer.status_code, answer.detail) == (503, "etcd is down")


#: The mixin reads nothing from the request.
NO_REQUEST: Any = None


class FakeViewSet(DeleteInClusterMixin):
    def __init__(self, row: Any, error: Exception | None = None) -> None:
        self.row, self.error = row, error
        self.deleted: list[Any] = []

    def get_object(self) -> Any:
        return self.row

    def delete_in_cluster(self, row: Any) -> None:
        if self.error:
            raise self.error
        self.deleted.append(row)


def test_delete_deletes_a_live_resource_in_the_cluster_and_answers_202():
    view = FakeViewSet(SimpleNamespace(deleted_at=None))
    assert view.destroy(NO_REQUEST).status_code == 202
    assert view.deleted == [view.row]


def test_delete_of_a_resource_already_deleted_asks_the_cluster_nothing():
    view = FakeViewSet(SimpleNamespace(deleted_at="2025-01-01T00:00:00Z"))
    assert view.destroy(NO_REQUEST).status_code == 202
    assert view.deleted == []


def test_delete_answers_503_when_the_cluster_does_not_take_it():
    view = FakeViewSet(SimpleNamespace(deleted_at=None), error=ServerError("etcd is down"))
    with pytest.raises(ClusterUnavailable, match="etcd is down"):
        view.destroy(NO_REQUEST)
