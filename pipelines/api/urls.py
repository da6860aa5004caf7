"""The pipeline verbs, without a trailing slash as the issue names them: /api/pipelines/transpile, /submit."""

from rest_framework.routers import SimpleRouter

from .views import PipelineViewSet

router = SimpleRouter(trailing_slash=False)
router.register("pipelines", PipelineViewSet, basename="pipeline")

urlpatterns = router.urls
