"""What every dashboard view shares: sign-in, htmx fragments, and manifests rebuilt from mirror rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.urls import reverse_lazy

from kube.models import MirroredResource

LOGIN_URL = reverse_lazy("dashboard:login")
# How often a running job's or sweep's status fragment asks for news, and a list's table.
POLL_SECONDS = 2
LIST_POLL_SECONDS = 5

V = TypeVar("V", bound=Callable[..., HttpResponseBase])


def page(view: V) -> V:
    """A dashboard page: signed-in users only; others go to the dashboard's sign-in page and come back."""
    return login_required(view, login_url=LOGIN_URL)


def choices(form: forms.Form, name: str, options: list[tuple[str, str]]) -> None:
    """Set a choice field's options at request time (namespaces depend on the user)."""
    field = form.fields[name]
    assert isinstance(field, forms.ChoiceField)
    field.choices = options


def is_fragment(request: HttpRequest) -> bool:
    """An htmx request (a poll or a lazy load) wants the fragment, not the whole page."""
    return request.headers.get("HX-Request") == "true"


def manifest_of(row: MirroredResource, api_version: str, kind: str) -> dict[str, Any]:
    """The resource as the user wrote it (after admission), for the YAML tab and for resubmitting."""
    metadata: dict[str, Any] = {"name": row.name, "namespace": row.namespace}
    if row.labels:
        metadata["labels"] = row.labels
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": row.spec}
