"""Top-level URLs: `/` (the dashboard), admin, REST API and its docs, health, metrics, admission webhooks."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import views

# The admin's "View site" leads to the dashboard, as does the bare address `make run` prints.
admin.site.site_url = "/dashboard/"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="dashboard:overview"), name="home"),
    path("admin/", admin.site.urls),
    path("api/", include("argoml_site.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", views.metrics, name="metrics"),
    path("webhooks/", include("webhooks.urls")),
    path("dashboard/", include("dashboard.urls")),
]
