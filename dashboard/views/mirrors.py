"""What the pages of the mirrored resources share: each kind's `MirrorPages` (jobs, TrainJobs, sweeps: the
filtered list, newest first; a row's page with its polled status fragment; its Events; Stop, which deletes
the resource from the cluster), the page a submit leads to, by name, and Stop for any row (TensorBoards')."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from django import forms
from django.contrib import messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from access.scopes import request_scope
from dashboard.access import get_readable, readable, require_editor, visible_namespaces
from dashboard.cluster import cluster_client
from dashboard.pagination import BadCursor, newest_first
from kube.errors import ApiError
from kube.models import MirroredResource

from . import events
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


M = TypeVar("M", bound=MirroredResource)


@dataclass(frozen=True)
class MirrorPages(Generic[M]):
    """One mirrored resource's pages, named by the dashboard's conventions from `name` ("job"): its list
    (`dashboard:<name>s`), a row's page (`dashboard:<name>`, at `url(row)`) with its status fragment, its
    Events and Stop.

    The list renders `dashboard/<name>s/list.html`, or its `_table.html` for htmx's poll, which refreshes
    the table while `is_live` holds for a row shown; `context` adds to what it shows."""

    model: type[M]
    name: str
    filters: type[ListFilters]
    columns: tuple[str, ...]
    is_live: Callable[[M], bool]
    context: Mapping[str, Any] = field(default_factory=dict)

    def list_view(self) -> Callable[[HttpRequest], HttpResponse]:
        return page(self.render_list)

    def render_list(self, request: HttpRequest) -> HttpResponse:
        filters = self.filters(request.GET, visible_namespaces(request, self.model))
        rows = filters.filter(readable(request, self.model._default_manager.only(*self.columns)))
        try:
            found = newest_first(rows, "created_at", request.GET.get("after"))
        except BadCursor:
            messages.error(request, "That page link is out of date; here is the first page.")
            return redirect(reverse(f"dashboard:{self.name}s"))
        live = any(self.is_live(row) for row in found.rows)
        context = {**self.context, "filters": filters, "page": found, "live": live}
        context.setdefault("poll_seconds", LIST_POLL_SECONDS)
        template = "_table.html" if is_fragment(request) else "list.html"
        return render(request, f"dashboard/{self.name}s/{template}", context)

    def row(self, request: HttpRequest, pk: int) -> M:
        """Row `pk`, when the user may read its namespace (else 404)."""
        return get_readable(request, self.model._default_manager.all(), pk=pk)

    def url(self, row: M) -> str:
        return reverse(f"dashboard:{self.name}", args=[row.pk])

    def status_context(self, row: M, *, finished: bool, **shown: Any) -> dict[str, Any]:
        """What the row's status fragment (`dashboard/_status.html`, extended) shows besides `shown`: the row
        (as `job`, which the conditions and history partial reads too), the `resource` it is (the fragment's
        ids and the URL it polls), its history, and whether it polls (`live`: neither deleted nor
        `finished`)."""
        return {
            "job": row,
            "resource": self.name,
            **shown,
            "history": list(row.history.all()),  # type: ignore[attr-defined]
            "live": row.deleted_at is None and not finished,
            "poll_seconds": POLL_SECONDS,
        }

    def status_or_page(
        self, request: HttpRequest, row: M, status: dict[str, Any], page_only: Callable[[], dict[str, Any]]
    ) -> HttpResponse:
        """While htmx polls, the status fragment alone (`_status.html`, showing `status`); else the row's page
        (`detail.html`): `status`, whether the user may write in its namespace, and `page_only()`, read only
        for the page (its manifest, say)."""
        if is_fragment(request):
            return render(request, f"dashboard/{self.name}s/_status.html", status)
        context = {**status, "can_write": request_scope(request).can_write(row.namespace), **page_only()}
        return render(request, f"dashboard/{self.name}s/detail.html", context)

    def events_view(self) -> Callable[[HttpRequest, int], HttpResponse]:
        """The row's Kubernetes Events, a lazy fragment (`events.events_context`)."""

        @page
        def view(request: HttpRequest, pk: int) -> HttpResponse:
            row = self.row(request, pk)
            context = events.events_context(row.namespace, row.uid)
            return render(request, "dashboard/jobs/_events.html", context)

        return view

    def stop_view(
        self, delete: Callable[[M], bool], *, title: Callable[[M], str], consequence: str
    ) -> Callable[[HttpRequest, int], HttpResponse]:
        """Stop (`stop_view`) for a row of this resource, back to the row's page."""
        return stop_view(self.row, delete, title=title, back=self.url, consequence=consequence)


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


def stop_view(
    row_of: Callable[[HttpRequest, int], M], delete: Callable[[M], bool], *, title: Callable[[M], str],
    back: Callable[[M], str], consequence: str = "",
) -> Callable[[HttpRequest, int], HttpResponse]:  # fmt: skip
    """The POST behind a resource's Stop button, for an editor of its namespace: `delete` deletes the row
    `row_of` reads from the cluster and says whether it was still there; then back to `back(row)`, with a
    message saying which, naming the row as `title(row)` ("TFJob mnist") and the `consequence`."""

    @page
    @require_POST
    def view(request: HttpRequest, pk: int) -> HttpResponse:
        row = row_of(request, pk)
        require_editor(request, row.namespace)
        try:
            cluster_client()
            deleted = delete(row)
        except ApiError as error:
            messages.error(request, f"The cluster did not accept the stop: {error}")
        else:
            if deleted:
                said = f": {consequence}" if consequence else ""
                messages.success(request, f"{title(row)} is being stopped{said}.")
            else:
                messages.info(request, f"{title(row)} was already gone from the cluster.")
        return redirect(back(row))

    return view
