"""The dashboard's pages, mounted under /dashboard/."""

from django.urls import path, register_converter

from kube.converters import NamespaceConverter, ObjectNameConverter

from .views import assets, auth, gc, jobs, logs, overview, submit, sweeps, tensorboards, trainjobs

app_name = "dashboard"

register_converter(NamespaceConverter, "k8s-namespace")
register_converter(ObjectNameConverter, "k8s-name")

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("login/", auth.login, name="login"),
    path("logout/", auth.logout, name="logout"),
    path("vendor/<str:name>", assets.vendored, name="vendored"),
    path("jobs/", jobs.job_list, name="jobs"),
    path("jobs/<int:pk>/", jobs.job_detail, name="job"),
    path("jobs/<int:pk>/events/", jobs.job_events, name="job-events"),
    path("jobs/<int:pk>/stop/", jobs.job_stop, name="job-stop"),
    path("jobs/<int:pk>/resubmit/", jobs.job_resubmit, name="job-resubmit"),
    path("jobs/<int:pk>/tensorboard/", jobs.job_tensorboard, name="job-tensorboard"),
    path("jobs/<int:pk>/replicas/<int:replica_pk>/logs/", logs.replica_logs, name="replica-logs"),
    path(
        "jobs/by-name/<k8s-namespace:namespace>/<str:kind>/<k8s-name:name>/",
        jobs.job_by_name,
        name="job-by-name",
    ),
    path("trainjobs/", trainjobs.trainjob_list, name="trainjobs"),
    path("trainjobs/<int:pk>/", trainjobs.trainjob_detail, name="trainjob"),
    path("trainjobs/<int:pk>/plots.json", trainjobs.trainjob_plots, name="trainjob-plots"),
    path("trainjobs/<int:pk>/events/", trainjobs.trainjob_events, name="trainjob-events"),
    path("trainjobs/<int:pk>/stop/", trainjobs.trainjob_stop, name="trainjob-stop"),
    path("trainjobs/<int:pk>/tensorboard/", trainjobs.trainjob_tensorboard, name="trainjob-tensorboard"),
    path("trainjobs/<int:pk>/pods/<int:pod_pk>/logs/", trainjobs.trainjob_pod_logs, name="trainjob-pod-logs"),
    path("sweeps/", sweeps.sweep_list, name="sweeps"),
    path("sweeps/<int:pk>/", sweeps.sweep_detail, name="sweep"),
    path("sweeps/<int:pk>/plots.json", sweeps.sweep_plots, name="sweep-plots"),
    path("sweeps/<int:pk>/trainjobs.json", sweeps.sweep_trainjob_plots, name="sweep-trainjob-plots"),
    path("sweeps/<int:pk>/trials.csv", sweeps.sweep_csv, name="sweep-csv"),
    path("sweeps/<int:pk>/tensorboard/", sweeps.sweep_tensorboard, name="sweep-tensorboard"),
    path("sweeps/<int:pk>/stop/", sweeps.sweep_stop, name="sweep-stop"),
    path("sweeps/<int:pk>/<str:tab>/", sweeps.sweep_detail, name="sweep-tab"),
    path(
        "sweeps/by-name/<k8s-namespace:namespace>/<k8s-name:name>/",
        sweeps.sweep_by_name,
        name="sweep-by-name",
    ),
    path("tensorboards/", tensorboards.tensorboard_list, name="tensorboards"),
    path("tensorboards/<int:pk>/open/", tensorboards.tensorboard_open, name="tensorboard-open"),
    path("tensorboards/<int:pk>/stop/", tensorboards.tensorboard_stop, name="tensorboard-stop"),
    path("gc/", gc.gc_list, name="gc"),
    path("gc/<int:pk>/", gc.gc_run, name="gc-run"),
    path("submit/", submit.submit, name="submit"),
]
