"""The REST API root: every app registers its viewsets on this one router.

Pipelines bring their own URLs: two verbs without a trailing slash, as their issue names them.
"""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from access.api.views import NamespaceGrantViewSet
from jobs.api.views import TrainingJobViewSet

router = DefaultRouter()
router.register("namespaces", NamespaceGrantViewSet, basename="namespace")
router.register("jobs", TrainingJobViewSet, basename="job")

urlpatterns = [
    *router.urls,
    path("", include("pipelines.api.urls")),
]
