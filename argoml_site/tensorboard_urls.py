"""The TensorBoard origin's URLs (argoml_site/tensorboardorigin.py): each instance under the path it
serves itself at (TensorBoard's --path_prefix), for the bearer of its pass (dashboard/views/
tensorboardproxy.py, docs/tensorboard.md). Nothing else: every other path is a plain-text 404, which
names nothing of the dashboard's."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import path

import dashboard.urls  # noqa: F401 - registers the k8s-namespace and k8s-name path converters
from dashboard.views.tensorboardproxy import tensorboard_proxy

TEXT = "text/plain; charset=utf-8"


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return HttpResponse("Not found: this address serves TensorBoards only.\n", status=404, content_type=TEXT)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return HttpResponse("Bad request.\n", status=400, content_type=TEXT)


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return HttpResponse("Forbidden.\n", status=403, content_type=TEXT)


def server_error(request: HttpRequest) -> HttpResponse:
    return HttpResponse("Server error.\n", status=500, content_type=TEXT)


handler400 = bad_request
handler403 = forbidden
handler404 = not_found
handler500 = server_error

_tensorboards = settings.TENSORBOARD_PATH_PREFIX.strip("/")
urlpatterns = [
    path(
        f"{_tensorboards}/<k8s-namespace:namespace>/<k8s-name:name>/",
        tensorboard_proxy,
        name="tensorboard-proxy-root",
    ),
    path(
        f"{_tensorboards}/<k8s-namespace:namespace>/<k8s-name:name>/<path:path>",
        tensorboard_proxy,
        name="tensorboard-proxy",
    ),
]
