"""Top-level URLs: admin, REST API and its docs, health and metrics, admission webhooks."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import views

handler404 = "argoml_site.views.not_found"

urlpatterns = [
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
