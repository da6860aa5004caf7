"""Mounted at /webhooks/ by the webhook listener only (`argoml_site.webhook_urls`): the paths the webhook
configurations point the apiserver at."""

from django.urls import path

from .views import MutateView, ValidateView

urlpatterns = [
    path("validate", ValidateView.as_view(), name="webhooks-validate"),
    path("mutate", MutateView.as_view(), name="webhooks-mutate"),
]
