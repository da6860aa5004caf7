"""The REST API root: every app registers its viewsets on this one router."""

from rest_framework.routers import DefaultRouter

from access.api.views import NamespaceGrantViewSet

router = DefaultRouter()
router.register("namespaces", NamespaceGrantViewSet, basename="namespace")

urlpatterns = router.urls
