"""The authorizing TensorBoard proxy: `<TENSORBOARD_PATH_PREFIX>/<namespace>/<name>/<path>` on the
dashboard's own origin serves that instance's TensorBoard to a user who may read it, through the Kubernetes
API server's service proxy (tensorboard/proxy.py). The dev stack points TENSORBOARD_BASE_URL here, so the
Open button lands on it; TensorBoard serves under the same path (`--path_prefix`), so its relative URLs
and its `data/…` requests come back here too.

Who may read: the same grant as the API's open action and the TensorBoards page (a viewer of the
namespace), on an instance the mirror knows and that is not being deleted; anyone else gets the dashboard's
404, whether the instance exists or not. A signed-out visitor is sent to sign in and back.

CSRF: TensorBoard posts its data queries without Django's token, so the view is exempt from Django's
check and makes its own: a POST must come from our origin (`Origin`, or `Sec-Fetch-Site: same-origin`).
TensorBoard changes nothing on a POST; the check keeps another site from using a signed-in browser to
query it all the same. Only GET, HEAD and POST are passed on (TensorBoard uses nothing else).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt

import limits
from dashboard.access import get_readable
from dashboard.cluster import cluster_client
from kube.errors import ApiError
from tensorboard import manifests, proxy
from tensorboard.conf import conf_from_settings
from tensorboard.models import Tensorboard

from .common import page

METHODS = ("GET", "HEAD", "POST")
#: How soon the "not reachable" page asks the browser to try again (an instance still starting).
RETRY_SECONDS = 5


def is_same_origin(request: HttpRequest) -> bool:
    """The request came from a page of our own origin: its Origin header names it, or (a browser that sent
    none) Fetch Metadata says so."""
    origin = request.headers.get("Origin")
    if origin:
        return origin == f"{request.scheme}://{request.get_host()}"
    return request.headers.get("Sec-Fetch-Site") == "same-origin"


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


@csrf_exempt
@page
def tensorboard_proxy(request: HttpRequest, namespace: str, name: str, path: str = "") -> HttpResponseBase:
    if request.method not in METHODS:
        return HttpResponse(status=405, headers={"Allow": ", ".join(METHODS)})
    if request.method == "POST" and not is_same_origin(request):
        return HttpResponse("A TensorBoard takes POSTs from its own pages only.", status=403)
    tensorboard = get_readable(
        request, Tensorboard.objects.filter(deleted_at__isnull=True), namespace=namespace, name=name
    )
    conf = conf_from_settings()
    try:
        target = proxy.upstream_path(manifests.path_prefix(conf, namespace, name), path)
    except ValueError as error:
        return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
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
