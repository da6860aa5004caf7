"""The authorizing TensorBoard proxy, served on the TensorBoard origin only (TENSORBOARD_BASE_URL's host,
never the dashboard's: argoml_site/tensorboardorigin.py): `<TENSORBOARD_PATH_PREFIX>/<namespace>/<name>/
<path>` serves that instance's TensorBoard through the Kubernetes API server's service proxy
(tensorboard/proxy.py). TensorBoard serves under the same path (`--path_prefix`), so its relative URLs and
its `data/…` requests come back here too.

Why another origin: a TensorBoard's pages are a tenant's content (its plugins render what the event
files say; a namespace editor chooses the pod's image). On the dashboard's origin a script there would act
as whoever opened it; on an origin of its own it can reach nothing of the dashboard's.

Who may read: the bearer of this instance's pass (dashboard/tensorboardpass.py: a cookie scoped to the
instance's path, given for a one-time ticket from the dashboard's Open), who is still an active user and
still a viewer of the namespace, on an instance the mirror knows and that is not being deleted. The
dashboard's session is never read here. No pass: 403 saying to open it from the dashboard; a pass but no
grant (or no such instance): 404.

CSRF: TensorBoard posts its data queries without a token, so the view is exempt from Django's check and
makes its own: a POST must come from this origin (`Origin`, or `Sec-Fetch-Site: same-origin`). Only GET,
HEAD and POST are passed on (TensorBoard uses nothing else).
"""

from __future__ import annotations

from django.conf import settings
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseRedirect,
    StreamingHttpResponse,
)
from django.shortcuts import render
from django.utils.encoding import escape_uri_path
from django.views.decorators.csrf import csrf_exempt

import limits
from access.scopes import filter_readable, scope_for
from dashboard import tensorboardpass
from dashboard.cluster import cluster_client
from kube.errors import ApiError
from tensorboard import manifests, proxy
from tensorboard.conf import conf_from_settings
from tensorboard.models import Tensorboard

METHODS = ("GET", "HEAD", "POST")
#: How soon the "not reachable" page asks the browser to try again (an instance still starting).
RETRY_SECONDS = 5
TEXT = "text/plain; charset=utf-8"
OPEN_FROM_THE_DASHBOARD = "Open this TensorBoard from the dashboard's TensorBoards page."


def is_same_origin(request: HttpRequest) -> bool:
    """The request came from a page of this origin: its Origin header names it, or (a browser that sent
    none) Fetch Metadata says so."""
    origin = request.headers.get("Origin")
    if origin:
        return origin == f"{request.scheme}://{request.get_host()}"
    return request.headers.get("Sec-Fetch-Site") == "same-origin"


def refused(message: str) -> HttpResponse:
    return HttpResponse(f"{message} {OPEN_FROM_THE_DASHBOARD}\n", status=403, content_type=TEXT)


def not_found() -> HttpResponse:
    return HttpResponse("No such TensorBoard among those you can read.\n", status=404, content_type=TEXT)


def unavailable(request: HttpRequest, tensorboard: Tensorboard, status: int, message: str) -> HttpResponse:
    response = render(
        request,
        "dashboard/tensorboards/unreachable.html",
        {"tb": tensorboard, "message": message, "retry_seconds": RETRY_SECONDS},
        status=status,
    )
    if status in (502, 503, 504):
        response["Retry-After"] = str(RETRY_SECONDS)
    return response


def redeem(request: HttpRequest, namespace: str, name: str, prefix: str, ticket: str) -> HttpResponse:
    """A ticket from the dashboard's Open becomes this instance's pass, and the browser is sent to the
    same URL without it (so it is in no history, bookmark or Referer)."""
    try:
        bearer, nonce = tensorboardpass.read_ticket(ticket, namespace, name)
        tensorboardpass.holder(bearer)
    except tensorboardpass.Refused as error:
        return refused(f"This link does not open the TensorBoard: {error.message}")
    if not tensorboardpass.claim_once(nonce):
        return refused("This link does not open the TensorBoard: it was used already.")
    query = request.GET.copy()
    del query[tensorboardpass.TICKET_PARAMETER]
    response = HttpResponseRedirect(
        escape_uri_path(request.path) + (f"?{query.urlencode()}" if query else "")
    )
    response.set_cookie(
        tensorboardpass.COOKIE_NAME,
        tensorboardpass.issue_pass(bearer, namespace, name),
        max_age=settings.TENSORBOARD_PASS_SECONDS,
        path=f"{prefix}/",
        secure=settings.SESSION_COOKIE_SECURE or request.is_secure(),
        httponly=True,
        samesite="Lax",
    )
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response


@csrf_exempt
def tensorboard_proxy(request: HttpRequest, namespace: str, name: str, path: str = "") -> HttpResponseBase:
    if request.method not in METHODS:
        return HttpResponse(status=405, headers={"Allow": ", ".join(METHODS)})
    conf = conf_from_settings()
    prefix = manifests.path_prefix(conf, namespace, name)
    ticket = request.GET.get(tensorboardpass.TICKET_PARAMETER)
    if ticket is not None and request.method == "GET":
        return redeem(request, namespace, name, prefix, ticket)
    held = request.COOKIES.get(tensorboardpass.COOKIE_NAME)
    if not held:
        return refused("You have no pass for this TensorBoard on this browser.")
    try:
        user = tensorboardpass.holder(
            tensorboardpass.read_pass(held, namespace, name, settings.TENSORBOARD_PASS_SECONDS)
        )
    except tensorboardpass.Refused as error:
        return refused(f"Your pass for this TensorBoard does not let you in: {error.message}")
    if request.method == "POST" and not is_same_origin(request):
        return HttpResponse(
            "A TensorBoard takes POSTs from its own pages only.", status=403, content_type=TEXT
        )
    live = Tensorboard.objects.filter(deleted_at__isnull=True, namespace=namespace, name=name)
    tensorboard = filter_readable(live, scope_for(user)).first()  # the grant as it is now
    if tensorboard is None:
        return not_found()
    try:
        target = proxy.upstream_path(prefix, path)
    except ValueError as error:
        return HttpResponse(str(error), status=400, content_type=TEXT)
    bounds = limits.current()
    try:
        forwarded = proxy.forward(
            cluster_client(),
            request.method,
            namespace,
            manifests.child_name(name),
            manifests.SERVICE_PORT,
            target,
            query_string=request.META.get("QUERY_STRING", ""),
            headers=proxy.request_headers(request.headers),
            body=request.body if request.method == "POST" else None,
            bounds=proxy.Bounds(bounds.tensorboard_proxy_bytes, bounds.tensorboard_proxy_seconds),
        )
    except proxy.Unavailable as error:
        return unavailable(request, tensorboard, error.status, error.message)
    except ApiError as error:  # no cluster configured
        return unavailable(request, tensorboard, 503, str(error))
    response = StreamingHttpResponse(forwarded.body, status=forwarded.status)
    del response["Content-Type"]  # the pod's, if it sent one
    for header, value in forwarded.headers:
        response[header] = value
    return response
