"""TensorBoards: the list with phase and source; Open records the visit (so culling keeps the instance)
and goes to its URL, with a one-time ticket for the TensorBoard origin's proxy; Stop deletes it; the
"Open in TensorBoard" buttons of a source's page spawn its instance (`spawn_for_source`). All through
tensorboard.actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.base_user import AbstractBaseUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from access.scopes import request_scope
from dashboard import tensorboardpass
from dashboard.access import get_readable, readable, require_editor, visible_namespaces
from dashboard.cluster import cluster_client
from dashboard.pagination import BadCursor, newest_first
from jobs.frameworks import kinds
from kube.errors import ApiError, NotFound
from tensorboard import actions
from tensorboard.conf import conf_from_settings
from tensorboard.errors import SpawnError
from tensorboard.manifests import url as served_url
from tensorboard.models import Tensorboard
from tensorboard.status import FAILED, PENDING, READY

from . import mirrors
from .common import choices, page
from .mirrors import M, MirrorPages

LIST_COLUMNS = ("id", "uid", "namespace", "name", "phase", "url", "source_kind", "source_name",
                "last_access", "created_at", "deleted_at")  # fmt: skip


class TensorboardFilters(forms.Form):
    namespace = forms.ChoiceField(required=False)
    phase = forms.ChoiceField(
        required=False, choices=[("", "any phase")] + [(p, p) for p in (PENDING, READY, FAILED)]
    )

    def __init__(self, data: Any, namespaces: list[str]) -> None:
        super().__init__(data)
        choices(self, "namespace", [("", "all namespaces")] + [(n, n) for n in namespaces])


@page
def tensorboard_list(request: HttpRequest) -> HttpResponse:
    scope = request_scope(request)
    filters = TensorboardFilters(request.GET, visible_namespaces(request, Tensorboard))
    rows = readable(request, Tensorboard.objects.only(*LIST_COLUMNS)).filter(deleted_at__isnull=True)
    values = filters.cleaned_data if filters.is_valid() else {}
    for field in ("namespace", "phase"):
        if values.get(field):
            rows = rows.filter(**{field: values[field]})
    try:
        found = newest_first(rows, "created_at", request.GET.get("after"))
    except BadCursor:
        return redirect("dashboard:tensorboards")
    writable = {row.namespace for row in found.rows if scope.can_write(row.namespace)}
    context = {"filters": filters, "page": found, "writable": writable, "job_kinds": kinds()}
    return render(request, "dashboard/tensorboards/list.html", context)


@page
@require_POST
def tensorboard_open(request: HttpRequest, pk: int) -> HttpResponse:
    """Opening is reading: a viewer may open what they see (as the API's open action)."""
    tensorboard = get_readable(request, Tensorboard.objects.filter(deleted_at__isnull=True), pk=pk)
    conf = conf_from_settings()
    try:
        obj = actions.open_tensorboard(
            cluster_client(), tensorboard.namespace, tensorboard.name, timezone.now()
        )
    except NotFound:
        messages.error(request, f"TensorBoard {tensorboard.name} is being deleted; open its source again.")
        return redirect("dashboard:tensorboards")
    except ApiError as error:
        messages.error(request, f"The cluster did not answer: {error}")
        return redirect("dashboard:tensorboards")
    if not conf.base_url:  # the in-cluster URL: no proxy of ours, nothing to authorize
        return redirect(
            (obj.get("status") or {}).get("url") or served_url(conf, tensorboard.namespace, tensorboard.name)
        )
    # The proxy, on the TensorBoard origin: it never sees our session, so the redirect carries a one-time
    # ticket it exchanges for a pass to this instance alone (dashboard/tensorboardpass.py).
    assert isinstance(request.user, AbstractBaseUser)  # @page: signed in
    ticket = tensorboardpass.issue_ticket(
        tensorboardpass.bearer_of(request.user), tensorboard.namespace, tensorboard.name
    )
    target = served_url(conf, tensorboard.namespace, tensorboard.name)
    response = redirect(f"{target}?{urlencode({tensorboardpass.TICKET_PARAMETER: ticket})}")
    response["Referrer-Policy"] = "no-referrer"
    return response


def _tensorboard(request: HttpRequest, pk: int) -> Tensorboard:
    return get_readable(request, Tensorboard.objects.all(), pk=pk)


tensorboard_stop = mirrors.stop_view(
    _tensorboard, lambda board: actions.stop(cluster_client(), board.namespace, board.name, board.uid),
    title=lambda board: f"TensorBoard {board.name}", back=lambda _: reverse("dashboard:tensorboards"),
)  # fmt: skip


def source_view(
    pages: MirrorPages[M], *, kind: Callable[[M], str], contents: Callable[[M], str],
    refusal: Callable[[M], str] = lambda _: "",
) -> Callable[[HttpRequest, int], HttpResponse]:  # fmt: skip
    """The POST behind the TensorBoard button of a page of `pages` (`spawn_for_source`): `kind(row)` is the
    source's kind, `contents(row)` what the instance shows, and `refusal(row)` why the button is disabled
    ("": it may be pressed), said again here to whoever posts anyway."""

    @page
    @require_POST
    def view(request: HttpRequest, pk: int) -> HttpResponse:
        row = pages.row(request, pk)
        back = pages.url(row)
        refused = refusal(row)
        if refused:
            require_editor(request, row.namespace)
            messages.error(request, f"No TensorBoard for {row.name}: {refused}")
            return redirect(back)
        return spawn_for_source(
            request,
            namespace=row.namespace,
            kind=kind(row),
            source=row.name,
            back=back,
            contents=contents(row),
        )

    return view


def spawn_for_source(
    request: HttpRequest, *, namespace: str, kind: str, source: str, back: str, contents: str
) -> HttpResponse:
    """Spawn (or refresh) the source's instance through the API's own action, then go to the TensorBoards of
    the namespace. A refusal (no artifacts, no log directory configured for the kind, the cluster saying no)
    is a message on the source's page at `back`. `contents` says what the instance shows ("every trial of
    mnist")."""
    require_editor(request, namespace)
    try:
        spawned = actions.spawn(
            cluster_client(), conf_from_settings(), namespace=namespace, kind=kind, source=source,
            now=timezone.now(),
        )  # fmt: skip
    except SpawnError as error:
        messages.error(request, f"No TensorBoard for {source}: {error.message}")
        return redirect(back)
    except ApiError as error:
        messages.error(request, f"The cluster did not accept the TensorBoard: {error}")
        return redirect(back)
    verb = "Started" if spawned.created else "Refreshed"
    name = spawned.tensorboard["metadata"]["name"]
    listed = "; it is listed here as soon as the cluster reports it" if spawned.created else ""
    messages.success(request, f"{verb} TensorBoard {name} with {contents}{listed}.")
    for warning in spawned.warnings:
        messages.warning(request, warning)
    return redirect(f"{reverse('dashboard:tensorboards')}?{urlencode({'namespace': namespace})}")
