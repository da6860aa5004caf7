"""The REST API root: every app registers its viewsets on this one router.

Pipelines bring their own URLs: two verbs without a trailing slash, as their issue names them.
"""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from access.api.views import NamespaceGrantViewSet
from hyperparam.api.views import SweepViewSet
from jobs.api.views import TrainingJobViewSet
from tensorboard.api.views import TensorboardViewSet
from trainer.api.views import TrainingRuntimeViewSet, TrainJobViewSet

from .token import ObtainTokenView

router = DefaultRouter()
router.register("namespaces", NamespaceGrantViewSet, basename="namespace")
router.register("jobs", TrainingJobViewSet, basename="job")
router.register("hyperparams", SweepViewSet, basename="hyperparam")
router.register("tensorboards", TensorboardViewSet, basename="tensorboard")
router.register("trainjobs", TrainJobViewSet, basename="trainjob")
router.register("trainingruntimes", TrainingRuntimeViewSet, basename="trainingruntime")

urlpatterns = [
    path("token/", ObtainTokenView.as_view(), name="api-token"),
    *router.urls,
    path("", include("pipelines.api.urls")),
]
