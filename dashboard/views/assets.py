"""Front-end libraries served from the Python packages that ship them (django-htmx ships htmx, plotly ships
plotly.js), so the dashboard needs no CDN and no network at run time, and pip pins their versions."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from pathlib import Path

from django.contrib.auth.views import redirect_to_login
from django.http import FileResponse, Http404, HttpRequest, HttpResponseNotModified
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.views.decorators.http import require_GET

# Public name → (package, file inside it). Only these files are ever served.
VENDORED = {
    "htmx.min.js": ("django_htmx", "static/django_htmx/htmx-2.min.js"),
    "plotly.min.js": ("plotly", "package_data/plotly.min.js"),
}
# What the sign-in page itself loads; every other asset is for signed-in users only.
PUBLIC = {"htmx.min.js"}
# Versioned URLs (?v=<digest>) never change content, so browsers may keep them for a year.
CACHE_CONTROL = "public, max-age=31536000, immutable"


@cache
def vendored_path(name: str) -> Path:
    try:
        package, inner = VENDORED[name]
    except KeyError:
        raise Http404(f"No vendored asset {name!r}.") from None
    path = Path(str(resources.files(package).joinpath(inner)))
    if not path.is_file():
        raise Http404(f"{package} does not ship {inner}; reinstall requirements.txt.")
    return path


@cache
def digest(name: str) -> str:
    """A short hash of the file: the cache-busting version in its URL and its ETag."""
    return hashlib.sha256(vendored_path(name).read_bytes()).hexdigest()[:12]


@require_GET
def vendored(request: HttpRequest, name: str) -> HttpResponseBase:
    if name not in PUBLIC and not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), reverse("dashboard:login"))
    etag = f'"{digest(name)}"'
    if request.headers.get("If-None-Match") == etag:
        return HttpResponseNotModified()
    response = FileResponse(vendored_path(name).open("rb"), content_type="text/javascript; charset=utf-8")
    response["ETag"] = etag
    response["Cache-Control"] = CACHE_CONTROL
    return response
