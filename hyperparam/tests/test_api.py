"""/api/hyperparams/: the mirror read back through the namespace scope, trials filtered and ordered by
metric without counting, the CSV export, and create/delete going to the cluster."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from rest_framework.test import APIClient

from access.models import NamespaceGrant, Role
from hyperparam.models import Sweep, Trial
from hyperparam.reconcile import HPW
from hyperparam.tests.conftest import make_hpw, make_spec
from kube.client import get_client
from kube.controller.mirror import apply_event

pytestmark = pytest.mark.django_db


def mirrored_sweep(name: str = "mnist-sweep", namespace: str = "team-a", **status: Any) -> Sweep:
    """A Sweep row as the mirror writes it from a watch event."""
    hpw = make_hpw(name=name, uid=f"uid-{namespace}-{name}")
    hpw["metadata"].update(namespace=namespace, resourceVersion="1", generation=1)
    hpw["status"] = {"phase": "Running", **status}
    apply_event(Sweep, "ADDED", hpw)
    return Sweep.objects.get(uid=hpw["metadata"]["uid"])


def add_trials(sweep: Sweep, metrics: list[float | None]) -> None:
    lrs, sizes = ["0.1", "0.2", "0.3"], ["16", "32", "64", "128"]
    Trial.objects.bulk_create(
        Trial(
            sweep=sweep,
            index=index,
            params={"lr": lrs[index // 4 % 3], "batch-size": sizes[index % 4]},
            phase="Succeeded" if metric is not None else "Running",
            metric=metric,
            workflow=f"{sweep.name}-0",
        )
        for index, metric in enumerate(metrics)
    )


@pytest.fixture
def owner(django_user_model):
    user = django_user_model.objects.create_user("owner")
    NamespaceGrant.objects.create(user=user, namespace="team-a", role=Role.EDITOR)
    return user


@pytest.fixture
def api(owner) -> APIClient:
    client = APIClient()
    client.force_authenticate(owner)
    return client


def test_the_list_shows_only_sweeps_of_granted_namespaces_in_two_queries(api, django_assert_num_queries):
    for index in range(5):
        mirrored_sweep(f"mine-{index}", trials={"Succeeded": 3}, progress="3/12")
    mirrored_sweep("theirs", namespace="team-b")

    with django_assert_num_queries(2):  # the user's grants, then one page
        response = api.get("/api/hyperparams/")

    assert response.status_code == 200
    names = [row["name"] for row in response.json()["results"]]
    assert sorted(names) == [f"mine-{index}" for index in range(5)]
    assert response.json()["results"][0]["trials_finished"] == 3


def test_a_sweep_in_another_namespace_is_not_found(api):
    theirs = mirrored_sweep("theirs", namespace="team-b")
    assert api.get(f"/api/hyperparams/{theirs.pk}/").status_code == 404


def test_a_sweep_shows_its_best_trial_spec_and_history(api):
    best = {"index": 5, "parameters": {"lr": "0.2", "batch-size": "32"}, "metric": 0.15, "workflow": "w-0"}
    sweep = mirrored_sweep(bestTrial=best, workflows=["mnist-sweep-0"])
    body = api.get(f"/api/hyperparams/{sweep.pk}/").json()
    assert body["best_metric"] == 0.15
    assert body["best_parameters"] == {"lr": "0.2", "batch-size": "32"}
    assert body["workflows"] == ["mnist-sweep-0"]
    assert body["spec"]["objective"]["metric"] == "loss"
    assert body["history"][0]["phase"] == "Running"


def test_trials_are_ordered_by_metric_with_missing_metrics_last_and_never_counted(
    api, django_assert_num_queries
):
    sweep = mirrored_sweep()
    add_trials(sweep, [0.5, None, 0.1, 0.9, 0.3])

    with django_assert_num_queries(3):  # grants, the sweep, one page (no COUNT)
        response = api.get(f"/api/hyperparams/{sweep.pk}/trials/?ordering=metric")
    assert [row["index"] for row in response.json()["results"]] == [2, 4, 0, 3, 1]

    descending = api.get(f"/api/hyperparams/{sweep.pk}/trials/?ordering=-metric").json()["results"]
    assert [row["index"] for row in descending] == [3, 0, 4, 2, 1]
    best = api.get(f"/api/hyperparams/{sweep.pk}/trials/?ordering=best").json()["results"]
    assert best[0]["index"] == 2  # the sweep minimizes


def test_trials_filter_by_phase_metric_range_and_parameter(api):
    sweep = mirrored_sweep()
    add_trials(sweep, [0.5, None, 0.1, 0.9, 0.3])
    url = f"/api/hyperparams/{sweep.pk}/trials/"

    assert [r["index"] for r in api.get(url, {"phase": "Running"}).json()["results"]] == [1]
    assert [r["index"] for r in api.get(url, {"metric_min": 0.2, "metric_max": 0.6}).json()["results"]] == [
        0,
        4,
    ]
    assert [r["index"] for r in api.get(url, {"param.batch-size": "16"}).json()["results"]] == [0, 4]
    bad = api.get(url, {"param.momentum": "1"})
    assert bad.status_code == 400
    assert "param.momentum" in bad.json()
    assert api.get(url, {"phase": "Sleeping"}).status_code == 400


def test_trial_pages_link_to_the_next_one_without_a_count(api):
    sweep = mirrored_sweep()
    add_trials(sweep, [0.1 * index for index in range(12)])
    first = api.get(f"/api/hyperparams/{sweep.pk}/trials/", {"limit": 5}).json()
    assert [row["index"] for row in first["results"]] == [0, 1, 2, 3, 4]
    assert "count" not in first
    second = api.get(first["next"]).json()
    assert [row["index"] for row in second["results"]] == [5, 6, 7, 8, 9]
    last = api.get(second["next"]).json()
    assert [row["index"] for row in last["results"]] == [10, 11]
    assert last["next"] is None


def test_the_csv_export_streams_one_column_per_hyperparameter(api):
    sweep = mirrored_sweep()
    add_trials(sweep, [0.5, None, 0.1])
    response = api.get(f"/api/hyperparams/{sweep.pk}/trials/csv/", {"ordering": "best"})

    assert response.status_code == 200
    assert response.streaming
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0] == ["index", "phase", "loss", "started_at", "finished_at", "workflow", "message", "lr",
                       "batch-size"]  # fmt: skip
    assert [row[0] for row in rows[1:]] == ["2", "0", "1"]
    assert rows[1][2] == "0.1"
    assert rows[1][-2:] == ["0.1", "64"]


def test_the_csv_export_quotes_cells_a_spreadsheet_would_run_as_formulas(api):
    sweep = mirrored_sweep()
    Trial.objects.create(
        sweep=sweep,
        index=0,
        params={"lr": '=HYPERLINK("http://evil.example")', "batch-size": "-2+3"},
        phase="Failed",
        metric=-0.5,
        message="@SUM(1+1)",
        workflow=f"{sweep.name}-0",
    )
    response = api.get(f"/api/hyperparams/{sweep.pk}/trials/csv/")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[1][2] == "-0.5"
    assert rows[1][6] == "'@SUM(1+1)"
    assert rows[1][-2:] == ['\'=HYPERLINK("http://evil.example")', "'-2+3"]


def test_an_invalid_sweep_is_refused_with_field_paths(api, cluster):
    spec = make_spec()
    spec["hyperparams"][0]["range"]["max"] = 0.05
    spec["hyperparams"][1]["name"] = "momentum"
    response = api.post("/api/hyperparams/", make_hpw(spec, uid=""), format="json")
    assert response.status_code == 400
    errors = response.json()
    assert "spec.hyperparams[0].range.max" in errors
    assert "spec.hyperparams[1].name" in errors
    assert get_client().list(HPW, "team-a")["items"] == []


def test_a_valid_sweep_is_created_in_the_cluster_not_in_the_table(api, cluster):
    response = api.post("/api/hyperparams/", make_hpw(uid=""), format="json")
    assert response.status_code == 202
    assert response.json()["metadata"]["uid"]
    assert get_client().get(HPW, "mnist-sweep", "team-a")["spec"]["objective"]["metric"] == "loss"
    assert not Sweep.objects.exists()


def test_a_plain_grid_without_an_objective_is_created_and_listed_without_a_metric(api, cluster):
    spec = make_spec(algorithm="grid")
    del spec["objective"]
    response = api.post("/api/hyperparams/", make_hpw(spec, uid=""), format="json")
    assert response.status_code == 202, response.json()
    created = get_client().get(HPW, "mnist-sweep", "team-a")
    assert created["spec"]["algorithm"] == "grid"
    apply_event(Sweep, "ADDED", created)
    (listed,) = api.get("/api/hyperparams/").json()["results"]
    assert (listed["algorithm"], listed["metric_name"], listed["goal"], listed["best_metric"]) == (
        "grid",
        "",
        "",
        None,
    )


def test_an_adaptive_sweep_without_an_objective_is_refused_at_its_field(api, cluster):
    spec = make_spec(algorithm="tpe", maxTrials=10)
    del spec["objective"]
    response = api.post("/api/hyperparams/", make_hpw(spec, uid=""), format="json")
    assert response.status_code == 400
    assert response.json()["spec.objective"][0].startswith("required for tpe search")


def test_creating_in_an_ungranted_namespace_is_forbidden(api, cluster):
    manifest = make_hpw(uid="")
    manifest["metadata"]["namespace"] = "team-b"
    assert api.post("/api/hyperparams/", manifest, format="json").status_code == 403


def test_deleting_a_sweep_deletes_it_in_the_cluster(api, cluster):
    created = get_client().create(HPW, make_hpw(uid=""))
    apply_event(Sweep, "ADDED", created)
    sweep = Sweep.objects.get()
    assert api.delete(f"/api/hyperparams/{sweep.pk}/").status_code == 202
    assert get_client().list(HPW, "team-a")["items"] == []
    assert Sweep.objects.filter(deleted_at__isnull=True).count() == 1  # the mirror marks it, not the view


def test_a_sweep_whose_workflow_runs_privileged_pods_is_refused_naming_the_fields(api, cluster):
    spec = make_spec()
    train = spec["workflow"]["templates"][0]
    train["container"]["securityContext"] = {"privileged": True}
    train["podSpecPatch"] = '{"hostNetwork": true}'
    spec["workflow"]["serviceAccountName"] = "cluster-admin"

    response = api.post("/api/hyperparams/", make_hpw(spec, uid=""), format="json")

    assert response.status_code == 400
    assert response.json() == {
        "spec.workflow.serviceAccountName": [
            'service account "cluster-admin" is not allowed in namespace "team-a" (allowed: default)'
        ],
        "spec.workflow.templates[0].container.securityContext.privileged": [
            'privileged (container "main" must not set securityContext.privileged=true)'
        ],
        "spec.workflow.templates[0].podSpecPatch": [
            "podSpecPatch (a patch can set any pod field: only the privileged level allows one)"
        ],
    }
    assert get_client().list(HPW, "team-a")["items"] == []
