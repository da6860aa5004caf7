"""What the pages of the mirrored resources share: the filtered list, newest first (jobs, TrainJobs,
sweeps); the page a submit leads to, by name; and Stop, which deletes the resource from the cluster (and
TensorBoards')."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from access.scopes import request_scope
from dashboard.access import readable, require_editor, visible_namespaces
from dashboard.cluster import cluster_client
from dashboard.pagination import BadCursor, newest_first
from kube.errors import ApiError
from kube.models import MirroredResource

from .common import LIST_POLL_SECONDS, POLL_SECONDS, choices, is_fragment, page


def name_prefix_field() -> forms.CharField:
    """A list's `name` filter (ListFilters matches it as a prefix)."""
    return forms.CharField(required=False, max_length=253, label="Name starts with")


class ListFilters(forms.Form):
    """A list's filters, kept in the URL: the namespaces the user may read, every other field matched
    exactly (`columns` maps a field to its column where the names differ), `name` as a prefix and, where
    the form has the field, `deleted` rows instead of live ones.

    A name matches whatever the case of the prefix typed ("MNIST" finds mnist-1; Kubernetes names are
    lowercase), served on PostgreSQL by an UPPER(name) pattern index (jobs 0001, trainer and hyperparam
    0004)."""

    namespace = forms.ChoiceField(required=False)
    columns: dict[str, str] = {}

    def __init__(self, data: Any, namespaces: list[str]) -> None:
        super().__init__(data)
        choices(self, "namespace", [("", "all namespaces")] + [(n, n) for n in namespaces])

    def filter(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """`queryset` narrowed by the valid filters (an invalid form narrows by none; the page names the
        value at fault)."""
        values = self.cleaned_data if self.is_valid() else {}
        queryset = queryset.filter(deleted_at__isnull=not values.get("deleted"))
        for name, value in values.items():
            if name in ("deleted", "name") or not value:
                continue
            queryset = queryset.filter(**{self.columns.get(name, name): value})
        if values.get("name"):
            queryset = queryset.filter(name__istartswith=values["name"])
        return queryset


@dataclass(frozen=True)
class ListPage:
    """One resource's list page (`view`): `templates`/list.html, or its `_table.html` for htmx's poll,
    which refreshes the table while `is_live` holds for a row shown; `context` adds to what it shows."""

    model: type[MirroredResource]
    filters: type[ListFilters]
    columns: tuple[str, ...]
    url_name: str
    templates: str
    is_live: Callable[[Any], bool]
    context: Mapping[str, Any] = field(default_factory=dict)

    def view(self) -> Callable[[HttpRequest], HttpResponse]:
        return page(self.render)

    def render(self, request: HttpRequest) -> HttpResponse:
        filters = self.filters(request.GET, visible_namespaces(request, self.model))
        rows = filters.filter(readable(request, self.model._default_manager.only(*self.columns)))
        try:
            found = newest_first(rows, "created_at", request.GET.get("after"))
        except BadCursor:
            messages.error(request, "That page link is out of date; here is the first page.")
            return redirect(reverse(self.url_name))
        live = any(self.is_live(row) for row in found.rows)
        context = {**self.context, "filters": filters, "page": found, "live": live}
        context.setdefault("poll_seconds", LIST_POLL_SECONDS)
        template = "_table.html" if is_fragment(request) else "list.html"
        return render(request, f"{self.templates}/{template}", context)


def by_name(
    request: HttpRequest, rows: QuerySet[Any], url_name: str, *, namespace: str, kind: str, name: str
) -> HttpResponse:
    """The page of the resource a user named (after a submit): the newest of `rows` with that namespace
    and name once the mirror has it (a live one before a deleted one), else a waiting page that polls
    until it comes. Outside the user's namespaces, not found."""
    if not request_scope(request).can_read(namespace):
        return render(request, "dashboard/not_found.html", status=404)
    rows = rows.filter(namespace=namespace, name=name)
    row = rows.order_by("deleted_at", "-created_at", "-id").only("id").first()
    if row is None:
        context = {"namespace": namespace, "kind": kind, "name": name, "poll_seconds": POLL_SECONDS}
        return render(request, "dashboard/waiting.html", context)
    url = reverse(url_name, args=[row.pk])
    if is_fragment(request):
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


def stop(
    request: HttpRequest, row: MirroredResource, delete: Callable[[], bool], *, name: str, back: str,
    consequence: str = "",
) -> HttpResponse:  # fmt: skip
    """Stop `row` (`name` says which: "TFJob mnist"): `delete` deletes it from the cluster and says whether
    it was still there; then back to `back`, with a message saying which (and the `consequence`)."""
    require_editor(request, row.namespace)
    try:
        cluster_client()
        deleted = delete()
    except ApiError as error:
        messages.error(request, f"The cluster did not accept the stop: {error}")
    else:
        if deleted:
            messages.success(request, f"{name} is being stopped{f': {consequence}' if consequence else ''}.")
        else:
            messages.info(request, f"{name} was already gone from the cluster.")
    return redirect(back)
