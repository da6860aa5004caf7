"""The web server's URLs: `/` (the dashboard), admin, REST API and its docs, health and metrics, dashboard.

The admission webhooks are not here: they have their own listener (`argoml_site.webhook_urls`). Nor is the
TensorBoard proxy: it is served on an origin of its own (`argoml_site.tensorboard_urls`).
"""

from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.urls import include, path, reverse_lazy
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from web import signin

from . import views

# The admin's sign-in counts failures and locks, as the dashboard's does.
admin.site.login_form = signin.LockoutAdminAuthenticationForm

# The admin's "View site" leads to the dashboard, as does the bare address `make run` prints.
admin.site.site_url = "/dashboard/"

handler404 = "argoml_site.views.not_found"
handler400 = "argoml_site.views.bad_request"
handler500 = "argoml_site.views.server_error"

urlpatterns = [
    path(
        "",
        # Straight to the sign-in page for an anonymous visitor, who then lands on the dashboard.
        login_required(
            RedirectView.as_view(pattern_name="dashboard:overview"), login_url=reverse_lazy("dashboard:login")
        ),
        name="home",
    ),
    path("admin/", admin.site.urls),
    path("api/", include("argoml_site.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path(
        "api/docs/",
        # A page, so an anonymous visitor is sent to sign in (the schema it loads answers 401 anyway). The
        # split view serves Swagger UI's initialiser as a script file: no inline script for the CSP.
        login_required(
            SpectacularSwaggerSplitView.as_view(url_name="schema"), login_url=reverse_lazy("dashboard:login")
        ),
        name="swagger-ui",
    ),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", views.metrics, name="metrics"),
    path("dashboard/", include("dashboard.urls")),
]
