"""`manage.py render_hyperparam`: the Workflows the controller would create, as YAML, linted."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from hyperparam.tests.conftest import make_hpw, make_spec

REPO = Path(__file__).resolve().parents[2]


def render(tmp_path, hpw, *args: str) -> list[dict]:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(hpw))
    out, err = io.StringIO(), io.StringIO()
    call_command("render_hyperparam", str(path), *args, stdout=out, stderr=err)
    return [document for document in yaml.safe_load_all(out.getvalue()) if document]


def test_a_grid_renders_one_workflow_with_every_combination(tmp_path):
    (workflow,) = render(tmp_path, make_hpw(uid=""))
    assert workflow["kind"] == "Workflow"
    assert workflow["metadata"]["name"] == "mnist-sweep-0"
    items = workflow["spec"]["templates"][-1]["steps"][0][0]["withItems"]
    assert len(items) == 12
    assert items[0] == {"argoml-trial": "0", "lr": "0.1", "batch-size": "16"}
    assert items[-1] == {"argoml-trial": "11", "lr": "0.3", "batch-size": "128"}


def test_a_large_grid_renders_in_batches_and_one_batch_alone(tmp_path):
    hyperparams = [{"name": "lr", "range": {"min": 1, "max": 1500}}, {"name": "batch-size", "values": [1, 2]}]
    spec = make_spec(hyperparams=hyperparams)
    workflows = render(tmp_path, make_hpw(spec, uid=""))
    assert len(workflows) > 1
    assert [wf["metadata"]["name"] for wf in workflows] == [f"mnist-sweep-{i}" for i in range(len(workflows))]
    items = [item for wf in workflows for item in wf["spec"]["templates"][-1]["steps"][0][0]["withItems"]]
    assert [int(item["argoml-trial"]) for item in items] == list(range(3000))
    (second,) = render(tmp_path, make_hpw(spec, uid=""), "--batch", "1")
    assert second == workflows[1]


def test_an_adaptive_sweep_renders_its_first_round_reproducibly(tmp_path):
    spec = make_spec(
        hyperparams=[{"name": "lr", "loguniform": {"min": 1e-4, "max": 1e-1}}, {"name": "batch-size",
                     "int": {"min": 8, "max": 256}}],
        algorithm={"name": "tpe", "seed": 11}, maxTrials=20, parallelism=5,
    )  # fmt: skip
    (first,) = render(tmp_path, make_hpw(spec, uid=""))
    assert len(first["spec"]["templates"][-1]["steps"][0][0]["withItems"]) == 5
    assert render(tmp_path, make_hpw(spec, uid="")) == [first]
    with pytest.raises(CommandError, match="depends on earlier results"):
        render(tmp_path, make_hpw(spec, uid=""), "--batch", "1")


def test_an_invalid_sweep_names_its_fields(tmp_path):
    spec = make_spec()
    spec["hyperparams"][0]["range"]["step"] = 0
    with pytest.raises(CommandError, match=r"spec\.hyperparams\[0\]\.range\.step"):
        render(tmp_path, make_hpw(spec, uid=""))


def test_a_batch_outside_the_sweep_is_refused(tmp_path):
    with pytest.raises(CommandError, match="batches 0 to 0"):
        render(tmp_path, make_hpw(uid=""), "--batch", "3")


@pytest.mark.parametrize(("algorithm", "trials"), [("grid", 12), ("random", 5)])
def test_a_sweep_without_an_objective_and_with_the_algorithm_shorthand_renders(tmp_path, algorithm, trials):
    spec = make_spec(algorithm=algorithm, maxTrials=5 if algorithm == "random" else None)
    del spec["objective"]
    (workflow,) = render(tmp_path, make_hpw(spec, uid=""))
    assert len(workflow["spec"]["templates"][-1]["steps"][0][0]["withItems"]) == trials


def test_an_adaptive_sweep_without_an_objective_is_refused_saying_why(tmp_path):
    spec = make_spec(algorithm="tpe", maxTrials=10)
    del spec["objective"]
    with pytest.raises(CommandError, match=r"spec\.objective: required for tpe search"):
        render(tmp_path, make_hpw(spec, uid=""))


def test_a_grid_renders_without_loading_optuna_the_api_or_hera(tmp_path):
    """Start-up is most of a small render: no system checks (they import every URLconf), no Optuna for a
    sweep that is not adaptive, no hera (the lint's schema is read from its committed file)."""
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(make_hpw(uid="")))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "argoml_site.settings"}
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "manage.py", "render_hyperparam", str(path)],
        cwd=REPO, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "name: mnist-sweep-0" in result.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    assert "django.urls" in imported  # the import times were read
    assert imported & {"optuna", "scipy", "hera", "hyperparam.api.views"} == set()


def test_a_name_that_is_not_a_string_is_refused_in_one_line(tmp_path):
    hpw = make_hpw(uid="")
    hpw["metadata"]["name"] = {"a": "b"}
    with pytest.raises(CommandError, match=r"metadata\.name is required, a string"):
        render(tmp_path, hpw)
