"""Health and metrics endpoints, and the answers to requests no view took (404, the 400 of a bound, and
the 503 of an unreachable database)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

import redis
from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.db import InterfaceError, OperationalError, connection
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.utils.html import escape
from django.views import defaults
from django.views.decorators.http import require_GET
from prometheus_client.exposition import choose_encoder

from kube.health import cluster_configured, cluster_reachable

from .metrics import bearer_matches, exposition_registry

logger = logging.getLogger(__name__)

READINESS_TIMEOUT_SECONDS = 2.0
API_PREFIX = "/api/"


def _database_ready() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _redis_ready() -> None:
    client = redis.Redis.from_url(
        settings.REDIS_URL,
        socket_connect_timeout=READINESS_TIMEOUT_SECONDS,
        socket_timeout=READINESS_TIMEOUT_SECONDS,
    )
    try:
        client.ping()
    finally:
        client.close()


def _cluster_ready() -> None:
    cluster_reachable(timeout=READINESS_TIMEOUT_SECONDS)


def api_not_found() -> JsonResponse:
    """The API's 404, in DRF's words."""
    return JsonResponse({"detail": "Not found."}, status=404)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404 for a path no pattern matches: JSON under /api/ (as every API answer is), the page elsewhere.
    With DEBUG on Django skips this handler; `argoml_site.apinotfound` keeps the API's answer JSON then."""
    if request.path.startswith(API_PREFIX):
        return api_not_found()
    return defaults.page_not_found(request, exception)


#: Django's refusals of a request too large to read, whose words say which bound and nothing else: the
#: caller is told which one, as every other refusal of ours names its field or bound.
_BOUND_REFUSALS = (TooManyFieldsSent, TooManyFilesSent, RequestDataTooBig)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """400 for a request Django refused before any view (too many query or form parameters, too large a
    form): the bound's words, as JSON under /api/ and as a short page elsewhere; any other suspicious
    request gets Django's page, which says nothing of why."""
    if not isinstance(exception, _BOUND_REFUSALS):
        return defaults.bad_request(request, exception)
    message = f"The request was refused: {exception}"
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": message}, status=400)
    return HttpResponseBadRequest(f"<!doctype html><title>Bad Request</title><p>{escape(message)}</p>")


#: Said when the database cannot be reached: the page or API call needs it, and it will pass.
DATABASE_UNAVAILABLE = (
    "The database is unavailable at the moment, so this cannot be shown or done now. "
    "Nothing was changed; try again in a minute."
)
DATABASE_RETRY_AFTER_SECONDS = 30


def server_error(request: HttpRequest) -> HttpResponse:
    """500 for an unhandled exception, except the database being unreachable (refused, dropped,
    restarting), which is no bug of ours and passes: 503 with Retry-After and a sentence saying so, as JSON
    under /api/ and a short page elsewhere. Called by Django while the exception is being handled, from the
    view or from any middleware (a session saved as the answer goes out), so sys.exc_info() names it."""
    error = sys.exc_info()[1]
    if not isinstance(error, OperationalError | InterfaceError):
        return defaults.server_error(request)
    logger.warning("The database is unreachable: %s answered 503 (%s)", request.path, error)
    response: HttpResponse
    if request.path.startswith(API_PREFIX):
        response = JsonResponse({"detail": DATABASE_UNAVAILABLE}, status=503)
    else:
        response = HttpResponse(
            f"<!doctype html><title>Service Unavailable</title><p>{escape(DATABASE_UNAVAILABLE)}</p>",
            status=503,
        )
    response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
    return response


@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness: the process answers. It checks nothing else, so a database outage restarts no pod."""
    return JsonResponse({"status": "ok"})


#: Checked and reported, but not a reason to take the pod out of its Service: the web serves its pages
#: without Redis (a few counts are lost) or the cluster (its actions answer 503 saying so), the webhook
#: listener answers admission reviews without Redis (docs/install.md, "When a dependency is away"); and a
#: probe failing on a dependency every replica shares takes every replica out at once, leaving the Ingress
#: and the API server nobody to ask.
DEGRADED_ONLY = frozenset({"redis", "cluster"})


@require_GET
def readyz(request: HttpRequest) -> HttpResponse:
    """Readiness: 200 when every dependency answers; 503 naming the ones that failed, unless only Redis or
    the cluster did (then 200, status `degraded`, naming them). Anyone may call it (the kubelet has no
    credentials), so the errors, which name hosts and users, go to the log."""
    checks: dict[str, Callable[[], None]] = {"database": _database_ready, "redis": _redis_ready}
    if cluster_configured():
        checks["cluster"] = _cluster_ready
    results: dict[str, str] = {}
    for name, check in checks.items():
        try:
            check()
            results[name] = "ok"
        except Exception:  # readiness reports any failure instead of raising it
            logger.warning("Readiness check %s failed", name, exc_info=True)
            results[name] = "failed"
    failed = sorted(name for name, result in results.items() if result != "ok")
    unready = [name for name in failed if name not in DEGRADED_ONLY]
    status = "unavailable" if unready else "degraded" if failed else "ok"
    body = {"status": status, "failed": failed, "checks": results}
    return JsonResponse(body, status=503 if unready else 200)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus exposition, in the format the scraper asks for (classic text or OpenMetrics). For
    Prometheus with the METRICS_TOKEN bearer token, or a staff session: labels name namespaces and tasks."""
    token_ok = bearer_matches(request.headers.get("Authorization", ""), settings.METRICS_TOKEN)
    if not token_ok and not (request.user.is_authenticated and request.user.is_staff):
        response = HttpResponse("Metrics need the METRICS_TOKEN bearer token.\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        response["Content-Type"] = "text/plain"
        return response
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encoder(exposition_registry()), content_type=content_type)
