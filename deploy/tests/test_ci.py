"""The CI workflow that runs the real-cluster suite cannot run here; check what can be checked offline."""

from __future__ import annotations

import re

import yaml

from .manifests import DEPLOY, REPO, documents, schema_errors

WORKFLOW = REPO / ".github" / "workflows" / "cluster-e2e.yaml"


def workflow_script() -> str:
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["e2e"]["steps"]
    return "\n".join(step.get("run", "") for step in steps)


def test_the_workflow_builds_the_image_installs_the_chart_and_runs_the_cluster_suite():
    script = workflow_script()
    assert "docker build -f deploy/Dockerfile -t argoml:ci ." in script
    assert "kind load docker-image argoml:ci" in script
    assert re.search(
        r"helm install \"\$RELEASE\" deploy/helm/argoml .*-f deploy/helm/argoml/ci/kind-values.yaml",
        script,
        re.S,
    )
    assert script.count("pytest -m cluster deploy/tests") == 2, "after the install and after the upgrade"
    assert "kubectl apply --server-side --force-conflicts -f deploy/helm/argoml/crds/" in script


def test_every_file_the_workflow_uses_exists():
    for path in re.findall(r"(deploy/[\w./-]+)", workflow_script()):
        assert (REPO / path.rstrip("/")).exists(), path


def test_the_kind_values_match_the_image_the_workflow_loads():
    values = yaml.safe_load((DEPLOY / "helm" / "argoml" / "ci" / "kind-values.yaml").read_text())
    assert (values["image"]["repository"], values["image"]["tag"]) == ("argoml", "ci")
    assert values["image"]["pullPolicy"] == "Never"


def test_the_throwaway_postgres_and_redis_are_valid_manifests():
    assert not schema_errors(documents((DEPLOY / "tests" / "cluster-dependencies.yaml").read_text()))


def test_a_job_of_the_workflow_removes_one_rbac_rule_at_a_time():
    job = yaml.safe_load(WORKFLOW.read_text())["jobs"]["rbac-necessity"]
    script = "\n".join(step.get("run", "") for step in job["steps"])
    assert ".venv/bin/python deploy/rbac_necessity.py" in script
    assert (REPO / "deploy" / "rbac_necessity.py").exists()
    assert {"postgres", "redis"} <= set(job["services"])
