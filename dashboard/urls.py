"""The dashboard's pages, mounted under /dashboard/."""

from collections.abc import Callable

from django.http.response import HttpResponseBase
from django.urls import URLPattern, path, register_converter

from kube.converters import NamespaceConverter, ObjectNameConverter

from .views import assets, auth, gc, jobs, logs, overview, submit, sweeps, tensorboards, trainjobs

app_name = "dashboard"

register_converter(NamespaceConverter, "k8s-namespace")
register_converter(ObjectNameConverter, "k8s-name")

#: A dashboard view (a page, a fragment or a POST).
View = Callable[..., HttpResponseBase]


def kind_routes(
    name: str, list_view: View, page: View | None = None, **views: View
) -> list[URLPattern]:  # fmt: skip
    """A kind's list at `<name>s/` (named `<name>s`), a row's `page` at `<name>s/<pk>/` (named `<name>`),
    and `<name>s/<pk>/<verb>/` for each of `views` by verb, named `<name>-<verb>`: what the page links to
    and posts to (its events, Stop, TensorBoard)."""
    routes = [path(f"{name}s/", list_view, name=f"{name}s")]
    if page is not None:
        routes.append(path(f"{name}s/<int:pk>/", page, name=name))
    routes += [path(f"{name}s/<int:pk>/{verb}/", view, name=f"{name}-{verb}") for verb, view in views.items()]
    return routes


urlpatterns = [
    path("", overview.overview, name="overview"),
    path("login/", auth.login, name="login"),
    path("logout/", auth.logout, name="logout"),
    path("vendor/<str:name>", assets.vendored, name="vendored"),
    *kind_routes("job", jobs.job_list, jobs.job_detail, events=jobs.job_events, stop=jobs.job_stop,
                 resubmit=jobs.job_resubmit, tensorboard=jobs.job_tensorboard),
    path("jobs/<int:pk>/replicas/<int:replica_pk>/logs/", logs.replica_logs, name="replica-logs"),
    path("jobs/by-name/<k8s-namespace:namespace>/<str:kind>/<k8s-name:name>/", jobs.job_by_name,
         name="job-by-name"),
    *kind_routes("trainjob", trainjobs.trainjob_list, trainjobs.trainjob_detail,
                 events=trainjobs.trainjob_events, stop=trainjobs.trainjob_stop,
                 tensorboard=trainjobs.trainjob_tensorboard),
    path("trainjobs/<int:pk>/plots.json", trainjobs.trainjob_plots, name="trainjob-plots"),
    path("trainjobs/<int:pk>/pods/<int:pod_pk>/logs/", trainjobs.trainjob_pod_logs, name="trainjob-pod-logs"),
    *kind_routes("sweep", sweeps.sweep_list, sweeps.sweep_detail, tensorboard=sweeps.sweep_tensorboard,
                 stop=sweeps.sweep_stop),
    path("sweeps/<int:pk>/plots.json", sweeps.sweep_plots, name="sweep-plots"),
    path("sweeps/<int:pk>/trainjobs.json", sweeps.sweep_trainjob_plots, name="sweep-trainjob-plots"),
    path("sweeps/<int:pk>/trials.csv", sweeps.sweep_csv, name="sweep-csv"),
    # After the sweep's verbs, which a tab would shadow.
    path("sweeps/<int:pk>/<str:tab>/", sweeps.sweep_detail, name="sweep-tab"),
    path("sweeps/by-name/<k8s-namespace:namespace>/<k8s-name:name>/", sweeps.sweep_by_name,
         name="sweep-by-name"),
    *kind_routes("tensorboard", tensorboards.tensorboard_list, open=tensorboards.tensorboard_open,
                 stop=tensorboards.tensorboard_stop),
    path("gc/", gc.gc_list, name="gc"),
    path("gc/<int:pk>/", gc.gc_run, name="gc-run"),
    path("submit/", submit.submit, name="submit"),
]  # fmt: skip
